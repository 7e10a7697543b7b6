// JSON over HTTP for the REST providers (Lambda, GCP): timeouts, abort, and backoff on 429/5xx
// where a retry cannot double an effect.
import { sleep, withTimeout } from './abort';
import { ProviderError } from './provider';
import type { ProviderErrorCode, ProviderKind } from './provider';

export interface RetryPolicy {
  /** Extra attempts after the first. */
  readonly retries: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /** Retry 5xx and timeouts too; off for calls that create things (a retried launch may launch twice). */
  readonly retryServerErrors: boolean;
}

export const DEFAULT_RETRY: RetryPolicy = { retries: 5, baseDelayMs: 1000, maxDelayMs: 30_000, retryServerErrors: true };

export interface JsonRequest {
  readonly method: 'GET' | 'POST' | 'DELETE' | 'PUT' | 'PATCH';
  readonly url: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: unknown;
  /** Already encoded form body (OAuth token endpoint). */
  readonly form?: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly retry: RetryPolicy;
  readonly signal?: AbortSignal;
}

export interface HttpErrorDetail {
  readonly status: number;
  readonly body: unknown;
}

/** Maps an HTTP failure to a ProviderError; each provider supplies its own reading of error bodies. */
/** `retriable`: the body says "try again later" even though the status alone does not. */
export type ErrorMapper = (detail: HttpErrorDetail) => { code: ProviderErrorCode; message: string; retriable?: boolean };

export interface JsonResponse {
  readonly status: number;
  readonly body: unknown;
}

function retryDelay(attempt: number, policy: RetryPolicy, retryAfter: string | null): number {
  const seconds = retryAfter ? Number(retryAfter) : NaN;
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, policy.maxDelayMs);
  const exp = Math.min(policy.baseDelayMs * 2 ** attempt, policy.maxDelayMs);
  // Full jitter so parallel windows do not retry in lockstep.
  return Math.round(exp / 2 + Math.random() * (exp / 2));
}

async function readBody(res: Response): Promise<unknown> {
  const text = await res.text();
  if (text.length === 0) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export async function requestJson(req: JsonRequest, provider: ProviderKind, mapError: ErrorMapper): Promise<JsonResponse> {
  for (let attempt = 0; ; attempt++) {
    if (req.signal?.aborted) throw new ProviderError('aborted', 'cancelled', provider);
    const headers: Record<string, string> = { accept: 'application/json', ...(req.headers ?? {}) };
    let body: string | undefined;
    if (req.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(req.form as Record<string, string>).toString();
    } else if (req.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(req.body);
    }
    let res: Response;
    try {
      res = await fetch(req.url, { method: req.method, headers, body, signal: withTimeout(req.timeoutMs, req.signal) });
    } catch (err) {
      if (req.signal?.aborted) throw new ProviderError('aborted', 'cancelled', provider);
      const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
      if (req.retry.retryServerErrors && attempt < req.retry.retries) {
        await sleep(retryDelay(attempt, req.retry, null), req.signal);
        continue;
      }
      throw new ProviderError(
        timedOut ? 'timeout' : 'unreachable',
        `${req.method} ${new URL(req.url).pathname}: ${timedOut ? 'timed out' : (err as Error).message}`,
        provider,
      );
    }
    if (res.ok) return { status: res.status, body: await readBody(res) };
    const detail = { status: res.status, body: await readBody(res) };
    // Some APIs say "slow down" with another status (Compute Engine: 403 rateLimitExceeded): the mapper can mark it retriable.
    const retriable = res.status === 429 || (req.retry.retryServerErrors && res.status >= 500) || mapError(detail).retriable === true;
    if (retriable && attempt < req.retry.retries) {
      await sleep(retryDelay(attempt, req.retry, res.headers.get('retry-after')), req.signal);
      continue;
    }
    const mapped = mapError(detail);
    throw new ProviderError(mapped.code, mapped.message, provider);
  }
}

/** Default reading of a status when the body says nothing more specific. */
export function codeForStatus(status: number): ProviderErrorCode {
  if (status === 401 || status === 403) return 'auth';
  if (status === 404) return 'not-found';
  if (status === 429) return 'rate-limited';
  if (status >= 500) return 'server';
  return 'invalid';
}
