// Host key checking against OpenSSH known_hosts files (plain and hashed `|1|salt|hmac` entries, `[host]:port`
// for non-default ports, @revoked) plus the extension's own store, which is written in the same format.
// The verdicts follow OpenSSH 9.2's hostfile.c and sshconnect.c; test/unit/ssh/knownHostsVsOpenssh.test.ts
// checks them against the real ssh client.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { readFileSync, existsSync, appendFileSync, mkdirSync } from 'node:fs';
import { isIP } from 'node:net';
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

/**
 * How known_hosts names a host: bare for port 22, "[host]:port" otherwise; lowercased (unless an address) as
 * ssh does before any lookup, which matters for hashed entries (a hash of "Gpu" never matches one of "gpu").
 */
export function knownHostsName(host: string, port: number): string {
  const h = isIP(host) ? host : host.toLowerCase();
  return port === 22 ? h : `[${h}]:${port}`;
}

function globToRegExp(pattern: string): RegExp {
  return new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
    'i',
  );
}

/**
 * Whether a line's host field names `name` (match_maybe_hashed()): a hashed field is one `|1|salt|hmac` with
 * a 20-byte salt, compared whole; otherwise comma-separated patterns, case-insensitive, `!` vetoing the line.
 */
function hostFieldMatches(field: string, name: string): boolean {
  if (field.startsWith('|')) {
    const [empty, magic, salt, hash, ...extra] = field.split('|');
    if (empty !== '' || magic !== '1' || !salt || !hash || extra.length > 0) return false;
    const key = Buffer.from(salt, 'base64');
    return key.length === 20 && createHmac('sha1', key).update(name).digest('base64') === hash;
  }
  let matched = false;
  for (const pat of field.split(',')) {
    if (pat.startsWith('!')) {
      if (globToRegExp(pat.slice(1)).test(name)) return false;
      continue;
    }
    if (globToRegExp(pat).test(name)) matched = true;
  }
  return matched;
}

interface Entry {
  readonly marker?: string;
  readonly hosts: string;
  readonly type: string;
  readonly blob: Buffer;
}

const MARKERS = ['@revoked', '@cert-authority'];

/**
 * One known_hosts line, or undefined for what OpenSSH skips: comments, an unknown or second marker, and a key
 * that does not parse as the type it claims (sshkey_read() refuses those, so they never count as a change).
 */
function parseLine(line: string): Entry | undefined {
  const t = line.trim();
  if (t === '' || t.startsWith('#')) return undefined;
  const parts = t.split(/\s+/);
  let marker: string | undefined;
  if (parts[0]?.startsWith('@')) marker = parts.shift();
  if (marker !== undefined && !MARKERS.includes(marker)) return undefined;
  const [hosts, type, b64] = parts;
  if (!hosts || hosts.startsWith('@') || !type || !b64) return undefined;
  const blob = Buffer.from(b64, 'base64');
  if (keyTypeOf(blob) !== type) return undefined;
  return { ...(marker ? { marker } : {}), hosts, type, blob };
}

/** Every parsed line of `files` (missing or unreadable files are skipped), with the file it came from. */
function* fileEntries(files: readonly string[]): Generator<Entry & { readonly file: string }> {
  for (const file of files) {
    if (!existsSync(file)) continue;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split(/\r?\n/)) {
      const e = parseLine(line);
      if (e) yield { ...e, file };
    }
  }
}

/** Every plain (not @cert-authority) entry listed for `host:port` in `files`, with the file it came from. */
function entriesFor(files: readonly string[], host: string, port: number): Array<Entry & { readonly file: string }> {
  const name = knownHostsName(host, port);
  return [...fileEntries(files)].filter((e) => e.marker !== '@cert-authority' && hostFieldMatches(e.hosts, name));
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
  return preferKeyTypes(
    entriesFor(files, host, port)
      .filter((e) => e.marker !== '@revoked')
      .map((e) => e.type),
    defaults,
  );
}

/** `defaults` with the algorithms of the given key types first (a pinned key's type is then what the server shows). */
export function preferKeyTypes<T extends string>(types: readonly string[], defaults: readonly T[]): T[] {
  const known = new Set(types.flatMap((t) => ALGORITHMS_FOR_TYPE[t] ?? []));
  const first = defaults.filter((a) => known.has(a));
  return [...first, ...defaults.filter((a) => !known.has(a))];
}

/**
 * Checks `key` for `host:port` against every file, as check_hostkeys_by_key_or_type() does. A key marked
 * @revoked for the host in any file is refused wherever it is also listed. Otherwise a key listed for the host
 * is known; any other key on record for the host, of whatever type, makes it a change. (Recorded types are
 * offered first, see preferKnownHostKeyAlgorithms, so a server that still has a recorded key is checked
 * against it; one that now only shows a key of another type is refused, as ssh does.) @cert-authority lines
 * only vouch for host certificates, which this client never negotiates, so they do not count.
 */
export function checkHostKey(files: readonly string[], host: string, port: number, key: HostKey): HostKeyVerdict {
  const v = verdictFor(files, host, port, key);
  if (v.kind !== 'unknown' || port === 22) return v;
  // Nothing on record for [host]:port: ssh then also accepts the key recorded under the bare name ("checking
  // without port identifier"), where another key is no change. A key revoked there stays refused (ssh warns
  // of it, then treats the host as new).
  const bare = verdictFor(files, host, 22, key);
  return bare.kind === 'known' || bare.kind === 'revoked' ? bare : v;
}

function verdictFor(files: readonly string[], host: string, port: number, key: HostKey): HostKeyVerdict {
  const fingerprint = fingerprintSha256(key.blob);
  const entries = entriesFor(files, host, port);
  const revoked = entries.find((e) => e.marker === '@revoked' && e.blob.equals(key.blob));
  if (revoked) return { kind: 'revoked', fingerprint, file: revoked.file };
  const recorded = entries.filter((e) => e.marker === undefined);
  const same = recorded.find((e) => e.type === key.type && e.blob.equals(key.blob));
  if (same) return { kind: 'known', file: same.file };
  if (recorded.length > 0) {
    return { kind: 'changed', fingerprint, knownFingerprints: [...new Set(recorded.map((e) => fingerprintSha256(e.blob)))], file: recorded[0]!.file };
  }
  return { kind: 'unknown', fingerprint };
}

/** StrictHostKeyChecking as ssh_config(5) spells it (true/false/off folded in by resolveHost). */
export type StrictHostKeyChecking = 'yes' | 'no' | 'ask' | 'accept-new';
export type HostKeyAction = 'accept' | 'accept-and-remember' | 'ask' | 'refuse';

/**
 * What to do with a verdict under the host's StrictHostKeyChecking, as ssh(1) does it, with one deliberate
 * difference: OpenSSH under `no` still connects to a host whose key CHANGED (with password and
 * keyboard-interactive login turned off); this extension never does, in any mode: it ships code and secrets.
 *   known → accept; revoked or changed → refuse;
 *   unknown → yes: refuse, accept-new and no: accept and remember, ask (the default): ask the user.
 */
export function hostKeyAction(kind: HostKeyVerdict['kind'], mode: StrictHostKeyChecking | undefined): HostKeyAction {
  if (kind === 'known') return 'accept';
  if (kind !== 'unknown') return 'refuse';
  if (mode === 'yes') return 'refuse';
  if (mode === 'accept-new' || mode === 'no') return 'accept-and-remember';
  return 'ask';
}

/**
 * The file of a @cert-authority line that covers `host:port`, if any. ssh2 does not negotiate host
 * certificates, so such a CA cannot vouch for the key here; the prompt and the refusal say so instead of
 * leaving the user wondering why a host ssh(1) trusts is "unknown".
 */
export function certAuthorityFor(files: readonly string[], host: string, port: number): string | undefined {
  const names = [knownHostsName(host, port), ...(port === 22 ? [] : [host])];
  for (const e of fileEntries(files)) if (e.marker === '@cert-authority' && names.some((n) => hostFieldMatches(e.hosts, n))) return e.file;
  return undefined;
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
  return (
    `Host key for ${knownHostsName(host, port)} has CHANGED: it now presents ${v.fingerprint}, but ${v.file} records ${v.knownFingerprints.join(', ')}. ` +
    'This can mean someone is intercepting the connection, or the host was reinstalled. The connection was refused; ' +
    'remove the old entry from that file only if you know why the key changed.'
  );
}
