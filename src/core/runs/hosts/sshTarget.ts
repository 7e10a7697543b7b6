// Turns what a run record or a run spec says about a host into the target core/ssh connects to.
import type { SshTarget } from '../../ssh/session';

/**
 * "alias" stays an ssh_config alias (ssh_config supplies user, port, keys); "user@host", "host:port" and
 * "user@[::1]:2222" are split. Explicit fields win over the string.
 */
export function sshTargetOf(
  host: string,
  extra: { user?: string; defaultUser?: string; port?: number; identityFile?: string; hostKeyAlias?: string; pinnedHostKeys?: readonly string[] } = {},
): SshTarget {
  const m = /^(?:([^@\s]+)@)?(\[[^\]]+\]|[^:\s@]+)(?::(\d{1,5}))?$/.exec(host.trim());
  const user = extra.user ?? m?.[1];
  const hostname = m?.[2] ? m[2].replace(/^\[|\]$/g, '') : host.trim();
  const port = extra.port ?? (m?.[3] ? Number(m[3]) : undefined);
  return {
    host: hostname,
    ...(user ? { user } : {}),
    ...(extra.defaultUser ? { defaultUser: extra.defaultUser } : {}),
    ...(port ? { port } : {}),
    ...(extra.identityFile ? { identityFile: extra.identityFile } : {}),
    ...(extra.hostKeyAlias ? { hostKeyAlias: extra.hostKeyAlias } : {}),
    ...(extra.pinnedHostKeys?.length ? { pinnedHostKeys: extra.pinnedHostKeys } : {}),
  };
}

/**
 * The name a provisioned instance's host key is kept under: one per instance, so an address the cloud hands
 * to a new instance later is a new host, never a "changed key" to click through.
 */
export function instanceHostKeyAlias(provider: string, instanceId: string): string {
  return `rft-${provider}-${instanceId.replace(/[^A-Za-z0-9._-]/g, '_')}`.toLowerCase();
}
