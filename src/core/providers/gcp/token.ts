// What every GCP credential source shares: the TokenSource a provider asks for bearer tokens, a cache that
// renews a token a minute before it expires, and the OAuth token-endpoint exchange with its error reading.
import { DEFAULT_RETRY, requestJson } from '../http';
import type { HttpErrorDetail } from '../http';
import { ProviderError } from '../provider';
import type { ProviderErrorCode } from '../provider';

export const COMPUTE_SCOPE = 'https://www.googleapis.com/auth/compute';
export const GOOGLE_TOKEN_URI = 'https://oauth2.googleapis.com/token';

export interface TokenSource {
  /** What kind of credential this is, for messages ("service account x@y", "gcloud"). */
  readonly describe: string;
  readonly projectId?: string;
  /**
   * The project API quota is billed to, sent as x-goog-user-project on API calls (never to token services), as
   * google-auth-library does: the credentials' quota_project_id, or GOOGLE_CLOUD_QUOTA_PROJECT.
   */
  readonly quotaProjectId?: string;
  token(signal?: AbortSignal): Promise<string>;
  /** The account the tokens act as (a service account's or user's email), when the credentials name it (OS Login needs it). */
  account?(signal?: AbortSignal): Promise<string | undefined>;
}

/** OAuth-style error bodies ({error, error_description}: Google's token endpoint, STS): the description names the cause and holds no secret. */
export function tokenError(what: string): (detail: HttpErrorDetail) => { code: ProviderErrorCode; message: string } {
  return (detail) => {
    const body = detail.body as { error?: string | { message?: string; status?: string }; error_description?: string } | undefined;
    const err = body?.error;
    const text =
      typeof err === 'object'
        ? `${err.status ?? `HTTP ${detail.status}`}${err.message ? ` (${err.message})` : ''}`
        : `${err ?? `HTTP ${detail.status}`}${body?.error_description ? ` (${body.error_description})` : ''}`;
    return { code: detail.status >= 500 ? 'server' : 'auth', message: `${what}: ${text}` };
  };
}

export class CachedToken {
  private value?: { token: string; expiresAt: number };
  constructor(private readonly fetchToken: (signal?: AbortSignal) => Promise<{ token: string; expiresIn: number }>) {}
  async get(signal?: AbortSignal): Promise<string> {
    if (this.value && Date.now() < this.value.expiresAt) return this.value.token;
    const { token, expiresIn } = await this.fetchToken(signal);
    this.value = { token, expiresAt: Date.now() + Math.max(0, expiresIn - 60) * 1000 };
    return token;
  }
}

/** POSTs a form to an OAuth token endpoint and reads {access_token, expires_in}. */
export async function exchange(
  tokenUri: string,
  form: Record<string, string>,
  signal?: AbortSignal,
  what = 'token endpoint',
): Promise<{ token: string; expiresIn: number }> {
  const res = await requestJson(
    { method: 'POST', url: tokenUri, form, timeoutMs: 30_000, retry: { ...DEFAULT_RETRY, retries: 2 }, signal },
    'gcp',
    tokenError(what),
  );
  const body = res.body as { access_token?: string; expires_in?: number } | undefined;
  if (!body?.access_token) throw new ProviderError('auth', `${what} returned no access_token`, 'gcp');
  return { token: body.access_token, expiresIn: body.expires_in ?? 3600 };
}
