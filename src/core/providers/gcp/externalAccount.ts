// external_account credential files: workload identity federation (cloud.google.com/iam/docs/workload-identity-
// federation), the way google-auth-library's BaseExternalAccountClient does it. A subject token from the
// identity provider (a file, or a URL with headers, read as text or as one field of a JSON answer) is exchanged
// at STS (RFC 8693: grant_type token-exchange, requested access_token, audience = the pool provider); with
// service_account_impersonation_url the federated token then buys a service account's token from IAM
// credentials (generateAccessToken, scope + lifetime). STS gets cloud-platform when impersonating (IAM
// credentials requires it), the wanted scope otherwise. Sources that run code or sign AWS requests (aws1,
// executable) are not run here: they fail with a message saying what to use instead.
import { readFile } from 'node:fs/promises';
import { DEFAULT_RETRY, requestJson } from '../http';
import { CachedToken, exchange, tokenError } from './token';
import type { TokenSource } from './token';
import { ProviderError } from '../provider';

const CLOUD_PLATFORM = 'https://www.googleapis.com/auth/cloud-platform';
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';

interface CredentialSource {
  readonly file?: string;
  readonly url?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly format?: { readonly type?: 'text' | 'json'; readonly subject_token_field_name?: string };
  readonly environment_id?: string;
  readonly executable?: unknown;
}

export interface ExternalAccount {
  readonly type: 'external_account';
  readonly audience: string;
  readonly subject_token_type: string;
  readonly token_url: string;
  readonly credential_source: CredentialSource;
  readonly service_account_impersonation_url?: string;
  readonly service_account_impersonation?: { readonly token_lifetime_seconds?: number };
  readonly quota_project_id?: string;
  readonly workforce_pool_user_project?: string;
  readonly client_id?: string;
  readonly client_secret?: string;
}

export function isExternalAccount(x: unknown): x is ExternalAccount {
  const o = x as Partial<ExternalAccount> | undefined;
  return (
    o?.type === 'external_account' &&
    typeof o.audience === 'string' &&
    typeof o.subject_token_type === 'string' &&
    typeof o.token_url === 'string' &&
    typeof o.credential_source === 'object' &&
    o.credential_source !== null
  );
}

function fromText(text: string, source: CredentialSource, where: string): string {
  let token: string | undefined = text;
  if (source.format?.type === 'json') {
    try {
      const field = (JSON.parse(text) as Record<string, unknown>)[source.format.subject_token_field_name ?? ''];
      token = typeof field === 'string' ? field : undefined;
    } catch {
      token = undefined;
    }
  }
  token = token?.trim();
  if (!token)
    throw new ProviderError(
      'auth',
      `no subject token in ${where}${source.format?.type === 'json' ? ` (field ${source.format.subject_token_field_name ?? '?'})` : ''}`,
      'gcp',
    );
  return token;
}

async function subjectToken(source: CredentialSource, signal?: AbortSignal): Promise<string> {
  if (source.environment_id || source.executable) {
    const kind = source.environment_id ?? 'executable';
    throw new ProviderError(
      'unsupported',
      `external_account credentials with a ${kind} source are not run by this extension: use \`gcloud auth print-access-token\` (leave GOOGLE_APPLICATION_CREDENTIALS unset) or a file/url credential source`,
      'gcp',
    );
  }
  if (source.file) {
    const text = await readFile(source.file, 'utf8').catch((err: NodeJS.ErrnoException) => {
      throw new ProviderError('auth', `the subject token file ${source.file ?? ''} cannot be read (${err.code ?? err.message})`, 'gcp');
    });
    return fromText(text, source, source.file);
  }
  if (source.url) {
    const res = await requestJson(
      {
        method: 'GET',
        url: source.url,
        headers: source.headers ?? {},
        timeoutMs: 30_000,
        retry: { ...DEFAULT_RETRY, retries: 2 },
        ...(signal ? { signal } : {}),
      },
      'gcp',
      (d) => ({ code: 'auth', message: `the subject token URL answered HTTP ${d.status}` }),
    );
    return fromText(typeof res.body === 'string' ? res.body : JSON.stringify(res.body ?? ''), source, source.url);
  }
  throw new ProviderError('auth', 'external_account credential_source names no file or url', 'gcp');
}

/** The service account an impersonation URL names (…/serviceAccounts/<email>:generateAccessToken). */
function impersonated(url: string | undefined): string | undefined {
  const m = url ? /\/serviceAccounts\/([^/:]+):generateAccessToken$/.exec(url) : null;
  return m?.[1] ? decodeURIComponent(m[1]) : undefined;
}

export function externalAccountTokenSource(cfg: ExternalAccount, scope: string, quotaProjectId = cfg.quota_project_id): TokenSource {
  const sa = impersonated(cfg.service_account_impersonation_url);
  const cache = new CachedToken(async (signal) => {
    const form: Record<string, string> = {
      grant_type: TOKEN_EXCHANGE,
      audience: cfg.audience,
      requested_token_type: ACCESS_TOKEN,
      subject_token: await subjectToken(cfg.credential_source, signal),
      subject_token_type: cfg.subject_token_type,
      scope: cfg.service_account_impersonation_url ? CLOUD_PLATFORM : scope,
      // A workforce pool bills its STS calls to this project when no client authenticates (google-auth's "options").
      ...(cfg.workforce_pool_user_project && !cfg.client_id ? { options: JSON.stringify({ userProject: cfg.workforce_pool_user_project }) } : {}),
      ...(cfg.client_id ? { client_id: cfg.client_id, ...(cfg.client_secret ? { client_secret: cfg.client_secret } : {}) } : {}),
    };
    const federated = await exchange(cfg.token_url, form, signal, 'STS token exchange');
    if (!cfg.service_account_impersonation_url) return federated;
    const lifetime = cfg.service_account_impersonation?.token_lifetime_seconds ?? 3600;
    const res = await requestJson(
      {
        method: 'POST',
        url: cfg.service_account_impersonation_url,
        headers: { authorization: `Bearer ${federated.token}` },
        body: { scope: [scope], lifetime: `${lifetime}s` },
        timeoutMs: 30_000,
        retry: { ...DEFAULT_RETRY, retries: 2 },
        ...(signal ? { signal } : {}),
      },
      'gcp',
      (d) => {
        const mapped = tokenError(`impersonating ${sa ?? 'the service account'}`)(d);
        // The usual cause, said with its fix.
        return d.status === 403
          ? { ...mapped, message: `${mapped.message}: grant the federated identity roles/iam.workloadIdentityUser on ${sa ?? 'the service account'}` }
          : mapped;
      },
    );
    const body = res.body as { accessToken?: string; expireTime?: string } | undefined;
    if (!body?.accessToken) throw new ProviderError('auth', 'IAM credentials returned no accessToken', 'gcp');
    const expiresAt = body.expireTime ? Date.parse(body.expireTime) : Date.now() + lifetime * 1000;
    return { token: body.accessToken, expiresIn: Math.max(0, Math.floor((expiresAt - Date.now()) / 1000)) };
  });
  return {
    describe: sa ? `workload identity federation as ${sa}` : `workload identity federation (${cfg.audience})`,
    ...(quotaProjectId ? { quotaProjectId } : {}),
    token: (signal) => cache.get(signal),
    account: async () => sa,
  };
}
