// Credentials of the VM (or Cloud Run service) this process runs on, from the Compute Engine metadata server:
// computeMetadata/v1/instance/service-accounts/default/token (cloud.google.com/compute/docs/access/
// authenticate-workloads). As google-auth-library's gcp-metadata: the address comes from GCE_METADATA_HOST
// (or GCE_METADATA_IP), else 169.254.169.254; every request sends `Metadata-Flavor: Google` and every answer
// must carry it back, so a proxy or captive portal answering on that address is never taken for Google's.
import { readFileSync } from 'node:fs';
import { platform } from 'node:os';
import { withTimeout } from '../abort';
import { CachedToken } from './token';
import type { TokenSource } from './token';
import { ProviderError } from '../provider';

const DEFAULT_HOST = '169.254.169.254';

/**
 * Whether to ask the metadata server at all: GCE_METADATA_HOST/IP set, a serverless runtime's variables, or a
 * Linux machine whose BIOS vendor is Google. Never a network probe: on a laptop a request to 169.254.169.254
 * would only wait for its timeout on every start.
 */
export function onGoogleCloud(env: NodeJS.ProcessEnv): boolean {
  if (env.GCE_METADATA_HOST || env.GCE_METADATA_IP || env.K_SERVICE || env.CLOUD_RUN_JOB || env.FUNCTION_NAME) return true;
  if (platform() !== 'linux') return false;
  try {
    return /Google/.test(readFileSync('/sys/class/dmi/id/bios_vendor', 'utf8'));
  } catch {
    return false;
  }
}

function baseUrl(env: NodeJS.ProcessEnv): string {
  const host = env.GCE_METADATA_IP || env.GCE_METADATA_HOST || DEFAULT_HOST;
  return `${/^https?:\/\//.test(host) ? host : `http://${host}`}/computeMetadata/v1`;
}

async function get(base: string, path: string, signal?: AbortSignal): Promise<string> {
  let res: Response;
  try {
    res = await fetch(`${base}/${path}`, { headers: { 'Metadata-Flavor': 'Google' }, signal: withTimeout(5000, signal) });
  } catch (err) {
    if (signal?.aborted) throw new ProviderError('aborted', 'cancelled', 'gcp');
    throw new ProviderError('auth', `the metadata server at ${base} did not answer (${(err as Error).message})`, 'gcp');
  }
  const text = await res.text();
  if (res.headers.get('metadata-flavor') !== 'Google') {
    throw new ProviderError(
      'auth',
      `${base} answered without Metadata-Flavor: Google: not Google's metadata server (a proxy or captive portal?); no token asked of it`,
      'gcp',
    );
  }
  if (res.status === 404 && path.startsWith('instance/service-accounts/')) {
    throw new ProviderError(
      'auth',
      'this VM has no service account (created without one): attach one with `gcloud compute instances set-service-account`, or use a key file or `gcloud auth application-default login`',
      'gcp',
    );
  }
  if (!res.ok) throw new ProviderError('auth', `the metadata server refused ${path}: HTTP ${res.status} ${text.slice(0, 200)}`, 'gcp');
  return text;
}

export async function metadataServerTokenSource(env: NodeJS.ProcessEnv, quotaProjectId?: string): Promise<TokenSource> {
  const base = baseUrl(env);
  const projectId = await get(base, 'project/project-id').then(
    (t) => t.trim() || undefined,
    () => undefined,
  );
  const cache = new CachedToken(async (signal) => {
    const body = JSON.parse(await get(base, 'instance/service-accounts/default/token', signal)) as { access_token?: string; expires_in?: number };
    if (!body.access_token) throw new ProviderError('auth', 'the metadata server returned no access_token', 'gcp');
    return { token: body.access_token, expiresIn: body.expires_in ?? 300 };
  });
  return {
    describe: `the VM's service account (metadata server ${base.replace(/\/computeMetadata\/v1$/, '')})`,
    ...(projectId ? { projectId } : {}),
    ...(quotaProjectId ? { quotaProjectId } : {}),
    token: (signal) => cache.get(signal),
    account: async (signal) => (await get(base, 'instance/service-accounts/default/email', signal)).trim() || undefined,
  };
}
