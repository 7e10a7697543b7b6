// The EC2 API as the provider uses it: the real @aws-sdk/client-ec2, loaded on first use (dynamic import keeps
// activation small), its errors turned into ProviderErrors, and EC2's eventual consistency waited out.
import type * as Ec2Sdk from '@aws-sdk/client-ec2';
import type { EC2Client } from '@aws-sdk/client-ec2';
import type { GetParametersCommand, SSMClient } from '@aws-sdk/client-ssm';
import { requireCloudName } from '../cloudNames';
import { sleep } from '../abort';
import { ProviderError } from '../provider';
import type { InstanceState, ProviderErrorCode } from '../provider';
import type { Ec2PricingOptions } from './pricing';
import { awsCode } from './cluster';

export type Sdk = typeof Ec2Sdk;

export interface Ec2Options {
  readonly region: string;
  /** Endpoint override (tests point it at the EC2 emulator). */
  readonly endpoint?: string;
  readonly maxAttempts?: number;
  readonly requestTimeoutMs?: number;
  /** Returns the caller's public IPv4 address for the SSH ingress rule. */
  readonly callerIp?: (signal?: AbortSignal) => Promise<string>;
  /** DescribeImages fallback when no DLAMI SSM parameter answers. */
  readonly amiNamePattern?: string;
  /** Public SSM parameters naming the DLAMI, most wanted first (default: the PyTorch DLAMIs, ec2/dlami.ts). */
  readonly amiParameters?: readonly string[];
  readonly rootVolumeGiB?: number;
  readonly sshUser?: string;
  /** SSH port of the instances; 22 on EC2. Tests point it at a loopback sshd. */
  readonly sshPort?: number;
  /**
   * Waiting out EC2's eventual consistency: a resource just created may be "NotFound" for a while.
   * AWS: retry with exponential backoff "starting with a couple of seconds of wait time, and increasing
   * gradually up to a few minutes" (docs.aws.amazon.com/ec2/latest/devguide/eventual-consistency.html).
   */
  readonly consistency?: { readonly baseMs?: number; readonly maxMs?: number; readonly windowMs?: number };
  /**
   * On-demand prices from the AWS Price List API for this region (ec2/pricing.ts). Default: asked, unless an
   * endpoint override points the client elsewhere (an emulator has no price list); false: the catalog only.
   */
  readonly pricing?: Ec2PricingOptions | false;
}

const CAPACITY_CODES = new Set([
  'InsufficientInstanceCapacity',
  'InsufficientCapacity',
  'InsufficientHostCapacity',
  'SpotMaxPriceTooLow',
  'InsufficientCapacityOnHost',
  'Unsupported',
]);
// MaxSpotInstanceCountExceeded is the account's spot limit (a service quota raised on request), not a lack
// of capacity that waiting or another zone would cure: retrying elsewhere only repeats the refusal.
const QUOTA_CODES = new Set(['InstanceLimitExceeded', 'VcpuLimitExceeded', 'InsufficientReservedInstanceCapacity', 'MaxSpotInstanceCountExceeded']);
const AUTH_CODES = new Set([
  'AuthFailure',
  'UnauthorizedOperation',
  'CredentialsProviderError',
  'InvalidClientTokenId',
  'SignatureDoesNotMatch',
  'ExpiredToken',
  'OptInRequired',
]);

function mapSdkError(err: unknown): ProviderError {
  if (err instanceof ProviderError) return err;
  const e = err as { name?: string; message?: string; $fault?: string };
  const name = e.name ?? 'Error';
  const message = `${name}: ${e.message ?? String(err)}`;
  let code: ProviderErrorCode = e.$fault === 'server' ? 'server' : 'invalid';
  if (CAPACITY_CODES.has(name)) code = 'capacity';
  else if (QUOTA_CODES.has(name)) code = 'quota';
  else if (AUTH_CODES.has(name)) code = 'auth';
  else if (name === 'RequestLimitExceeded' || name === 'Throttling') code = 'rate-limited';
  else if (name.endsWith('.NotFound')) code = 'not-found';
  else if (name === 'AbortError') code = 'aborted';
  else if (name === 'TimeoutError' || /timed? ?out/i.test(message)) code = 'timeout';
  else if (/ECONNREFUSED|ECONNRESET|socket hang up|EPIPE/.test(message)) code = 'unreachable';
  return new ProviderError(code, message, 'ec2');
}

/** EC2's instance states in the Provider's words. */
export const EC2_STATES: Readonly<Record<string, InstanceState>> = {
  pending: 'pending',
  running: 'running',
  'shutting-down': 'terminating',
  terminated: 'terminated',
  stopping: 'stopping',
  stopped: 'stopped',
};

export class Ec2Api {
  private sdk?: Sdk;
  private client?: EC2Client;
  private ssm?: SSMClient;

  constructor(readonly options: Ec2Options) {}

  clientConfig(): {
    region: string;
    endpoint?: string;
    maxAttempts: number;
    requestHandler: { requestTimeout: number; connectionTimeout: number; throwOnRequestTimeout: boolean };
  } {
    // The SDK builds the host name from the region (ec2.<region>.amazonaws.com): a region is one host label or nothing is built.
    return {
      region: requireCloudName('ec2', 'ec2-region', 'target.region (or the remoteFinetune.aws.region setting)', this.options.region),
      ...(this.options.endpoint ? { endpoint: this.options.endpoint } : {}),
      maxAttempts: this.options.maxAttempts ?? 4,
      // throwOnRequestTimeout: without it the SDK only warns and a hung endpoint blocks forever.
      requestHandler: { requestTimeout: this.options.requestTimeoutMs ?? 30_000, connectionTimeout: 10_000, throwOnRequestTimeout: true },
    };
  }

  private async connect(): Promise<{ sdk: Sdk; client: EC2Client }> {
    if (!this.sdk || !this.client) {
      this.sdk = await import('@aws-sdk/client-ec2');
      this.client = new this.sdk.EC2Client(this.clientConfig());
    }
    return { sdk: this.sdk, client: this.client };
  }

  /** Sends one command and turns SDK errors into ProviderErrors. */
  async send<T>(make: (sdk: Sdk) => object, signal?: AbortSignal): Promise<T> {
    const { sdk, client } = await this.connect();
    if (signal?.aborted) throw new ProviderError('aborted', 'cancelled', 'ec2');
    // One generic path for every command: send's overloads cannot be named for a union of commands.
    const send = client.send.bind(client) as (command: object, options: { abortSignal?: AbortSignal }) => Promise<unknown>;
    try {
      return (await send(make(sdk), { abortSignal: signal })) as T;
    } catch (err) {
      if (signal?.aborted) throw new ProviderError('aborted', 'cancelled', 'ec2');
      throw mapSdkError(err);
    }
  }

  /** Also how long cleanup looks for the instance of a launch whose outcome is unknown (teardown.ts). */
  get consistencyWindowMs(): number {
    return this.options.consistency?.windowMs ?? 300_000;
  }

  /**
   * Runs `call` again while it fails with one of `codes` (EC2's NotFound for something that exists but has not
   * propagated yet), backing off exponentially, until `windowMs` has passed; then the last error stands.
   */
  async untilConsistent<T>(codes: readonly string[], call: () => Promise<T>, signal?: AbortSignal, windowMs = this.consistencyWindowMs): Promise<T> {
    const base = this.options.consistency?.baseMs ?? 2000;
    const max = this.options.consistency?.maxMs ?? 30_000;
    const deadline = Date.now() + windowMs;
    for (let attempt = 0; ; attempt++) {
      try {
        return await call();
      } catch (err) {
        const code = awsCode(err);
        if (!code || !codes.includes(code) || Date.now() >= deadline) throw err;
        this.consistencyRetries++;
        await sleep(Math.min(max, base * 2 ** attempt, Math.max(1, deadline - Date.now())), signal);
      }
    }
  }

  /** How often a NotFound was waited out (for tests and logs). */
  consistencyRetries = 0;

  /** The SSM client (same region, endpoint and timeouts), made on first use. */
  async ssmClient(): Promise<{ ssm: SSMClient; GetParametersCommand: typeof GetParametersCommand }> {
    const { SSMClient, GetParametersCommand } = await import('@aws-sdk/client-ssm');
    this.ssm ??= new SSMClient(this.clientConfig());
    return { ssm: this.ssm, GetParametersCommand };
  }
}
