// No blind first use for instances we launch: the extension makes the instance's SSH host key itself and
// hands it over in the launch's user-data, where cloud-init's ssh module installs it (cc_ssh: `ssh_keys`
// with <type>_private/<type>_public, `ssh_deletekeys` drops the image's keys, `ssh_genkeytypes: []` makes no
// others). The first connection then checks that key (SshTarget.pinnedHostKeys) instead of asking the user to
// trust whatever answers at a fresh address. The private key lives only in the user-data, which the account
// that launched the instance can read anyway; it is never written to disk here.
import { generateKeyPairSync } from 'node:crypto';
import { stringify } from 'yaml';

export interface InstanceHostKey {
  /** OpenSSH private key (PEM "OPENSSH PRIVATE KEY"), for the user-data only. */
  readonly privateKey: string;
  /** "ssh-ed25519 AAAA…", as the first connection pins it. */
  readonly publicKey: string;
}

/** An Ed25519 host key in OpenSSH's formats, made with Node's crypto (no ssh-keygen needed on the laptop). */
export function generateInstanceHostKey(): InstanceHostKey {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const seed = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(-32);
  const str = (b: Buffer): Buffer => Buffer.concat([u32(b.length), b]);
  const pubBlob = Buffer.concat([str(Buffer.from('ssh-ed25519')), str(raw)]);
  const check = Math.floor(Math.random() * 0xffffffff);
  // openssh-key-v1 (PROTOCOL.key): one unencrypted key, padded to the 8-byte block size.
  let body = Buffer.concat([
    u32(check),
    u32(check),
    str(Buffer.from('ssh-ed25519')),
    str(raw),
    str(Buffer.concat([seed, raw])),
    str(Buffer.from('rft-instance')),
  ]);
  const pad = (8 - (body.length % 8)) % 8;
  body = Buffer.concat([body, Buffer.from(Array.from({ length: pad }, (_, i) => i + 1))]);
  const blob = Buffer.concat([
    Buffer.from('openssh-key-v1\0'),
    str(Buffer.from('none')),
    str(Buffer.from('none')),
    str(Buffer.alloc(0)),
    u32(1),
    str(pubBlob),
    str(body),
  ]);
  const b64 = blob
    .toString('base64')
    .replace(/(.{70})/g, '$1\n')
    .replace(/\n$/, '');
  return {
    privateKey: `-----BEGIN OPENSSH PRIVATE KEY-----\n${b64}\n-----END OPENSSH PRIVATE KEY-----\n`,
    publicKey: `ssh-ed25519 ${pubBlob.toString('base64')}`,
  };
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

/** The #cloud-config part that installs `key` as the instance's only SSH host key. */
export function cloudInitHostKey(key: InstanceHostKey): string {
  return `#cloud-config\n${stringify({
    ssh_deletekeys: true,
    ssh_genkeytypes: [],
    ssh_keys: { ed25519_private: key.privateKey, ed25519_public: key.publicKey },
  })}`;
}
