// The key pair instances are launched with: made once per install, the private half in a 0600 file
// beside the extension's storage, the public half handed to the cloud. Never in a run record or log.
import { existsSync, mkdirSync, readFileSync, writeFileSync, chmodSync } from 'node:fs';
import { dirname } from 'node:path';
import { loadSsh2 } from '../ssh/ssh2Module';

export interface CloudKey {
  readonly privateKeyPath: string;
  readonly publicKey: string;
}

export async function ensureCloudKey(privateKeyPath: string): Promise<CloudKey> {
  const pubPath = `${privateKeyPath}.pub`;
  if (existsSync(privateKeyPath) && existsSync(pubPath)) {
    return { privateKeyPath, publicKey: readFileSync(pubPath, 'utf8').trim() };
  }
  // The same loader as every SSH connection: the lazily loaded bundle exposes ssh2 as a default export.
  const { utils } = await loadSsh2();
  const pair = utils.generateKeyPairSync('ed25519', { comment: 'remote-finetune' });
  mkdirSync(dirname(privateKeyPath), { recursive: true, mode: 0o700 });
  writeFileSync(privateKeyPath, pair.private, { mode: 0o600 });
  chmodSync(privateKeyPath, 0o600);
  writeFileSync(pubPath, `${pair.public.trim()}\n`, { mode: 0o644 });
  return { privateKeyPath, publicKey: pair.public.trim() };
}
