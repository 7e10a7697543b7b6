// Incremental workspace sync. One round trip reads the remote manifest (what we sent last time, with hashes)
// and the remote tree's sizes and mtimes; files whose hash, size and mtime all still match stay put. Everything
// else travels as tar streams over exec channels (large files as byte ranges over several channels: stripes.ts)
// into a staging dir beside the target, and a small script
// then renames each file into place (atomic per file) and applies deletes. Only files that an earlier sync
// sent are ever deleted: what a run wrote on the host (checkpoints, outputs) is left alone.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createHash, randomBytes } from 'node:crypto';
import { basename, join } from 'node:path';
import type { SshSession } from './session';
import { shellQuote } from './quote';
import { scanWorkspace, largeContentWarnings, hashFile, saveHashCache, readHashCache } from './localManifest';
import type { LocalFile, LargeContentWarning } from './localManifest';
import { tarChunks } from './tarStream';
import type { TarEntry } from './tarStream';
import { finishCommand, inPool, planPieces, sendPiece } from './stripes';
import type { StripeFile } from './stripes';

export interface SyncOptions {
  readonly localRoot: string;
  /** Absolute remote directory, or one relative to the remote $HOME (e.g. ".remote-finetune/workspaces/x"). */
  readonly remoteDir: string;
  /** Local hash cache (outside the workspace). */
  readonly cacheFile?: string;
  /** Asked before large data/checkpoint folders are sent; false cancels the sync. Absent: send. */
  readonly confirmLarge?: (warnings: readonly LargeContentWarning[]) => Promise<boolean>;
  readonly largeLimits?: { folderBytes?: number; largeBytes?: number };
  readonly extraIgnores?: readonly string[];
  readonly signal?: AbortSignal;
  readonly onProgress?: (p: { phase: 'scan' | 'compare' | 'upload' | 'done'; files?: number; bytes?: number }) => void;
  /**
   * Parallel tar streams (exec channels) for many files, default 2: file creation on the host is the cost
   * of a first sync, and two extracting processes overlap it.
   */
  readonly streams?: number;
  /** Files at least this large get an identity token instead of a hash (default IDENTITY_BYTES). */
  readonly identityBytes?: number;
  /**
   * Channels that carry large files (at least identityBytes) in byte ranges at once, default 4 (stripes.ts):
   * over a long link one channel is capped by its window, whatever the link's speed. 1 sends them in the tar.
   */
  readonly stripes?: number;
}

export interface SyncResult {
  readonly remoteDir: string;
  readonly uploaded: number;
  readonly uploadedBytes: number;
  readonly deleted: number;
  readonly unchanged: number;
  readonly warnings: readonly LargeContentWarning[];
  readonly cancelled: boolean;
}

type ManifestEntry = readonly [size: number, mtime: number, hash: string];
interface RemoteManifest { readonly v: 1; readonly files: Record<string, ManifestEntry> }

/** Where the manifest lives: beside the synced dir, so the synced tree stays byte-identical to the workspace. */
export function manifestPathFor(remoteDir: string): string {
  const i = remoteDir.lastIndexOf('/');
  return `${remoteDir.slice(0, i)}/.${remoteDir.slice(i + 1)}.rft-manifest.json`;
}

/** A remote dir for a workspace: ~/.remote-finetune/workspaces/<name>-<short hash of the local path>. */
export function defaultRemoteDir(localRoot: string): string {
  const name = basename(localRoot).replace(/[^A-Za-z0-9._-]/g, '_') || 'workspace';
  return `.remote-finetune/workspaces/${name}-${createHash('sha256').update(localRoot).digest('hex').slice(0, 8)}`;
}

interface RemoteState { readonly manifest: RemoteManifest; readonly tree: Map<string, { size: number; mtime: number }> }

function validEntry(e: unknown): e is ManifestEntry {
  return Array.isArray(e) && e.length === 3 && Number.isSafeInteger(e[0]) && Number.isSafeInteger(e[1]) &&
    typeof e[2] === 'string' && /^(?:[0-9a-f]{64}|id:[0-9a-f]{61}|l:[0-9a-f]{62})$/.test(e[2]);
}

export function parseRemoteState(out: Buffer): RemoteState {
  const nul = out.indexOf(0);
  const manifestText = out.subarray(0, nul < 0 ? out.length : nul).toString('utf8');
  let manifest: RemoteManifest = { v: 1, files: {} };
  try {
    const m = JSON.parse(manifestText) as Partial<RemoteManifest>;
    if (m.v === 1 && m.files && typeof m.files === 'object') {
      // Anything malformed (a hand-edited or damaged manifest) is dropped: that file is simply sent again.
      const files: Record<string, ManifestEntry> = {};
      for (const [p, e] of Object.entries(m.files)) if (validEntry(e)) files[p] = e;
      manifest = { v: 1, files };
    }
  } catch { /* no manifest yet, or a damaged one: everything is re-sent */ }
  const tree = new Map<string, { size: number; mtime: number }>();
  if (nul >= 0) {
    for (const rec of out.subarray(nul + 1).toString('utf8').split('\0')) {
      const a = rec.indexOf(' ');
      const b = rec.indexOf(' ', a + 1);
      if (a < 0 || b < 0) continue;
      tree.set(rec.slice(b + 1), { size: Number(rec.slice(0, a)), mtime: Math.floor(Number(rec.slice(a + 1, b))) });
    }
  }
  return { manifest, tree };
}

/**
 * Files at least this large are not hashed. Their manifest entry holds an identity token instead, kept in the
 * local cache beside the file's (size, mtime, inode, ctime): hashing a checkpoint-sized file keeps a core busy
 * for seconds, competing with the encryption of the very bytes being sent, and the identity check is already
 * stricter than rsync's size-and-mtime quick check. The price: from another machine, or with the local cache
 * gone, such a file is sent again rather than recognised.
 */
export const IDENTITY_BYTES = 64 * 1024 * 1024;

function isIdentityToken(h: string): boolean {
  return h.startsWith('id:');
}

/** 'id:' and 61 random hex digits: the same length as a sha256, so manifest sizes stay predictable. */
function identityToken(): string {
  return `id:${randomBytes(31).toString('hex').slice(0, 61)}`;
}

/**
 * The manifest JSON for `entries`; an entry whose hash is '' gets 64 spaces, and `holes` says where (byte
 * offset) each of those starts, to be overwritten with the real hash later.
 */
export function manifestLayout(entries: ReadonlyArray<readonly [string, ManifestEntry]>): { bytes: Buffer; holes: Map<string, number> } {
  const parts: string[] = ['{"v":1,"files":{'];
  let at = Buffer.byteLength(parts[0]!);
  const holes = new Map<string, number>();
  entries.forEach(([path, [size, mtime, hash]], i) => {
    const head = `${i > 0 ? ',' : ''}${JSON.stringify(path)}:[${size},${mtime},"`;
    at += Buffer.byteLength(head);
    if (!hash) holes.set(path, at);
    const part = `${head}${hash || ' '.repeat(64)}"]`;
    parts.push(part);
    at += 64 + 2 + (hash ? Buffer.byteLength(hash) - 64 : 0);
  });
  parts.push('}}');
  return { bytes: Buffer.from(parts.join(''), 'utf8'), holes };
}

// Applies the ops list: deletes first (a file may be replaced by a directory of the same name), then renames
// from the staging dir, creating parent dirs. Perl is part of every Debian/Ubuntu base system; python3 otherwise.
// No modules: loading File::Path and File::Basename costs more than the renames of a small change.
const PERL_APPLY = `use strict; my ($stage, $dest, $list) = @ARGV; open(my $fh, '<', $list) or die "ops: $!"; local $/ = "\\0";
sub dn { my $p = shift; return '.' unless $p =~ s{/[^/]*$}{}; return $p eq '' ? '/' : $p; }
sub mkp { my $d = shift; return if -d $d; my $up = dn($d); mkp($up) if $up ne $d && $up ne '.'; mkdir($d) or -d $d or die "mkdir $d: $!\\n"; }
while (defined(my $op = <$fh>)) { chomp $op; my $p = <$fh>; chomp $p;
  if ($op eq 'D') { unlink("$dest/$p"); my $d = dn($p); while ($d ne '.' && $d ne '/' && rmdir("$dest/$d")) { $d = dn($d); } }
  elsif ($op eq 'R') { mkp(dn("$dest/$p")); rename("$stage/f/$p", "$dest/$p") or die "rename $p: $!\\n"; } }`;
const PY_APPLY = `import os,sys
stage,dest,lst=sys.argv[1:4]; parts=open(lst,'rb').read().split(b'\\0')
for op,p in zip(parts[0::2],parts[1::2]):
  p=os.fsdecode(p)
  if op==b'D':
    try: os.unlink(os.path.join(dest,p))
    except FileNotFoundError: pass
    d=os.path.dirname(p)
    while d:
      try: os.rmdir(os.path.join(dest,d))
      except OSError: break
      d=os.path.dirname(d)
  elif op==b'R':
    os.makedirs(os.path.dirname(os.path.join(dest,p)),exist_ok=True); os.replace(os.path.join(stage,'f',p),os.path.join(dest,p))`;

/**
 * Extracts the archive on stdin into `stage`. GNU tar and bsdtar read 1 MiB records (-b 2048): with the default
 * 10 KiB a GiB is a hundred thousand reads and writes, which doubled tar's system time in the upload benchmark,
 * and a short last record from a pipe is no error for either. BusyBox tar has no -b and keeps its default.
 */
function extractCommand(stage: string): string {
  return `rft_b=; if tar --version 2>/dev/null | grep -q -e GNU -e bsdtar; then rft_b='-b 2048'; fi; ` +
    `tar $rft_b -x -f - -C ${shellQuote(stage)} --no-same-owner`;
}

function applyCommand(dest: string, stage: string, manifest: string): string {
  const q = shellQuote;
  const ops = q(`${stage}/.rft-ops`);
  // A first sync renames the whole staged tree into place at once; later ones rename file by file.
  return `set -e; mkdir -p ${q(stage)}; ${extractCommand(stage)}; ` +
    // An empty archive means there was nothing to do.
    `if [ ! -f ${q(`${stage}/.rft-manifest.json`)} ]; then rm -rf ${q(stage)}; exit 0; fi; ` +
    `if [ ! -e ${q(dest)} ] && [ -d ${q(`${stage}/f`)} ]; then mv ${q(`${stage}/f`)} ${q(dest)}; ` +
    `else mkdir -p ${q(dest)}; if command -v perl >/dev/null 2>&1; then perl -e ${q(PERL_APPLY)} ${q(stage)} ${q(dest)} ${ops}; ` +
    `else python3 -c ${q(PY_APPLY)} ${q(stage)} ${q(dest)} ${ops}; fi; fi; ` +
    `mv -f ${q(`${stage}/.rft-manifest.json`)} ${q(manifest)}; rm -rf ${q(stage)}`;
}

/** Contiguous groups (directory neighbours stay together) of roughly equal bytes, counting 512 per header. */
function splitByBytes(entries: readonly TarEntry[], n: number): TarEntry[][] {
  if (n <= 1) return [[...entries]];
  const total = entries.reduce((a, e) => a + e.size + 512, 0);
  const groups: TarEntry[][] = [[]];
  let acc = 0;
  for (const e of entries) {
    if (acc >= (total / n) * groups.length && groups.length < n) groups.push([]);
    groups[groups.length - 1]!.push(e);
    acc += e.size + 512;
  }
  return groups.filter((g) => g.length > 0);
}

/** Sends the workspace to `remoteDir`; see the header comment for the protocol. */
export async function syncWorkspace(session: SshSession, options: SyncOptions): Promise<SyncResult> {
  const remoteDir = options.remoteDir.startsWith('/') ? options.remoteDir.replace(/\/+$/, '') : `${await session.home()}/${options.remoteDir.replace(/\/+$/, '')}`;
  options.onProgress?.({ phase: 'scan' });
  // The apply command is started now, beside the state read: it waits for its tar on stdin, so a sync with
  // changes costs one round trip of latency instead of two. With nothing to send it gets an empty archive.
  const parent = remoteDir.slice(0, remoteDir.lastIndexOf('/')) || '/';
  const stage = `${parent}/.${basename(remoteDir)}.rft-stage-${randomBytes(6).toString('hex')}`;
  const applying = session.execStream(applyCommand(remoteDir, stage, manifestPathFor(remoteDir))).then((ch) => {
    const stderr: Buffer[] = [];
    ch.stderr.on('data', (d: Buffer) => stderr.push(d));
    ch.on('data', () => undefined);
    return { ch, exit: session.exitOf(ch), stderr };
  });
  applying.catch(() => undefined);
  const finishEmpty = async (): Promise<void> => {
    const a = await applying;
    a.ch.end(Buffer.alloc(1024, 0));
    await a.exit;
  };
  const cached = readHashCache(options.cacheFile);
  const [local, stateOut] = await Promise.all([
    scanWorkspace(options.localRoot, {
      cache: cached,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.extraIgnores ? { extraIgnores: options.extraIgnores } : {}),
      // Files that must travel anyway are hashed while they stream; only look-alikes are hashed up front.
      hashMissing: false,
    }),
    session.exec(`M=${shellQuote(manifestPathFor(remoteDir))}; D=${shellQuote(remoteDir)}; ` +
      // A sync cut off by a dropped connection leaves its staging dir (the target itself is untouched);
      // those older than an hour are removed here. A live sync's stage is minutes old at most.
      `find ${shellQuote(parent)} -maxdepth 1 -name ${shellQuote(`.${basename(remoteDir).replace(/[[\]*?\\]/g, '\\$&')}.rft-stage-*`)} -mmin +60 -exec rm -rf {} + 2>/dev/null; ` +
      `if [ -f "$M" ]; then cat "$M"; fi; printf '\\0'; if [ -d "$D" ]; then cd "$D" && find . \\( -type f -o -type l \\) -printf '%s %T@ %P\\0'; fi`),
  ]).catch(async (err: unknown) => {
    await applying.then((a) => a.ch.close(), () => undefined);
    throw err;
  });
  if (stateOut.code !== 0) {
    await finishEmpty().catch(() => undefined);
    throw new Error(`reading remote state failed: ${stateOut.stderr.toString().trim()}`);
  }
  const warnings = largeContentWarnings(local, options.largeLimits);
  if (warnings.length > 0 && options.confirmLarge && !(await options.confirmLarge(warnings))) {
    await finishEmpty();
    return { remoteDir, uploaded: 0, uploadedBytes: 0, deleted: 0, unchanged: 0, warnings, cancelled: true };
  }
  options.onProgress?.({ phase: 'compare', files: local.length });
  const { manifest, tree } = parseRemoteState(stateOut.stdout);
  const send: LocalFile[] = [];
  const next: Array<[path: string, entry: ManifestEntry]> = [];
  const localPaths = new Set<string>();
  const finalFiles: LocalFile[] = [];
  let unchanged = 0;
  for (const f0 of local) {
    let f = f0;
    localPaths.add(f.path);
    const m = manifest.files[f.path];
    const r = tree.get(f.path);
    // Same size as sent, and the remote copy untouched since: only then can the content match; compare hashes.
    // An identity token matches only the cache entry it came from, so hashing could never make it match.
    // A link's mtime is not compared: BusyBox tar does not restore it, and its token already names the target
    // (only a same-length retarget made on the host would go unrepaired).
    const sameTime = r !== undefined && m !== undefined && (r.mtime === m[1] || (f.link !== undefined && m[2].startsWith('l:')));
    const candidate = m && r && m[0] === f.size && r.size === m[0] && sameTime;
    if (candidate && !f.hash && !isIdentityToken(m[2])) f = { ...f, hash: await hashFile(join(options.localRoot, f.path)) };
    if (candidate && m[2] === f.hash) {
      next.push([f.path, m]);
      unchanged++;
    } else {
      if (f.size >= (options.identityBytes ?? IDENTITY_BYTES)) f = { ...f, hash: identityToken() };
      send.push(f);
    }
    finalFiles.push(f);
  }
  const deletes = Object.keys(manifest.files).filter((p) => !localPaths.has(p) && tree.has(p));
  if (send.length === 0 && deletes.length === 0 && Object.keys(manifest.files).length === next.length) {
    saveHashCache(options.cacheFile, finalFiles, cached);
    await finishEmpty();
    options.onProgress?.({ phase: 'done', files: 0, bytes: 0 });
    return { remoteDir, uploaded: 0, uploadedBytes: 0, deleted: 0, unchanged, warnings, cancelled: false };
  }
  const ops = Buffer.from([...deletes.map((p) => `D\0${p}\0`), ...send.map((f) => `R\0${f.path}\0`)].join(''), 'utf8');
  const hashes = new Map<string, string>();
  const now = Math.floor(Date.now() / 1000);
  for (const f of send) next.push([f.path, [f.size, Math.floor(f.mtimeMs / 1000), f.hash]]);
  // The manifest is the last entry of the archive: by then every file before it was read and hashed for sending.
  // It is laid out now, with each unknown hash as a 64-byte hole filled in when reached (a tar header needs the
  // size up front, and every sha256 is 64 hex digits).
  const { bytes: manifestBytes, holes } = manifestLayout(next);
  // Large files (they carry identity tokens, so nothing needs their hash) go in stripes, the rest in tar.
  const lanes = Math.max(1, Math.min(8, options.stripes ?? 4));
  const stripeMin = options.identityBytes ?? IDENTITY_BYTES;
  const striped = lanes > 1 ? send.filter((f) => f.link === undefined && f.size >= stripeMin) : [];
  const inTar = striped.length > 0 ? send.filter((f) => !striped.includes(f)) : send;
  const fileEntries: TarEntry[] = inTar.map((f) => (f.link !== undefined
    ? { name: `f/${f.path}`, size: 0, mtime: Math.floor(f.mtimeMs / 1000), mode: 0o777, source: Buffer.alloc(0), linkTarget: f.link }
    : {
      name: `f/${f.path}`, size: f.size, mtime: Math.floor(f.mtimeMs / 1000), mode: f.mode, source: join(options.localRoot, f.path),
      ...(f.hash ? {} : { onHash: (h: string) => hashes.set(f.path, h) }),
    }));
  const closing: TarEntry[] = [
    { name: '.rft-ops', size: ops.length, mtime: now, mode: 0o600, source: ops },
    { name: '.rft-manifest.json', size: manifestBytes.length, mtime: now, mode: 0o644, source: () => {
      for (const [path, at] of holes) manifestBytes.write(hashes.get(path) ?? '', at, 'latin1');
      return manifestBytes;
    } },
  ];
  const uploadedBytes = send.reduce((n, f) => n + (f.link === undefined ? f.size : 0), 0);
  options.onProgress?.({ phase: 'upload', files: send.length, bytes: uploadedBytes });
  // Two streams overlap file creation on the host. Four were tried for large trees (each channel is capped by
  // its window over a long link) and were slower: on a small host the extracting processes compete for CPU.
  const groups = splitByBytes(fileEntries, fileEntries.length >= 64 ? Math.max(1, Math.min(8, options.streams ?? 2)) : 1);
  // Extra streams only extract into the staging dir; the apply stream ends with the ops list and the manifest
  // once they have all finished, so the renames see every file.
  const extras = groups.slice(1).map(async (group) => {
    const ch = await session.execStream(`set -e; mkdir -p ${shellQuote(stage)}; ${extractCommand(stage)}`);
    const exit = session.exitOf(ch);
    const err: Buffer[] = [];
    ch.stderr.on('data', (d: Buffer) => err.push(d));
    ch.on('data', () => undefined);
    await pipeline(Readable.from(tarChunks(group, options.signal)), ch);
    const st = await exit;
    if (!st || st.code !== 0) throw new Error(`remote extract failed (${st ? st.code ?? st.signal : 'connection lost'}): ${Buffer.concat(err).toString('utf8').trim().slice(0, 500)}`);
  });
  if (striped.length > 0) {
    extras.push((async () => {
      const files: StripeFile[] = striped.map((f) => ({ path: f.path, size: f.size, mode: f.mode, mtime: Math.floor(f.mtimeMs / 1000) }));
      await inPool(planPieces(files, lanes), lanes, (p) => sendPiece(session, join(options.localRoot, p.file.path), `${stage}/f/${p.file.path}`, p, options.signal));
      const done = await session.exec(files.map((f) => finishCommand(`${stage}/f/${f.path}`, f)).join(' && '));
      if (done.code !== 0) throw new Error(`setting the mode and time of striped files failed: ${done.stderr.toString().trim().slice(0, 500)}`);
    })());
  }
  extras.forEach((p) => p.catch(() => undefined));
  const { ch, exit, stderr } = await applying;
  async function* applyStream(): AsyncGenerator<Buffer, void, undefined> {
    yield* tarChunks(groups[0] ?? [], options.signal, { terminate: false });
    await Promise.all(extras);
    yield* tarChunks(closing, options.signal);
  }
  // A dropped connection surfaces as a stream error ("Premature close") or a missing exit status; say what
  // it means for the user's files instead.
  const lost = (err?: unknown): Error => new Error(`The SSH connection to ${session.resolved.alias} was lost while syncing to ${remoteDir}. ` +
    'Nothing was half-written (each file is renamed into place whole); sync again to finish.', err === undefined ? {} : { cause: err });
  await pipeline(Readable.from(applyStream()), ch, { end: true }).catch((err: unknown) => {
    ch.close();
    throw session.closed || /premature close|ECONNRESET|not connected|no response/i.test(String(err)) ? lost(err) : err;
  });
  const status = await exit;
  if (!status && session.closed) throw lost();
  if (!status || status.code !== 0) {
    throw new Error(`remote apply failed (${status ? status.code ?? status.signal : 'connection lost'}): ${Buffer.concat(stderr).toString('utf8').trim().slice(0, 800)}`);
  }
  saveHashCache(options.cacheFile, finalFiles.map((f) => (f.hash ? f : { ...f, hash: hashes.get(f.path) ?? '' })), cached);
  options.onProgress?.({ phase: 'done', files: send.length, bytes: uploadedBytes });
  return { remoteDir, uploaded: send.length, uploadedBytes, deleted: deletes.length, unchanged, warnings, cancelled: false };
}
