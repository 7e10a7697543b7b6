// Test double for AWS Systems Manager's GetParameters, the call that resolves a public AMI parameter
// (/aws/service/deeplearning/ami/...): AWS JSON 1.1 protocol (POST /, X-Amz-Target: AmazonSSM.<Action>,
// application/x-amz-json-1.1), read by the real @aws-sdk/client-ssm. Served on the EC2 emulator's endpoint,
// as moto serves every service on one. Shapes and limits from the SSM API reference: at most 10 names per
// call (ValidationException otherwise), unknown names listed in InvalidParameters (not an error), errors as
// {"__type": code, "message": …} with HTTP 400.
import type { ServerResponse } from 'node:http';
import { send } from './server';

export class SsmParameters {
  /** Public parameters by name: value is the AMI id. */
  readonly values = new Map<string, string>();
  /** The caller's IAM policy lacks ssm:GetParameters: every call is refused as AWS refuses it. */
  denied = false;
  readonly calls: string[][] = [];

  constructor(private readonly region: string) {}

  private error(res: ServerResponse, type: string, message: string): void {
    send(res, 400, 'application/x-amz-json-1.1', JSON.stringify({ __type: type, message }));
  }

  /** Handles one AmazonSSM.* request; the action is the X-Amz-Target suffix. */
  handle(action: string, body: string, res: ServerResponse): void {
    if (this.denied) {
      return this.error(
        res,
        'AccessDeniedException',
        `User: arn:aws:iam::123456789012:user/trainer is not authorized to perform: ssm:${action} on resource: arn:aws:ssm:${this.region}::parameter/aws/service/deeplearning because no identity-based policy allows the ssm:${action} action`,
      );
    }
    if (action !== 'GetParameters') return this.error(res, 'InvalidAction', `Unknown operation ${action}`);
    const input = JSON.parse(body || '{}') as { Names?: string[] };
    const names = input.Names ?? [];
    this.calls.push(names);
    if (names.length === 0 || names.length > 10) {
      return this.error(
        res,
        'ValidationException',
        `1 validation error detected: Value '[${names.join(', ')}]' at 'names' failed to satisfy constraint: Member must have length ${names.length === 0 ? 'greater than or equal to 1' : 'less than or equal to 10'}`,
      );
    }
    const found = names.filter((n) => this.values.has(n));
    send(
      res,
      200,
      'application/x-amz-json-1.1',
      JSON.stringify({
        Parameters: found.map((n) => ({
          Name: n,
          Type: 'String',
          Value: this.values.get(n),
          Version: 42,
          LastModifiedDate: Date.now() / 1000,
          ARN: `arn:aws:ssm:${this.region}::parameter${n}`,
          DataType: 'text',
        })),
        InvalidParameters: names.filter((n) => !this.values.has(n)),
      }),
    );
  }
}
