// OS Login (cloud.google.com/compute/docs/oslogin): when a project (or an organisation policy through it) sets
// enable-oslogin=TRUE, the guest ignores keys in the ssh-keys metadata; a key opens an instance only from the
// caller's OS Login profile, under the POSIX username OS Login assigned, and only while the caller holds
// compute.instances.osLogin / osAdminLogin. Done the way `gcloud compute ssh` does it (GetOsloginState): the
// flag is read from instance metadata, else from the project's commonInstanceMetadata (case-insensitive
// "true"); the key is imported with users.importSshPublicKey (?projectId=…), and the user is the primary
// POSIX account of the returned login profile, else its first.
import { ProviderError } from '../provider';
import type { GcpApi } from './api';
import { zonePath } from './api';

export const OSLOGIN_BASE = 'https://oslogin.googleapis.com/v1';

type MetadataItems = ReadonlyArray<{ readonly key?: string; readonly value?: string }> | undefined;

/** true / false when the key is set (value "true", any case), undefined when absent: instance first, then project. */
function metadataFlag(key: string, instance: MetadataItems, project: MetadataItems): boolean {
  const read = (items: MetadataItems): boolean | undefined => {
    const v = items?.find((i) => i.key === key)?.value;
    return v === undefined ? undefined : v.toLowerCase() === 'true';
  };
  return read(instance) ?? read(project) ?? false;
}

export interface OsLoginState {
  readonly enabled: boolean;
  readonly twoFactor: boolean;
  readonly certificates: boolean;
}

export function osLoginState(project: MetadataItems, instance?: MetadataItems): OsLoginState {
  return {
    enabled: metadataFlag('enable-oslogin', instance, project),
    twoFactor: metadataFlag('enable-oslogin-2fa', instance, project),
    certificates: metadataFlag('enable-oslogin-certificates', instance, project),
  };
}

interface LoginProfile {
  readonly posixAccounts?: ReadonlyArray<{ readonly primary?: boolean; readonly username?: string; readonly accountId?: string }>;
}

/** The POSIX user gcloud would log in as: the primary account, else the first. */
export function posixUser(profile: LoginProfile | undefined): string | undefined {
  const accounts = profile?.posixAccounts ?? [];
  return (accounts.find((a) => a.primary) ?? accounts[0])?.username;
}

/** IAM member prefix of an account email, for the command the messages suggest. */
export function memberOf(email: string): string {
  return /\.gserviceaccount\.com$/.test(email) ? `serviceAccount:${email}` : `user:${email}`;
}

/** Why OS Login cannot be used unattended, or undefined when it can. */
export function osLoginRefusal(state: OsLoginState, project: string): ProviderError | undefined {
  if (state.twoFactor) {
    return new ProviderError(
      'unsupported',
      `OS Login 2-step verification is on in project ${project} (enable-oslogin-2fa=TRUE): every connection would need a code typed in, which a run that reconnects by itself cannot give. Use a project without it, or start the instance yourself and add it as an SSH host`,
      'gcp',
    );
  }
  if (state.certificates) {
    return new ProviderError(
      'unsupported',
      `OS Login in project ${project} accepts only signed SSH certificates (enable-oslogin-certificates=TRUE), which this extension does not request yet. Use a project without it, or start the instance yourself and add it as an SSH host`,
      'gcp',
    );
  }
  return undefined;
}

export function noAccountError(project: string, credentials: string): ProviderError {
  return new ProviderError(
    'auth',
    `OS Login is on in project ${project} (enable-oslogin=TRUE), so instances ignore keys in their metadata, and the credentials (${credentials}) name no account to add the key to: use a user's or a service account's credentials (with workload identity federation, set service_account_impersonation_url), or add the key yourself with \`gcloud compute os-login ssh-keys add --key-file=<the extension's cloud key>.pub\` and run the instance as an SSH host`,
    'gcp',
  );
}

/**
 * Who the instance will be reached as. Without OS Login: the ssh-keys metadata user. With it (project
 * metadata enable-oslogin=TRUE; our instances set no override): the key is imported into the caller's OS
 * Login profile and the POSIX user OS Login returns is the login. Refused up front when OS Login needs a
 * human (2-step verification, certificates) or the credentials name no account.
 */
export async function loginFor(
  api: GcpApi,
  publicKey: string,
  signal?: AbortSignal,
): Promise<{ user: string; osLogin: false } | { user: string; osLogin: true; account: string }> {
  const project = api.options.project;
  const meta = (await api.call('GET', '', undefined, signal)) as { commonInstanceMetadata?: { items?: Array<{ key?: string; value?: string }> } } | undefined;
  const state = osLoginState(meta?.commonInstanceMetadata?.items);
  if (!state.enabled) return { user: api.options.sshUser ?? 'ubuntu', osLogin: false };
  const refusal = osLoginRefusal(state, project);
  if (refusal) throw refusal;
  const account = await api.options.auth.account?.(signal);
  if (!account) throw noAccountError(project, api.options.auth.describe);
  const res = (await api.callUrl(
    'POST',
    `${(api.options.osLoginBaseUrl ?? OSLOGIN_BASE).replace(/\/$/, '')}/users/${encodeURIComponent(account)}:importSshPublicKey?projectId=${encodeURIComponent(project)}`,
    { key: publicKey.trim() },
    signal,
  )) as { loginProfile?: Parameters<typeof posixUser>[0] } | undefined;
  const user = posixUser(res?.loginProfile);
  if (!user) throw new ProviderError('server', `OS Login imported the key for ${account} but returned no POSIX account in project ${project}`, 'gcp');
  return { user, osLogin: true, account };
}

/**
 * Under OS Login the key opens the instance only while the caller holds compute.instances.osAdminLogin on it
 * (osAdminLogin: the runner's watchdog powers the instance off with sudo). Asked of the instance itself
 * (testIamPermissions sees grants inherited from project, folder and organisation); without it the instance
 * is deleted again and the error names the role to grant.
 */
export async function checkOsLoginRole(
  api: GcpApi,
  zone: string,
  name: string,
  account: string,
  terminate: (instanceId: string, signal?: AbortSignal) => Promise<void>,
  signal?: AbortSignal,
): Promise<void> {
  const wanted = ['compute.instances.osAdminLogin'];
  const res = (await api.call(
    'POST',
    `${zonePath(zone, 'instance zone')}/instances/${encodeURIComponent(name)}/testIamPermissions`,
    { permissions: wanted },
    signal,
  )) as { permissions?: string[] } | undefined;
  if ((res?.permissions ?? []).includes('compute.instances.osAdminLogin')) return;
  await terminate(`${zone}/${name}`, signal).catch(() => undefined);
  throw new ProviderError(
    'auth',
    `${account} may not log in to instances of project ${api.options.project} through OS Login with sudo (the on-host watchdog powers an idle instance off): grant roles/compute.osAdminLogin, e.g. \`gcloud projects add-iam-policy-binding ${api.options.project} --member=${memberOf(account)} --role=roles/compute.osAdminLogin\`; the instance was deleted again`,
    'gcp',
  );
}
