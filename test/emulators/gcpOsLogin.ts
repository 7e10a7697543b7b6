// Test double for OS Login (oslogin.googleapis.com v1) and for what an OS Login VM's guest does with it
// (cloud.google.com/compute/docs/oslogin). When enable-oslogin is TRUE (instance metadata first, else the
// project's), the guest ignores the ssh-keys metadata: the keys that open an account are those in the OS Login
// profile of the Google identity that owns the POSIX account, and only while that identity holds
// compute.instances.osLogin (roles/compute.osLogin) or osAdminLogin on the instance. The API as documented:
// users/{user}:importSshPublicKey (body {key, expirationTimeUsec}, ?projectId) returns {loginProfile:
// {name, posixAccounts[{primary, username, uid, gid, homeDirectory, accountId, operatingSystemType}],
// sshPublicKeys{fingerprint: {key, fingerprint, name}}}}; users/{user}/loginProfile; a caller acting for
// another user is 403 PERMISSION_DENIED. Usernames: a user's email with its non-alphanumerics as
// underscores, a service account's "sa_" + its unique id.
import { createHash } from 'node:crypto';
import type { Principal } from './gcpOauth';

interface Profile {
  readonly email: string;
  readonly username: string;
  readonly uid: number;
  readonly keys: Map<string, { key: string; expirationTimeUsec?: string }>;
  readonly projects: Set<string>;
}

export interface OsLoginAnswer {
  readonly status: number;
  readonly body: unknown;
}

export class OsLogin {
  private readonly profiles = new Map<string, Profile>();
  /** Identities holding roles/compute.osLogin or osAdminLogin on the project's instances. */
  readonly loginRole = new Set<string>();
  private nextUid = 1_000_000_001;

  static usernameOf(email: string): string {
    const sa = /^[^@]+@[^@]+\.iam\.gserviceaccount\.com$|^\d+-compute@developer\.gserviceaccount\.com$/.test(email);
    if (sa) return `sa_${BigInt(`0x${createHash('sha256').update(email).digest('hex').slice(0, 15)}`).toString()}`;
    return email
      .toLowerCase()
      .replace(/[^a-z0-9]/g, '_')
      .slice(0, 32);
  }

  profileOf(email: string): Profile {
    let p = this.profiles.get(email);
    if (!p) {
      p = { email, username: OsLogin.usernameOf(email), uid: this.nextUid++, keys: new Map(), projects: new Set() };
      this.profiles.set(email, p);
    }
    return p;
  }

  private json(p: Profile, project?: string): unknown {
    const projects = project ? [project] : [...p.projects];
    return {
      name: String(p.uid * 7),
      posixAccounts: projects
        .filter((x) => p.projects.has(x))
        .map((x) => ({
          primary: true,
          username: p.username,
          uid: String(p.uid),
          gid: String(p.uid),
          homeDirectory: `/home/${p.username}`,
          operatingSystemType: 'LINUX',
          accountId: x,
          name: `users/${p.email}/projects/${x}`,
        })),
      sshPublicKeys: Object.fromEntries(
        [...p.keys.entries()].map(([fp, k]) => [
          fp,
          {
            key: k.key,
            fingerprint: fp,
            name: `users/${p.email}/sshPublicKeys/${fp}`,
            ...(k.expirationTimeUsec ? { expirationTimeUsec: k.expirationTimeUsec } : {}),
          },
        ]),
      ),
    };
  }

  private deny(): OsLoginAnswer {
    return { status: 403, body: { error: { code: 403, message: 'The caller does not have permission', status: 'PERMISSION_DENIED' } } };
  }

  /** POST users/{user}:importSshPublicKey. */
  importKey(caller: Principal, user: string, projectId: string | null, body: string): OsLoginAnswer {
    if (caller.kind === 'federated' || caller.email !== user) return this.deny();
    const input = JSON.parse(body || '{}') as { key?: string; expirationTimeUsec?: string };
    const key = (input.key ?? '').trim();
    if (!/^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp256) [A-Za-z0-9+/=]+/.test(key))
      return { status: 400, body: { error: { code: 400, message: 'Invalid SSH key.', status: 'INVALID_ARGUMENT' } } };
    const p = this.profileOf(user);
    const fp = createHash('sha256').update(key.split(/\s+/).slice(0, 2).join(' ')).digest('hex');
    p.keys.set(fp, { key, ...(input.expirationTimeUsec ? { expirationTimeUsec: input.expirationTimeUsec } : {}) });
    if (projectId) p.projects.add(projectId);
    return { status: 200, body: { loginProfile: this.json(p, projectId ?? undefined) } };
  }

  /** GET users/{user}/loginProfile. */
  loginProfile(caller: Principal, user: string, projectId: string | null): OsLoginAnswer {
    if (caller.kind === 'federated' || caller.email !== user) return this.deny();
    return { status: 200, body: this.json(this.profileOf(user), projectId ?? undefined) };
  }

  /** What the guest's sshd would accept for `username` under OS Login: the owning identity's keys, if it may log in. */
  authorizedKeys(username: string, project: string): string[] {
    const p = [...this.profiles.values()].find((x) => x.username === username && x.projects.has(project));
    if (!p || !this.loginRole.has(p.email)) return [];
    return [...p.keys.values()].map((k) => k.key);
  }
}
