// Incremental workspace sync. One round trip reads the remote manifest (what we sent last time, with hashes)
// and the remote tree's sizes and mtimes; files whose hash, size and mtime all still match stay put. Everything
// else travels as tar streams over exec channels (large files as byte ranges over several channels: stripes.ts)
// into a staging dir beside the target, and a small script
// then renames each file into place (atomic per file) and applies deletes. Only files that an earlier sync
// sent are ever deleted: what a run wrote on the host (checkpoints, outputs) is left alone.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomBytes } from 'node:crypto';
import { basename, join } from 'node:path';
import type { SshSession } from './session';
import { shellQuote } from './quote';
import { scanWorkspace, largeContentWarnings, saveHashCache, readHashCache } from './localManifest';
import type { LargeContentWarning, LocalFile } from './localManifest';
import { IDENTITY_BYTES, manifestLayout, parseRemoteState, planSync } from './syncPlan';
import type { ManifestEntry } from './syncPlan';
import { applyCommand, extractCommand, manifestPathFor, stateCommand } from './syncRemote';
import { parentDirEntries, tarChunks } from './tarStream';
import type { TarEntry } from './tarStream';
import { finishCommand, inPool, planPieces, sendPiece } from './stripes';
import type { StripeFile } from './stripes';

export interface SyncOptions {
  readonly localRoot: string;
  /** Absolute remote directory, or one relative to the remote $HOME (e.g. ".remote-finetune/workspaces/x"). */
  readonly remoteDir: string;
  /** Local hash cache (outside the workspace). */
  readonly cacheFile?: string;
  /**
   * Asked before large data/checkpoint folders are sent: true sends them, 'exclude' leaves them out of this sync,
   * false cancels it. Absent: send.
   */
  readonly confirmLarge?: (warnings: readonly LargeContentWarning[]) => Promise<LargeContentAnswer>;
  readonly largeLimits?: { folderBytes?: number; largeBytes?: number };
  readonly extraIgnores?: readonly string[];
  readonly signal?: AbortSignal;
  readonly onProgress?: (p: { phase: 'scan' | 'compare' | 'upload' | 'done'; files?: number; bytes?: number }) => void;
  /** Parallel tar streams (exec channels) for many files, 1–8; default by the link's round trip (defaultStreams). */
  readonly streams?: number;
  /** Files at least this large get an identity token instead of a hash (default IDENTITY_BYTES). */
  readonly identityBytes?: number;
  /**
   * Channels that carry large files (at least identityBytes) in byte ranges at once, default 4 (stripes.ts):
   * over a long link one channel is capped by its window, whatever the link's speed. 1 sends them in the tar.
   */
  readonly stripes?: number;
}

export type LargeContentAnswer = boolean | 'exclude';

/** The workspace files outside the announced folders (and single files), for an 'exclude' answer. */
export function withoutLarge<T extends { readonly path: string }>(files: readonly T[], warnings: readonly LargeContentWarning[]): T[] {
  return files.filter((f) => !warnings.some((w) => (w.path.endsWith('/') ? f.path.startsWith(w.path) : f.path === w.path)));
}

export interface SyncResult {
  readonly remoteDir: string;
  readonly uploaded: number;
  readonly uploadedBytes: number;
  readonly deleted: number;
  readonly unchanged: number;
  readonly warnings: readonly LargeContentWarning[];
  readonly cancelled: boolean;
  /** Top-level folders or files left out at the person's answer. */
  readonly excluded?: readonly string[];
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
  const remoteDir = options.remoteDir.startsWith('/')
    ? options.remoteDir.replace(/\/+$/, '')
    : `${await session.home()}/${options.remoteDir.replace(/\/+$/, '')}`;
  options.onProgress?.({ phase: 'scan' });
  // The apply command is started now, beside the state read: it waits for its tar on stdin, so a sync with
  // changes costs one round trip of latency instead of two. With nothing to send it gets an empty archive.
  const parent = remoteDir.slice(0, remoteDir.lastIndexOf('/')) || '/';
  const stage = `${parent}/.${basename(remoteDir)}.rft-stage-${randomBytes(6).toString('hex')}`;
  const applying = openChannel(session, applyCommand(remoteDir, stage, manifestPathFor(remoteDir)));
  applying.catch(() => undefined);
  const cached = readHashCache(options.cacheFile);
  const streams = Math.max(1, Math.min(8, options.streams ?? defaultStreams(session.rttMs)));
  // With no hash cache this workspace was never sent from here: most likely a first sync of every file, so
  // the extra tar channels are opened now, beside the state read, instead of a round trip or two after it.
  // A sync that turns out small ends them with an empty archive.
  const early = Object.keys(cached).length === 0 ? Array.from({ length: streams - 1 }, () => openExtractor(session, stage)) : [];
  early.forEach((p) => p.catch(() => undefined));
  const finishEmpty = async (): Promise<void> => {
    // The extractors first: each creates the stage, which the apply command removes when it ends.
    await Promise.all(early.map(async (p) => endEmpty(await p)));
    const a = await applying;
    a.ch.end(Buffer.alloc(1024, 0));
    await a.exit;
  };
  const [scanned, stateOut] = await Promise.all([
    scanWorkspace(options.localRoot, {
      cache: cached,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.extraIgnores ? { extraIgnores: options.extraIgnores } : {}),
      // Files that must travel anyway are hashed while they stream; only look-alikes are hashed up front.
      hashMissing: false,
    }),
    session.exec(stateCommand(remoteDir)),
  ]).catch(async (err: unknown) => {
    for (const p of [applying, ...early])
      await p.then(
        (a) => a.ch.close(),
        () => undefined,
      );
    throw err;
  });
  if (stateOut.code !== 0) {
    await finishEmpty().catch(() => undefined);
    throw new Error(`reading remote state failed: ${stateOut.stderr.toString().trim()}`);
  }
  // From here until the archives start, a failure (the large-files question throwing, planning failing) ends the
  // channels opened above with empty archives, so the host's extractors and apply command exit and remove the stage.
  let planned: Awaited<ReturnType<typeof planLocal>>;
  try {
    planned = await planLocal(options, scanned, stateOut.stdout);
  } catch (err) {
    await finishEmpty().catch(() => undefined);
    throw err;
  }
  if (planned.cancelled) {
    await finishEmpty();
    return { remoteDir, uploaded: 0, uploadedBytes: 0, deleted: 0, unchanged: 0, warnings: planned.warnings, cancelled: true };
  }
  const { warnings, excluded } = planned;
  const { send, next, deletes, finalFiles, unchanged, nothingToDo } = planned.plan;
  if (nothingToDo) {
    saveHashCache(options.cacheFile, finalFiles, cached);
    await finishEmpty();
    options.onProgress?.({ phase: 'done', files: 0, bytes: 0 });
    return { remoteDir, uploaded: 0, uploadedBytes: 0, deleted: 0, unchanged, warnings, cancelled: false, ...(excluded ? { excluded } : {}) };
  }
  const applier = await applying;
  const hashes = await sendChanges(session, options, { remoteDir, stage, applier, early, streams, send, next, deletes });
  const uploadedBytes = bytesOf(send);
  saveHashCache(
    options.cacheFile,
    finalFiles.map((f) => (f.hash ? f : { ...f, hash: hashes.get(f.path) ?? '' })),
    cached,
  );
  options.onProgress?.({ phase: 'done', files: send.length, bytes: uploadedBytes });
  return { remoteDir, uploaded: send.length, uploadedBytes, deleted: deletes.length, unchanged, warnings, cancelled: false, ...(excluded ? { excluded } : {}) };
}

/** The large-files question, then the plan against the host's state; `cancelled` when the user said no. */
async function planLocal(options: SyncOptions, scanned: LocalFile[], remoteState: Buffer) {
  const warnings = largeContentWarnings(scanned, options.largeLimits);
  let local = scanned;
  let excluded: string[] | undefined;
  if (warnings.length > 0 && options.confirmLarge) {
    const answer = await options.confirmLarge(warnings);
    if (answer === false) return { cancelled: true as const, warnings };
    if (answer === 'exclude') {
      local = withoutLarge(scanned, warnings);
      excluded = warnings.map((w) => w.path);
    }
  }
  options.onProgress?.({ phase: 'compare', files: local.length });
  const plan = await planSync(
    options.localRoot,
    local,
    parseRemoteState(remoteState),
    options.identityBytes ?? IDENTITY_BYTES,
    (p) => excluded !== undefined && withoutLarge([{ path: p }], warnings).length === 0,
  );
  return { cancelled: false as const, warnings, excluded, plan };
}

interface Applier {
  readonly ch: Awaited<ReturnType<SshSession['execStream']>>;
  readonly exit: ReturnType<SshSession['exitOf']>;
  readonly stderr: Buffer[];
}

/**
 * Tar streams for many files. File creation on the host is the cost of a first sync, and two extracting
 * processes overlap it; more compete for a small host's CPU (on loopback four were slower than two). Over a
 * long link each channel is also capped by its window (2 MiB per round trip for OpenSSH's sshd, 50 MiB/s at
 * 40 ms), so there four streams are used. Measured in bench/upload-many.ts and upload-many-wan.ts.
 */
export function defaultStreams(rttMs: number | undefined): number {
  return rttMs !== undefined && rttMs >= LONG_LINK_RTT_MS ? 4 : 2;
}

/** A round trip from which one channel's window, not the host, limits a large sync (2 MiB / 10 ms = 200 MiB/s). */
const LONG_LINK_RTT_MS = 10;

/** A channel running an extra extractor into the stage (the apply command's channel is the first stream). */
function openExtractor(session: SshSession, stage: string): Promise<Applier> {
  return openChannel(session, `set -e; mkdir -p ${shellQuote(stage)}; ${extractCommand(stage)}`);
}

/** A command's channel that takes an archive on stdin: its stderr kept for the error, its stdout drained. */
function openChannel(session: SshSession, command: string): Promise<Applier> {
  return session.execStream(command).then((ch) => {
    const stderr: Buffer[] = [];
    ch.stderr.on('data', (d: Buffer) => stderr.push(d));
    ch.on('data', () => undefined);
    return { ch, exit: session.exitOf(ch), stderr };
  });
}

/** Ends an extractor that got nothing to extract: an empty archive, then its exit. */
async function endEmpty(x: Applier): Promise<void> {
  x.ch.end(Buffer.alloc(1024, 0));
  await x.exit;
}

const bytesOf = (files: readonly LocalFile[]): number => files.reduce((n, f) => n + (f.link === undefined ? f.size : 0), 0);

/**
 * The sending half: the changed files as tar streams (the first on the apply command's channel, the others
 * extracting beside it) and large ones as byte ranges (stripes.ts), then the ops list and the manifest, whose
 * unknown hashes are filled in as the files stream. Returns those hashes, for the local cache.
 */
async function sendChanges(
  session: SshSession,
  options: SyncOptions,
  c: {
    readonly remoteDir: string;
    readonly stage: string;
    readonly applier: Applier;
    /** Extractor channels opened before the plan was known, and how many streams to use. */
    readonly early: ReadonlyArray<Promise<Applier>>;
    readonly streams: number;
    readonly send: readonly LocalFile[];
    readonly next: Array<[path: string, entry: ManifestEntry]>;
    readonly deletes: readonly string[];
  },
): Promise<Map<string, string>> {
  const { remoteDir, stage, send, next, deletes } = c;
  const hashes = new Map<string, string>();
  const ops = Buffer.from([...deletes.map((p) => `D\0${p}\0`), ...send.map((f) => `R\0${f.path}\0`)].join(''), 'utf8');
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
  const fileEntries: TarEntry[] = inTar.map((f) =>
    f.link !== undefined
      ? { name: `f/${f.path}`, size: 0, mtime: Math.floor(f.mtimeMs / 1000), mode: 0o777, source: Buffer.alloc(0), linkTarget: f.link }
      : {
          name: `f/${f.path}`,
          size: f.size,
          mtime: Math.floor(f.mtimeMs / 1000),
          mode: f.mode,
          source: join(options.localRoot, f.path),
          ...(f.hash ? {} : { onHash: (h: string) => hashes.set(f.path, h) }),
        },
  );
  const closing: TarEntry[] = [
    { name: '.rft-ops', size: ops.length, mtime: now, mode: 0o600, source: ops },
    {
      name: '.rft-manifest.json',
      size: manifestBytes.length,
      mtime: now,
      mode: 0o644,
      source: () => {
        for (const [path, at] of holes) manifestBytes.write(hashes.get(path) ?? '', at, 'latin1');
        return manifestBytes;
      },
    },
  ];
  options.onProgress?.({ phase: 'upload', files: send.length, bytes: bytesOf(send) });
  const split = splitByBytes(fileEntries, fileEntries.length >= 64 ? c.streams : 1);
  // Several tars extract into the stage at once: each archive leads with its folders (parentDirEntries).
  const groups = split.length > 1 ? split.map((g) => [...parentDirEntries(g, now), ...g]) : split;
  // Extra streams only extract into the staging dir; the apply stream ends with the ops list and the manifest
  // once they have all finished, so the renames see every file. Channels opened early and not needed get an
  // empty archive, and are waited for too (each creates the stage the apply command removes).
  const extras = [
    ...groups.slice(1).map(async (group, k) => {
      const x = await (c.early[k] ?? openExtractor(session, stage));
      await pipeline(Readable.from(tarChunks(group, options.signal)), x.ch);
      const st = await x.exit;
      if (!st || st.code !== 0)
        throw new Error(
          `remote extract failed (${st ? (st.code ?? st.signal) : 'connection lost'}): ${Buffer.concat(x.stderr).toString('utf8').trim().slice(0, 500)}`,
        );
    }),
    ...c.early.slice(Math.max(0, groups.length - 1)).map(async (p) => endEmpty(await p)),
  ];
  if (striped.length > 0) {
    extras.push(
      (async () => {
        const files: StripeFile[] = striped.map((f) => ({ path: f.path, size: f.size, mode: f.mode, mtime: Math.floor(f.mtimeMs / 1000) }));
        await inPool(planPieces(files, lanes), lanes, (p) =>
          sendPiece(session, join(options.localRoot, p.file.path), `${stage}/f/${p.file.path}`, p, options.signal),
        );
        const done = await session.exec(files.map((f) => finishCommand(`${stage}/f/${f.path}`, f)).join(' && '));
        if (done.code !== 0) throw new Error(`setting the mode and time of striped files failed: ${done.stderr.toString().trim().slice(0, 500)}`);
      })(),
    );
  }
  extras.forEach((p) => p.catch(() => undefined));
  const { ch, exit, stderr } = c.applier;
  async function* applyStream(): AsyncGenerator<Buffer, void, undefined> {
    yield* tarChunks(groups[0] ?? [], options.signal, { terminate: false });
    await Promise.all(extras);
    yield* tarChunks(closing, options.signal);
  }
  // A dropped connection surfaces as a stream error ("Premature close") or a missing exit status; say what
  // it means for the user's files instead.
  const lost = (err?: unknown): Error =>
    new Error(
      `The SSH connection to ${session.resolved.alias} was lost while syncing to ${remoteDir}. ` +
        'Nothing was half-written (each file is renamed into place whole); sync again to finish.',
      err === undefined ? {} : { cause: err },
    );
  await pipeline(Readable.from(applyStream()), ch, { end: true }).catch((err: unknown) => {
    ch.close();
    throw session.closed || /premature close|ECONNRESET|not connected|no response/i.test(String(err)) ? lost(err) : err;
  });
  const status = await exit;
  if (!status && session.closed) throw lost();
  if (!status || status.code !== 0) {
    throw new Error(
      `remote apply failed (${status ? (status.code ?? status.signal) : 'connection lost'}): ${Buffer.concat(stderr).toString('utf8').trim().slice(0, 800)}`,
    );
  }
  return hashes;
}
