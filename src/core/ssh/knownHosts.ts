// Host key checking against OpenSSH known_hosts files (plain and hashed `|1|salt|hmac` entries, `[host]:port`
// for non-default ports, @revoked) plus the extension's own store, which is written in the same format.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { readFileSync, existsSync, appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

export interface HostKey {
  /** e.g. "ssh-ed25519". */
  readonly type: string;
  /** The raw public key blob (what the server sends). */
  readonly blob: Buffer;
}

export type HostKeyVerdict =
  | { readonly kind: 'known'; readonly file: string }
  | { readonly kind: 'unknown'; readonly fingerprint: string }
  | { readonly kind: 'changed'; readonly fingerprint: string; readonly knownFingerprints: readonly string[]; readonly file: string }
  | { readonly kind: 'revoked'; readonly fingerprint: string; readonly file: string };

/** "SHA256:…" exactly as `ssh-keygen -l` prints it (base64 without padding). */
export function fingerprintSha256(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** The type name embedded at the start of an SSH public key blob. */
export function keyTypeOf(blob: Buffer): string {
  if (blob.length < 4) return '';
  const n = blob.readUInt32BE(0);
  return blob.subarray(4, 4 + n).toString('latin1');
}

/** How known_hosts names a host: bare for port 22, "[host]:port" otherwise. */
export function knownHostsName(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

function globToRegExp(pattern: string): RegExp {
  return new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`, 'i');
}

function hostFieldMatches(field: string, name: string): boolean {
  if (field.startsWith('|1|')) {
    const [, , salt, hash] = field.split('|');
    if (!salt || !hash) return false;
    const mac = createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64');
    return mac === hash;
  }
  let matched = false;
  for (const pat of field.split(',')) {
    if (pat.startsWith('!')) { if (globToRegExp(pat.slice(1)).test(name)) return false; continue; }
    if (globToRegExp(pat).test(name)) matched = true;
  }
  return matched;
}

interface Entry { readonly marker?: string; readonly hosts: string; readonly type: string; readonly blob: Buffer }

function parseLine(line: string): Entry | undefined {
  const t = line.trim();
  if (t === '' || t.startsWith('#')) return undefined;
  const parts = t.split(/\s+/);
  let marker: string | undefined;
  if (parts[0]?.startsWith('@')) marker = parts.shift();
  const [hosts, type, b64] = parts;
  if (!hosts || !type || !b64) return undefined;
  return { ...(marker ? { marker } : {}), hosts, type, blob: Buffer.from(b64, 'base64') };
}

/** Every plain (not @cert-authority) entry listed for `host:port` in `files`, with the file it came from. */
function entriesFor(files: readonly string[], host: string, port: number): Array<Entry & { readonly file: string }> {
  const names = [knownHostsName(host, port)];
  const out: Array<Entry & { readonly file: string }> = [];
  for (const file of files) {
    if (!existsSync(file)) continue;
    let text: string;
    try { text = readFileSync(file, 'utf8'); } catch { continue; }
    for (const line of text.split(/\r?\n/)) {
      const e = parseLine(line);
      if (!e || e.marker === '@cert-authority') continue;
      if (names.some((n) => hostFieldMatches(e.hosts, n))) out.push({ ...e, file });
    }
  }
  return out;
}

// ssh2's host key algorithms for each known_hosts key type (RSA keys sign with SHA-2 first).
const ALGORITHMS_FOR_TYPE: Readonly<Record<string, readonly string[]>> = {
  'ssh-ed25519': ['ssh-ed25519'],
  'ecdsa-sha2-nistp256': ['ecdsa-sha2-nistp256'],
  'ecdsa-sha2-nistp384': ['ecdsa-sha2-nistp384'],
  'ecdsa-sha2-nistp521': ['ecdsa-sha2-nistp521'],
  'ssh-rsa': ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'],
};

/**
 * The host key algorithms to offer, those of key types already recorded for the host first, as OpenSSH
 * orders them. A host known only by its RSA key is then checked against that key, so a different key is
 * "changed" and refused instead of "unknown" and offered for acceptance. `defaults` is ssh2's own list.
 */
export function preferKnownHostKeyAlgorithms<T extends string>(files: readonly string[], host: string, port: number, defaults: readonly T[]): T[] {
  const known = new Set(entriesFor(files, host, port).filter((e) => e.marker !== '@revoked').flatMap((e) => ALGORITHMS_FOR_TYPE[e.type] ?? []));
  const first = defaults.filter((a) => known.has(a));
  return [...first, ...defaults.filter((a) => !known.has(a))];
}

/**
 * Checks `key` for `host:port` against every file. A key listed for the host anywhere is known; if the host
 * has keys of the same type but none equal, the key has changed. Keys of other types do not count as a change
 * (preferKnownHostKeyAlgorithms makes the connection negotiate a recorded type when the server has one), so
 * they leave the verdict at unknown.
 */
export function checkHostKey(files: readonly string[], host: string, port: number, key: HostKey): HostKeyVerdict {
  const fingerprint = fingerprintSha256(key.blob);
  const sameType: { fp: string; file: string }[] = [];
  for (const e of entriesFor(files, host, port)) {
    if (e.marker === '@revoked') {
      if (e.blob.equals(key.blob)) return { kind: 'revoked', fingerprint, file: e.file };
      continue;
    }
    if (e.type === key.type && e.blob.equals(key.blob)) return { kind: 'known', file: e.file };
    if (e.type === key.type) sameType.push({ fp: fingerprintSha256(e.blob), file: e.file });
  }
  if (sameType.length > 0) {
    return { kind: 'changed', fingerprint, knownFingerprints: [...new Set(sameType.map((s) => s.fp))], file: sameType[0]!.file };
  }
  return { kind: 'unknown', fingerprint };
}

/** Appends an accepted key to the extension's own store, hashed like `HashKnownHosts yes` writes it. */
export function rememberHostKey(storeFile: string, host: string, port: number, key: HostKey): void {
  mkdirSync(dirname(storeFile), { recursive: true });
  const salt = randomBytes(20);
  const mac = createHmac('sha1', salt).update(knownHostsName(host, port)).digest('base64');
  appendFileSync(storeFile, `|1|${salt.toString('base64')}|${mac} ${key.type} ${key.blob.toString('base64')}\n`, { mode: 0o600 });
}

/** The message shown when a host presents a different key than the one on record. */
export function changedHostKeyMessage(host: string, port: number, v: Extract<HostKeyVerdict, { kind: 'changed' }>): string {
  return `Host key for ${knownHostsName(host, port)} has CHANGED: it now presents ${v.fingerprint}, but ${v.file} records ${v.knownFingerprints.join(', ')}. ` +
    'This can mean someone is intercepting the connection, or the host was reinstalled. The connection was refused; ' +
    'remove the old entry from that file only if you know why the key changed.';
}
