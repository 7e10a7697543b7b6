// The Compute Engine REST v1 API as the provider uses it: authorised JSON calls (retried as Google asks), errors
// in the Provider's words, zone operations awaited, and the shapes of the answers it reads.
import { sleep } from '../abort';
import { codeForStatus, DEFAULT_RETRY, requestJson } from '../http';
import type { HttpErrorDetail, RetryPolicy } from '../http';
import { requireCloudName } from '../cloudNames';
import { ProviderError } from '../provider';
import type { InstanceState, ProviderErrorCode } from '../provider';
import type { TokenSource } from './token';

const GCP_COMPUTE_BASE = 'https://compute.googleapis.com/compute/v1';
/** The URL path of a zone, refused unless it is a zone name: a zone is one path segment, never `..` or `a/b`. */
export function zonePath(zone: string, field: string): string {
  return `/zones/${encodeURIComponent(requireCloudName('gcp', 'gcp-zone', field, zone))}`;
}

export interface GcpOptions {
  readonly project: string;
  /** Default zone for launches and offers (us-central1-a). */
  readonly zone: string;
  readonly auth: TokenSource;
  readonly baseUrl?: string;
  readonly imageFamily?: string;
  readonly imageProject?: string;
  /** The user the ssh-keys metadata opens (default ubuntu); under OS Login the POSIX user OS Login assigns instead. */
  readonly sshUser?: string;
  /** OS Login API root (tests point it at the emulator). */
  readonly osLoginBaseUrl?: string;
  /** SSH port of the instances; 22 on GCP. Tests point it at a loopback sshd. */
  readonly sshPort?: number;
  /** This machine's public IPv4 (tests); default: asked of checkip.amazonaws.com. */
  readonly callerIp?: (signal?: AbortSignal) => Promise<string>;
  readonly retry?: RetryPolicy;
  readonly requestTimeoutMs?: number;
  readonly operationPollMs?: number;
  /** How long an operation (an insert, a delete) is awaited; Compute Engine's deletes of GPU VMs take minutes. */
  readonly operationTimeoutMs?: number;
  /** How long after an insert whose answer never came its VM may still appear (the operation runs on). */
  readonly consistencyWindowMs?: number;
}

export interface GcpOperation {
  readonly name: string;
  readonly status: 'PENDING' | 'RUNNING' | 'DONE';
  readonly zone?: string;
  readonly error?: { readonly errors?: ReadonlyArray<{ readonly code?: string; readonly message?: string }> };
  readonly httpErrorStatusCode?: number;
}

export interface GcpInstance {
  readonly id?: string;
  readonly name: string;
  readonly zone?: string;
  readonly machineType?: string;
  readonly status?: string;
  readonly labels?: Record<string, string>;
  readonly creationTimestamp?: string;
  readonly networkInterfaces?: ReadonlyArray<{ readonly networkIP?: string; readonly accessConfigs?: ReadonlyArray<{ readonly natIP?: string }> }>;
  readonly guestAccelerators?: ReadonlyArray<{ readonly acceleratorType?: string; readonly acceleratorCount?: number }>;
  readonly scheduling?: { readonly provisioningModel?: string };
  readonly metadata?: { readonly items?: ReadonlyArray<{ readonly key?: string; readonly value?: string }> };
}

/** Compute Engine's instance statuses in the Provider's words. */
export const GCP_STATUSES: Readonly<Record<string, InstanceState>> = {
  PROVISIONING: 'pending',
  STAGING: 'pending',
  RUNNING: 'running',
  STOPPING: 'stopping',
  SUSPENDING: 'stopping',
  SUSPENDED: 'stopped',
  STOPPED: 'stopped',
  TERMINATED: 'stopped',
  REPAIRING: 'pending',
};

/**
 * Compute Engine's error reasons (cloud.google.com/compute/docs/api/errors, .../troubleshooting/quota-errors):
 * a 403 is not always auth. 403 quotaExceeded (and the QUOTA_EXCEEDED operation error) is a quota the person
 * raises in the console; 403 rateLimitExceeded / userRateLimitExceeded is the API's rate limit, retried with
 * exponential backoff as Google asks; only forbidden/insufficientPermissions and the like are auth.
 */
const RATE_REASONS = new Set(['rateLimitExceeded', 'userRateLimitExceeded', 'RATE_LIMIT_EXCEEDED']);

export function codeOf(errCode: string | undefined, status: number): ProviderErrorCode {
  const c = errCode ?? '';
  if (c.startsWith('ZONE_RESOURCE_POOL_EXHAUSTED') || c === 'RESOURCE_EXHAUSTED') return 'capacity';
  if (RATE_REASONS.has(c)) return 'rate-limited';
  if (c.includes('QUOTA') || c === 'quotaExceeded' || c === 'dailyLimitExceeded') return 'quota';
  if (c === 'notFound' || c === 'RESOURCE_NOT_FOUND') return 'not-found';
  return codeForStatus(status);
}

function gcpError(detail: HttpErrorDetail): { code: ProviderErrorCode; message: string } {
  const body = detail.body as { error?: { message?: string; errors?: ReadonlyArray<{ reason?: string; message?: string }>; status?: string } } | undefined;
  const reason = body?.error?.errors?.[0]?.reason;
  const code = codeOf(reason, detail.status);
  return { code, message: body?.error?.message ?? `HTTP ${detail.status}`, ...(code === 'rate-limited' ? { retriable: true } : {}) };
}

export function regionOf(zone: string): string {
  return zone.replace(/-[a-z]$/, '');
}

/** The last segment of a resource URL (a zone's name from its self link). */
export function tail(url: string | undefined): string {
  return (url ?? '').split('/').pop() ?? '';
}

export class GcpApi {
  readonly root: string;
  private readonly base: string;

  constructor(readonly options: GcpOptions) {
    this.root = (options.baseUrl ?? GCP_COMPUTE_BASE).replace(/\/$/, '');
    this.base = `${this.root}/projects/${encodeURIComponent(options.project)}`;
  }

  call(method: 'GET' | 'POST' | 'DELETE', path: string, body: unknown, signal: AbortSignal | undefined, retry?: RetryPolicy): Promise<unknown> {
    this.checkProject();
    return this.callUrl(method, `${this.base}${path}`, body, signal, retry);
  }

  async callUrl(method: 'GET' | 'POST' | 'DELETE', url: string, body: unknown, signal: AbortSignal | undefined, retry?: RetryPolicy): Promise<unknown> {
    const token = await this.options.auth.token(signal);
    // The quota project the credentials name is billed for the call, as google-auth-library sends it.
    const quota = this.options.auth.quotaProjectId;
    const res = await requestJson(
      {
        method,
        url,
        headers: { authorization: `Bearer ${token}`, ...(quota ? { 'x-goog-user-project': quota } : {}) },
        body,
        timeoutMs: this.options.requestTimeoutMs ?? 30_000,
        retry: retry ?? this.options.retry ?? DEFAULT_RETRY,
        signal,
      },
      'gcp',
      gcpError,
    );
    return res.body;
  }

  /** The project is the user's own setting, but an environment variable can supply it too: refused unless it is a project id. */
  checkProject(): void {
    requireCloudName('gcp', 'gcp-project', 'the remoteFinetune.gcp.project setting (or GOOGLE_CLOUD_PROJECT)', this.options.project);
  }

  /** Polls a zone operation until DONE; an operation error becomes a ProviderError. */
  async waitOperation(op: GcpOperation, zone: string | undefined, signal?: AbortSignal): Promise<void> {
    const deadline = Date.now() + (this.options.operationTimeoutMs ?? 600_000);
    let current = op;
    while (current.status !== 'DONE') {
      if (Date.now() > deadline) throw new ProviderError('timeout', `operation ${op.name} still ${current.status}`, 'gcp');
      await sleep(this.options.operationPollMs ?? 2000, signal);
      current = (await this.call(
        'GET',
        `${zone ? zonePath(zone, 'operation zone') : '/global'}/operations/${encodeURIComponent(op.name)}`,
        undefined,
        signal,
      )) as GcpOperation;
    }
    const first = current.error?.errors?.[0];
    if (first) throw new ProviderError(codeOf(first.code, current.httpErrorStatusCode ?? 400), `${first.code ?? 'error'}: ${first.message ?? ''}`, 'gcp');
  }
}
