// moto's EC2 for one test file: started before its tests with test credentials (no profile of the machine's),
// stopped after; the AWS SDK's own client on it, and the EC2 provider as the moto tests configure it (a fixed
// caller address, the DLAMI name pattern, a short consistency window).
import { before, after } from 'node:test';
import { EC2Client } from '@aws-sdk/client-ec2';
import { Ec2Provider } from '../../src/core/providers/ec2/instances';
import { startMoto } from './moto';
import type { Moto } from './moto';

export interface MotoEc2 {
  readonly moto: () => Moto;
  readonly sdk: () => EC2Client;
  readonly provider: () => Ec2Provider;
}

export function motoEc2(onStart?: (moto: Moto) => void): MotoEc2 {
  let moto: Moto | undefined;
  let sdk: EC2Client | undefined;
  before(async () => {
    process.env.AWS_ACCESS_KEY_ID = 'testing';
    process.env.AWS_SECRET_ACCESS_KEY = 'testing';
    delete process.env.AWS_PROFILE;
    moto = await startMoto();
    sdk = new EC2Client({ region: 'us-east-1', endpoint: moto.url });
    onStart?.(moto);
  });
  after(async () => {
    await moto?.stop();
  });
  return {
    moto: () => moto!,
    sdk: () => sdk!,
    provider: () =>
      new Ec2Provider({
        region: 'us-east-1',
        endpoint: moto!.url,
        maxAttempts: 2,
        requestTimeoutMs: 10_000,
        callerIp: async () => '203.0.113.9',
        amiNamePattern: 'Deep Learning AMI*',
        consistency: { baseMs: 10, maxMs: 50, windowMs: 1000 },
      }),
  };
}
