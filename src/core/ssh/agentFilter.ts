// IdentitiesOnly as OpenSSH means it: only the configured identities are offered, but one the agent holds is
// still signed by the agent (no passphrase asked). Offering every agent key instead is what trips a server's
// MaxAuthTries ("Too many authentication failures") for people with many keys loaded.
import { existsSync, readFileSync } from 'node:fs';
import type { SshModule } from './ssh2Module';
import type { BaseAgent, IdentityCallback, ParsedKey, SignCallback, SigningRequestOptions } from 'ssh2';

/**
 * The public key blobs (base64) of identity files: from `<file>.pub` when present (works for encrypted keys),
 * else from the private key itself when it is not encrypted.
 */
export function publicBlobsOf(ssh2: SshModule, keyFiles: readonly string[]): Set<string> {
  const blobs = new Set<string>();
  for (const path of keyFiles) {
    const pub = `${path}.pub`;
    if (existsSync(pub)) {
      const blob = /^\s*\S+\s+([A-Za-z0-9+/=]+)/.exec(readFileSync(pub, 'utf8'))?.[1];
      if (blob) {
        blobs.add(Buffer.from(blob, 'base64').toString('base64'));
        continue;
      }
    }
    try {
      const parsed = ssh2.utils.parseKey(readFileSync(path));
      const key = Array.isArray(parsed) ? parsed[0] : parsed;
      if (key && !(key instanceof Error)) blobs.add(key.getPublicSSH().toString('base64'));
    } catch {
      /* unreadable: nothing to match */
    }
  }
  return blobs;
}

/** An agent that lists only the keys in `allowed` (public blobs, base64) and signs through `socket`'s agent. */
export function filteredAgent(ssh2: SshModule, socket: string, allowed: ReadonlySet<string>): BaseAgent {
  const inner = new ssh2.OpenSSHAgent(socket);
  const blobOf = (k: unknown): string | undefined => {
    const key = k as Partial<ParsedKey>;
    return typeof key.getPublicSSH === 'function' ? key.getPublicSSH().toString('base64') : undefined;
  };
  class IdentitiesOnlyAgent extends ssh2.BaseAgent<ParsedKey> {
    override getIdentities(cb: IdentityCallback<ParsedKey>): void {
      inner.getIdentities((err, keys) => {
        if (err || !keys) return cb(err);
        cb(
          null,
          keys.filter((k) => allowed.has(blobOf(k) ?? '')),
        );
      });
    }

    override sign(pubKey: ParsedKey, data: Buffer, options: SigningRequestOptions | SignCallback, cb?: SignCallback): void {
      if (typeof options === 'function') inner.sign(pubKey, data, options);
      else inner.sign(pubKey, data, options, cb);
    }
  }
  return new IdentitiesOnlyAgent();
}
