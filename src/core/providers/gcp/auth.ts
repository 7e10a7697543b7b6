// Application Default Credentials without google-auth-library, in its order: GOOGLE_APPLICATION_CREDENTIALS,
// gcloud's well-known file, then the metadata server when running on Google Cloud; then, as our own last
// resort, `gcloud auth print-access-token`. A service-account key is turned into an access token by signing
// a JWT (RS256) with node:crypto; an authorized_user file (`gcloud auth application-default login`) by the
// refresh-token grant; an external_account file by workload identity federation (gcp/externalAccount.ts).
// Tokens are cached until a minute before they expire; none is ever logged.
import { createSign } from 'node:crypto';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_RETRY, requestJson } from '../http';
import { CachedToken, COMPUTE_SCOPE, exchange, GOOGLE_TOKEN_URI } from './token';
import type { TokenSource } from './token';
import { externalAccountTokenSource, isExternalAccount } from './externalAccount';
import { metadataServerTokenSource, onGoogleCloud } from './metadataCredentials';
import { ProviderError } from '../provider';

export type { TokenSource } from './token';

/** Where Google's endpoints are, for tests that stand doubles in for them. */
export interface GoogleEndpoints {
  /** oauth2.googleapis.com/token for authorized_user files (service-account keys name their own token_uri). */
  readonly oauthTokenUri?: string;
}

interface ServiceAccountKey {
  readonly type: 'service_account';
  readonly client_email: string;
  readonly private_key: string;
  readonly private_key_id?: string;
  readonly project_id?: string;
  readonly token_uri?: string;
  readonly quota_project_id?: string;
}

interface AuthorizedUser {
  readonly type: 'authorized_user';
  readonly client_id: string;
  readonly client_secret: string;
  readonly refresh_token: string;
  readonly quota_project_id?: string;
}

function b64url(data: string | Buffer): string {
  return Buffer.from(data).toString('base64url');
}

/** The signed JWT a service account presents to the token endpoint (RFC 7523). */
function serviceAccountAssertion(key: ServiceAccountKey, scope: string, nowSeconds: number, tokenUri = key.token_uri ?? GOOGLE_TOKEN_URI): string {
  const header = b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', ...(key.private_key_id ? { kid: key.private_key_id } : {}) }));
  const claims = b64url(JSON.stringify({ iss: key.client_email, scope, aud: tokenUri, iat: nowSeconds, exp: nowSeconds + 3600 }));
  const signer = createSign('RSA-SHA256');
  signer.update(`${header}.${claims}`);
  return `${header}.${claims}.${b64url(signer.sign(key.private_key))}`;
}

export function serviceAccountTokenSource(key: ServiceAccountKey, scope = COMPUTE_SCOPE, quotaProjectId = key.quota_project_id): TokenSource {
  const uri = key.token_uri ?? GOOGLE_TOKEN_URI;
  const cache = new CachedToken((signal) =>
    exchange(
      uri,
      { grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: serviceAccountAssertion(key, scope, Math.floor(Date.now() / 1000), uri) },
      signal,
    ),
  );
  return {
    describe: `service account ${key.client_email}`,
    projectId: key.project_id,
    ...(quotaProjectId ? { quotaProjectId } : {}),
    token: (signal) => cache.get(signal),
    account: async () => key.client_email,
  };
}

function authorizedUserTokenSource(user: AuthorizedUser, tokenUri = GOOGLE_TOKEN_URI, quotaProjectId = user.quota_project_id): TokenSource {
  const cache = new CachedToken((signal) =>
    exchange(
      tokenUri,
      { grant_type: 'refresh_token', client_id: user.client_id, client_secret: user.client_secret, refresh_token: user.refresh_token },
      signal,
    ),
  );
  const token = (signal?: AbortSignal): Promise<string> => cache.get(signal);
  let email: Promise<string | undefined> | undefined;
  return {
    describe: 'gcloud application-default login',
    projectId: user.quota_project_id,
    ...(quotaProjectId ? { quotaProjectId } : {}),
    token,
    // The file names no account; the token endpoint's tokeninfo does (ADC login grants the userinfo.email scope).
    account: (signal) =>
      (email ??= (async () => {
        const res = await requestJson(
          {
            method: 'GET',
            url: `${tokenUri.replace(/\/token$/, '/tokeninfo')}?access_token=${encodeURIComponent(await token(signal))}`,
            timeoutMs: 30_000,
            retry: { ...DEFAULT_RETRY, retries: 1 },
            ...(signal ? { signal } : {}),
          },
          'gcp',
          () => ({ code: 'auth', message: 'tokeninfo refused the token' }),
        );
        return (res.body as { email?: string } | undefined)?.email;
      })().catch(() => undefined)),
  };
}

/** `gcloud auth print-access-token`: the token arrives on stdout, never as an argument. */
function gcloudTokenSource(gcloud = 'gcloud'): TokenSource {
  const cache = new CachedToken(
    (signal) =>
      new Promise((resolve, reject) => {
        execFile(gcloud, ['auth', 'print-access-token'], { timeout: 30_000, signal }, (err, stdout) => {
          if (err) reject(new ProviderError('auth', `gcloud auth print-access-token failed: ${err.message.split('\n')[0] ?? ''}`, 'gcp'));
          else resolve({ token: stdout.trim(), expiresIn: 1800 });
        });
      }),
  );
  return { describe: 'gcloud auth print-access-token', token: (signal) => cache.get(signal) };
}

/**
 * Parses a credentials file; undefined for shapes this module does not handle (validation never throws).
 * quotaProjectId overrides the file's quota_project_id (GOOGLE_CLOUD_QUOTA_PROJECT).
 */
export function tokenSourceFromJson(text: string, endpoints: GoogleEndpoints = {}, quotaProjectId?: string): TokenSource | undefined {
  let parsed: {
    type?: string;
    client_email?: string;
    private_key?: string;
    refresh_token?: string;
    client_id?: string;
    client_secret?: string;
    quota_project_id?: string;
  };
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch {
    return undefined;
  }
  const quota = quotaProjectId ?? parsed.quota_project_id;
  if (parsed.type === 'service_account' && parsed.client_email && parsed.private_key)
    return serviceAccountTokenSource(parsed as unknown as ServiceAccountKey, COMPUTE_SCOPE, quota);
  if (parsed.type === 'authorized_user' && parsed.refresh_token && parsed.client_id && parsed.client_secret)
    return authorizedUserTokenSource(parsed as unknown as AuthorizedUser, endpoints.oauthTokenUri ?? GOOGLE_TOKEN_URI, quota);
  if (isExternalAccount(parsed)) return externalAccountTokenSource(parsed, COMPUTE_SCOPE, quota);
  return undefined;
}

/**
 * ADC order (google-auth-library's): GOOGLE_APPLICATION_CREDENTIALS, gcloud's well-known file, the metadata
 * server when this process runs on Google Cloud (GCE_METADATA_HOST set, or a Google BIOS: never a network
 * probe from a laptop); then the gcloud CLI.
 */
export async function applicationDefaultCredentials(env: NodeJS.ProcessEnv = process.env, endpoints: GoogleEndpoints = {}): Promise<TokenSource> {
  const quota = env.GOOGLE_CLOUD_QUOTA_PROJECT || undefined;
  const candidates = [
    env.GOOGLE_APPLICATION_CREDENTIALS,
    join(env.CLOUDSDK_CONFIG ?? join(env.HOME ?? homedir(), '.config', 'gcloud'), 'application_default_credentials.json'),
  ];
  for (const path of candidates) {
    if (!path) continue;
    const text = await readFile(path, 'utf8').catch(() => undefined);
    if (text === undefined) continue;
    const source = tokenSourceFromJson(text, endpoints, quota);
    if (source) return source;
  }
  if (onGoogleCloud(env)) return metadataServerTokenSource(env, quota);
  return gcloudTokenSource();
}

/**
 * ADC resolved on first use, so building providers (the extension's activation, a CLI command) never reads
 * credential files. The quota project is known once a token was asked for, which every API call does first.
 */
export function lazyApplicationDefaultCredentials(env: NodeJS.ProcessEnv = process.env): TokenSource {
  let source: Promise<TokenSource> | undefined;
  let resolved: TokenSource | undefined;
  const get = (): Promise<TokenSource> => (source ??= applicationDefaultCredentials(env).then((s) => (resolved = s)));
  return {
    describe: 'Application Default Credentials',
    get quotaProjectId(): string | undefined {
      return resolved?.quotaProjectId;
    },
    token: async (signal) => (await get()).token(signal),
    account: async (signal) => (await get()).account?.(signal),
  };
}

/** Whether ADC has something to read: a key file, gcloud's well-known file, or (on a Google Cloud VM) the metadata server. */
export function applicationDefaultCredentialsPresent(env: NodeJS.ProcessEnv = process.env): boolean {
  const file = env.GOOGLE_APPLICATION_CREDENTIALS;
  const wellKnown = join(env.CLOUDSDK_CONFIG ?? join(env.HOME ?? homedir(), '.config', 'gcloud'), 'application_default_credentials.json');
  return (!!file && existsSync(file)) || existsSync(wellKnown) || onGoogleCloud(env);
}
