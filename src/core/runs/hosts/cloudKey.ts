// The key pair instances are launched with: made once per install, the private half in a 0600 file
// beside the extension's storage, the public half handed to the cloud. Never in a run record or log.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { loadSsh2 } from '../../ssh/ssh2Module';
import { createOnce } from '../store/createOnce';

export interface CloudKey {
  readonly privateKeyPath: string;
  readonly publicKey: string;
}

export async function ensureCloudKey(privateKeyPath: string): Promise<CloudKey> {
  const { utils } = await loadSsh2();
  if (!existsSync(privateKeyPath)) {
    // The same loader as every SSH connection: the lazily loaded bundle exposes ssh2 as a default export.
    const pair = utils.generateKeyPairSync('ed25519', { comment: 'remote-finetune' });
    // Made whole under its name or not at all: two windows launching their first instance at once must not end
    // with one window's private key beside the other's public key (instances it could never log in to).
    createOnce(privateKeyPath, pair.private, 0o600);
  }
  // The public half is always derived from the private key on disk, whichever window made it; the .pub file
  // beside it is for the person (ssh-copy-id, a cloud console) and is rewritten when missing or different.
  const parsed = utils.parseKey(readFileSync(privateKeyPath, 'utf8'));
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!key || key instanceof Error) throw new Error(`${privateKeyPath} is not a readable private key${key instanceof Error ? `: ${key.message}` : ''}`);
  const publicKey = `${key.type} ${key.getPublicSSH().toString('base64')} remote-finetune`;
  const pubPath = `${privateKeyPath}.pub`;
  const onDisk = existsSync(pubPath) ? readFileSync(pubPath, 'utf8').trim() : '';
  if (onDisk.split(' ').slice(0, 2).join(' ') !== publicKey.split(' ').slice(0, 2).join(' ')) writeFileSync(pubPath, `${publicKey}\n`, { mode: 0o644 });
  return { privateKeyPath, publicKey };
}
