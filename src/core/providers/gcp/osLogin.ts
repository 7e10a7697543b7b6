// OS Login (cloud.google.com/compute/docs/oslogin): when a project (or an organisation policy through it) sets
// enable-oslogin=TRUE, the guest ignores keys in the ssh-keys metadata; a key opens an instance only from the
// caller's OS Login profile, under the POSIX username OS Login assigned, and only while the caller holds
// compute.instances.osLogin / osAdminLogin. Done the way `gcloud compute ssh` does it (GetOsloginState): the
// flag is read from instance metadata, else from the project's commonInstanceMetadata (case-insensitive
// "true"); the key is imported with users.importSshPublicKey (?projectId=…), and the user is the primary
// POSIX account of the returned login profile, else its first.
import { ProviderError } from '../provider';

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
