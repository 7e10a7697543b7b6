// Incremental workspace sync. One round trip reads the remote manifest (what we sent last time, with hashes)
// and the remote tree's sizes and mtimes; files whose hash, size and mtime all still match stay put. Everything
// else travels as archive streams (packFormat.ts) over exec channels (large files as byte ranges over several
// channels: stripes.ts) into a staging dir beside the target, and a small script
// then renames each file into place (atomic per file) and applies deletes. Only files that an earlier sync
// sent are ever deleted: what a run wrote on the host (checkpoints, outputs) is left alone.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomBytes } from 'node:crypto';
import { basename, join, sep } from 'node:path';
import type { SshSession } from './session';
import { scanWorkspace, largeContentWarnings, saveHashCache, readHashCache } from './localManifest';
import type { LargeContentWarning, LocalFile } from './localManifest';
import { IDENTITY_BYTES, manifestLayout, parseRemoteState, planSync } from './syncPlan';
import type { ManifestEntry, RemoteState } from './syncPlan';
import { applyCommand, extractorCommand, manifestPathFor, stateCommand } from './syncRemote';
import { archiveChunks } from './archiveStream';
import { PACK_END } from './packFormat';
import type { ArchiveEntry } from './archiveStream';
import { finishCommand, inPool, planPieces, sendPiece } from './stripes';
import type { StripeFile } from './stripes';
import { ChannelGuard } from './channelGuard';
import { HostCommandError } from './commandLimits';
import type { StreamLimits } from './channelGuard';

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
  /** Parallel archive streams (exec channels) for many files, 1–8; default by the link's round trip (defaultStreams). */
  readonly streams?: number;
  /** Files at least this large get an identity token instead of a hash (default IDENTITY_BYTES). */
  readonly identityBytes?: number;
  /**
   * Channels that carry large files (at least identityBytes) in byte ranges at once, default 4 (stripes.ts):
   * over a long link one channel is capped by its window, whatever the link's speed. 1 sends them in the archive.
   */
  readonly stripes?: number;
  /**
   * Bounds on every channel of the sync (the apply command, the extractors, the stripes): the host that stops
   * taking bytes or answering for idleMs, or prints more than maxOutputBytes, fails the sync naming it.
   */
  readonly limits?: StreamLimits;
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

/** Contiguous groups (directory neighbours stay together) of roughly equal bytes, counting 64 per header. */
function splitByBytes(entries: readonly ArchiveEntry[], n: number): ArchiveEntry[][] {
  if (n <= 1) return [[...entries]];
  const total = entries.reduce((a, e) => a + e.size + 64, 0);
  const groups: ArchiveEntry[][] = [[]];
  let acc = 0;
  for (const e of entries) {
    if (acc >= (total / n) * groups.length && groups.length < n) groups.push([]);
    groups[groups.length - 1]!.push(e);
    acc += e.size + 64;
  }
  return groups.filter((g) => g.length > 0);
}

/** Sends the workspace to `remoteDir`; see the header comment for the protocol. */
export async function syncWorkspace(session: SshSession, options: SyncOptions): Promise<SyncResult> {
  const remoteDir = options.remoteDir.startsWith('/')
    ? options.remoteDir.replace(/\/+$/, '')
    : `${await session.home()}/${options.remoteDir.replace(/\/+$/, '')}`;
  options.onProgress?.({ phase: 'scan' });
  // The apply command is started now, beside the state read: it waits for its archive on stdin, so a sync with
  // changes costs one round trip of latency instead of two. With nothing to send it gets an empty archive.
  const parent = remoteDir.slice(0, remoteDir.lastIndexOf('/')) || '/';
  const stage = `${parent}/.${basename(remoteDir)}.rft-stage-${randomBytes(6).toString('hex')}`;
  const applying = openChannel(session, applyCommand(remoteDir, stage, manifestPathFor(remoteDir)), `syncing to ${remoteDir} (applying)`, options.limits);
  applying.catch(() => undefined);
  const cached = readHashCache(options.cacheFile);
  const streams = Math.max(1, Math.min(8, options.streams ?? defaultStreams(session.rttMs)));
  // With no hash cache this workspace was never sent from here: most likely a first sync of every file, so
  // the extra stream channels are opened now, beside the state read, instead of a round trip or two after it.
  // A sync that turns out small ends them with an empty archive.
  const early = Object.keys(cached).length === 0 ? Array.from({ length: streams - 1 }, (_, k) => openExtractor(session, stage, k + 1, options.limits)) : [];
  early.forEach((p) => p.catch(() => undefined));
  const finishEmpty = async (): Promise<void> => {
    // The extractors first: each creates the stage, which the apply command removes when it ends.
    await Promise.all(early.map(async (p) => endEmpty(await p)));
    await endEmpty(await applying);
  };
  const scanning = scanWorkspace(options.localRoot, {
    cache: cached,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.extraIgnores ? { extraIgnores: options.extraIgnores } : {}),
    // Files that must travel anyway are hashed while they stream; only look-alikes are hashed up front.
    hashMissing: false,
  });
  // The same guess as the early channels': a host that holds nothing of this workspace yet. The plan against
  // such a host, and everything the sending needs, are made while the state read is on its way (on a first
  // sync of 10,000 files, 30-100 ms of work that otherwise came after it); used only if the host's state is
  // indeed empty, and never when the large-files question would have to be asked.
  const guess = early.length > 0 ? scanning.then((scanned) => planForEmptyHost(options, scanned, streams)) : undefined;
  guess?.catch(() => undefined);
  const reading = session.exec(stateCommand(remoteDir), { what: `reading what ${remoteDir} holds` });
  const [scanned, stateOut] = await Promise.all([scanning, reading]).catch(async (err: unknown) => {
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
  let prepared: Prepared | undefined;
  try {
    const state = parseRemoteState(stateOut.stdout);
    const guessed = guess && isEmptyHost(state) ? await guess.catch(() => undefined) : undefined;
    if (guessed) ({ planned, prepared } = guessed);
    else planned = await planLocal(options, scanned, state);
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
  prepared ??= prepareSend(options, { streams, send, next, deletes });
  const applier = await applying;
  const hashes = await sendPrepared(session, options, { remoteDir, stage, applier, early }, prepared);
  const uploadedBytes = bytesOf(send);
  saveHashCache(
    options.cacheFile,
    finalFiles.map((f) => (f.hash ? f : { ...f, hash: hashes.get(f.path) ?? '' })),
    cached,
  );
  options.onProgress?.({ phase: 'done', files: send.length, bytes: uploadedBytes });
  return { remoteDir, uploaded: send.length, uploadedBytes, deleted: deletes.length, unchanged, warnings, cancelled: false, ...(excluded ? { excluded } : {}) };
}

/** True when the host holds nothing of the target: no manifest entry and no file. */
function isEmptyHost(state: RemoteState): boolean {
  return state.tree.size === 0 && Object.keys(state.manifest.files).length === 0;
}

/**
 * The plan and the sending's preparation for a host that holds nothing yet; undefined when the large-files
 * question would be asked (that waits for the person, and for the host's real state).
 */
async function planForEmptyHost(
  options: SyncOptions,
  scanned: LocalFile[],
  streams: number,
): Promise<{ planned: Awaited<ReturnType<typeof planLocal>>; prepared: Prepared | undefined } | undefined> {
  if (options.confirmLarge && largeContentWarnings(scanned, options.largeLimits).length > 0) return undefined;
  const planned = await planLocal(options, scanned, EMPTY_HOST);
  if (planned.cancelled) return undefined;
  const { send, next, deletes, nothingToDo } = planned.plan;
  return { planned, prepared: nothingToDo ? undefined : prepareSend(options, { streams, send, next, deletes }) };
}

const EMPTY_HOST: RemoteState = { manifest: { v: 1, files: {} }, tree: new Map() };

/** The large-files question, then the plan against the host's state; `cancelled` when the user said no. */
async function planLocal(options: SyncOptions, scanned: LocalFile[], remote: RemoteState) {
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
    remote,
    options.identityBytes ?? IDENTITY_BYTES,
    (p) => excluded !== undefined && withoutLarge([{ path: p }], warnings).length === 0,
  );
  return { cancelled: false as const, warnings, excluded, plan };
}

interface Applier {
  readonly ch: Awaited<ReturnType<SshSession['execStream']>>;
  readonly exit: ReturnType<SshSession['exitOf']>;
  readonly stderr: Buffer[];
  readonly guard: ChannelGuard;
}

/**
 * Archive streams for many files. File creation on the host is the cost of a first sync, and two extracting
 * processes overlap it; more compete for a small host's CPU (on loopback four were slower than two). Over a
 * long link each channel is also capped by its window (2 MiB per round trip for OpenSSH's sshd, 50 MiB/s at
 * 40 ms), so there four streams are used. Measured in bench/upload-many.ts and upload-many-wan.ts.
 */
export function defaultStreams(rttMs: number | undefined): number {
  return rttMs !== undefined && rttMs >= LONG_LINK_RTT_MS ? 4 : 2;
}

/** A round trip from which one channel's window, not the host, limits a large sync (2 MiB / 10 ms = 200 MiB/s). */
const LONG_LINK_RTT_MS = 10;

/** A channel running extra extractor `k` (1, 2, …) into the stage; the apply command's channel is stream 0. */
function openExtractor(session: SshSession, stage: string, k: number, limits: StreamLimits | undefined): Promise<Applier> {
  return openChannel(session, extractorCommand(stage, k), `syncing to ${stage} (extracting stream ${k})`, limits);
}

/** What of stderr is kept for a failure's message; the guard's cap ends a host that prints on. */
const KEPT_STDERR = 8 * 1024;

/**
 * A command's channel that takes an archive on stdin: its stderr's start kept for the error, its stdout drained,
 * both counted against the output cap. Its idle limit starts when the channel is used (ChannelGuard.watch).
 */
function openChannel(session: SshSession, command: string, what: string, limits: StreamLimits | undefined): Promise<Applier> {
  return session.execStream(command).then((ch) => {
    const stderr: Buffer[] = [];
    let kept = 0;
    ch.stderr.on('data', (d: Buffer) => {
      if (kept >= KEPT_STDERR) return;
      stderr.push(d);
      kept += d.length;
    });
    ch.on('data', () => undefined);
    return { ch, exit: session.exitOf(ch), stderr, guard: new ChannelGuard(ch, session.resolved.alias, what, limits) };
  });
}

/** Ends an extractor that got nothing to extract: an empty archive, then its exit. */
async function endEmpty(x: Applier): Promise<void> {
  x.guard.watch();
  x.ch.end(PACK_END);
  await x.guard.race(x.exit);
}

const EMPTY = Buffer.alloc(0);

const bytesOf = (files: readonly LocalFile[]): number => files.reduce((n, f) => n + (f.link === undefined ? f.size : 0), 0);

/** What the sending needs, made before any byte is sent (prepareSend). */
interface Prepared {
  readonly send: readonly LocalFile[];
  /** The archives: the apply stream's first, then one per extra extractor. */
  readonly groups: readonly ArchiveEntry[][];
  /** The ops list and the manifest, whose hashes are filled in as the files stream. */
  readonly closing: readonly ArchiveEntry[];
  /** Files sent in byte ranges (stripes.ts) instead of in an archive. */
  readonly striped: readonly LocalFile[];
  readonly lanes: number;
  readonly now: number;
  /** Filled with each streamed file's sha256, for the local cache. */
  readonly hashes: Map<string, string>;
}

/**
 * The sending half's preparation (CPU only): the ops list, the manifest laid out with holes for the hashes
 * not yet known, and the files split into archive streams and striped large files.
 */
function prepareSend(
  options: SyncOptions,
  c: {
    readonly streams: number;
    readonly send: readonly LocalFile[];
    readonly next: Array<[path: string, entry: ManifestEntry]>;
    readonly deletes: readonly string[];
  },
): Prepared {
  const { send, next, deletes } = c;
  const hashes = new Map<string, string>();
  const ops = Buffer.from([...deletes.map((p) => `D\0${p}\0`), ...send.map((f) => `R\0${f.path}\0`)].join(''), 'utf8');
  const now = Math.floor(Date.now() / 1000);
  for (const f of send) next.push([f.path, [f.size, Math.floor(f.mtimeMs / 1000), f.hash]]);
  // The manifest is the last entry of the archive: by then every file before it was read and hashed for sending.
  // It is laid out now, with each unknown hash as a 64-byte hole filled in when reached (an entry's header needs the
  // size up front, and every sha256 is 64 hex digits).
  const { bytes: manifestBytes, holes } = manifestLayout(next);
  // Large files (they carry identity tokens, so nothing needs their hash) go in stripes, the rest in the archives.
  const lanes = Math.max(1, Math.min(8, options.stripes ?? 4));
  const stripeMin = options.identityBytes ?? IDENTITY_BYTES;
  const striped = lanes > 1 ? send.filter((f) => f.link === undefined && f.size >= stripeMin) : [];
  const inArchive = striped.length > 0 ? send.filter((f) => !striped.includes(f)) : send;
  // Plain objects and a joined prefix: an object spread and path.join per file cost a 10,000-file first sync
  // 15-30 ms before its first byte. Scanned paths are already normal, '/'-separated and relative.
  const root = join(options.localRoot, sep);
  const fileEntries: ArchiveEntry[] = inArchive.map((f): ArchiveEntry => {
    const mtime = Math.floor(f.mtimeMs / 1000);
    if (f.link !== undefined) return { name: `f/${f.path}`, size: 0, mtime, mode: 0o777, source: EMPTY, linkTarget: f.link };
    const e: { -readonly [K in keyof ArchiveEntry]: ArchiveEntry[K] } = { name: `f/${f.path}`, size: f.size, mtime, mode: f.mode, source: root + f.path };
    if (!f.hash) e.onHash = (h: string) => hashes.set(f.path, h);
    return e;
  });
  const closing: ArchiveEntry[] = [
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
  // Several streams unpack into the stage at once; the unpacker makes each missing folder as it goes, and one
  // another stream made first is fine (packFormat.ts).
  const groups = splitByBytes(fileEntries, fileEntries.length >= 64 ? c.streams : 1);
  return { send, groups, closing, striped, lanes, now, hashes };
}

/**
 * The sending half: the changed files as archive streams (the first on the apply command's channel, the others
 * extracting beside it) and large ones as byte ranges (stripes.ts), then the ops list and the manifest. Returns
 * the streamed files' hashes, for the local cache.
 */
async function sendPrepared(
  session: SshSession,
  options: SyncOptions,
  c: {
    readonly remoteDir: string;
    readonly stage: string;
    readonly applier: Applier;
    /** Extractor channels opened before the plan was known. */
    readonly early: ReadonlyArray<Promise<Applier>>;
  },
  prepared: Prepared,
): Promise<Map<string, string>> {
  const { remoteDir, stage } = c;
  const { send, groups, closing, striped, lanes, now, hashes } = prepared;
  options.onProgress?.({ phase: 'upload', files: send.length, bytes: bytesOf(send) });
  // Extra streams only extract into the staging dir. Channels opened early and not needed get an empty archive
  // (each creates the stage the apply command removes, so each is waited for too). Once every stream's bytes
  // are sent, the apply stream ends with the list of streams to wait for, the ops list and the manifest: the
  // apply command waits on the host for those extractors (syncRemote.ts), so the renames see every file.
  const extractors = Math.max(groups.length - 1, c.early.length);
  const outs = Array.from({ length: extractors }, (_, k) => {
    const opened = c.early[k] ?? openExtractor(session, stage, k + 1, options.limits);
    const group = groups[k + 1];
    const sent = opened.then(async (x) => {
      x.guard.watch();
      if (group) await x.guard.race(pipeline(Readable.from(archiveChunks(group, options.signal)), x.guard.meter(), x.ch));
      else x.ch.end(PACK_END);
    });
    const exited = sent.then(async () => {
      const x = await opened;
      const st = await x.guard.race(x.exit);
      if (!st || st.code !== 0)
        throw new Error(
          `remote extract failed (${st ? (st.code ?? st.signal) : 'connection lost'}): ${Buffer.concat(x.stderr).toString('utf8').trim().slice(0, 500)}`,
        );
    });
    return { opened, sent, exited };
  });
  // Striped pieces are written by commands of their own, with no marker for the host to wait on: their
  // completion is known here, when the command that sets their modes exits.
  const ready: Array<Promise<void>> = outs.map((o) => o.sent);
  const done: Array<Promise<void>> = outs.map((o) => o.exited);
  if (striped.length > 0) {
    const stripedDone = (async () => {
      const files: StripeFile[] = striped.map((f) => ({ path: f.path, size: f.size, mode: f.mode, mtime: Math.floor(f.mtimeMs / 1000) }));
      await inPool(planPieces(files, lanes), lanes, (p) =>
        sendPiece(session, join(options.localRoot, p.file.path), `${stage}/f/${p.file.path}`, p, options.signal, options.limits),
      );
      const fin = await session.exec(files.map((f) => finishCommand(`${stage}/f/${f.path}`, f)).join(' && '), {
        what: 'setting the mode and time of striped files',
      });
      if (fin.code !== 0) throw new Error(`setting the mode and time of striped files failed: ${fin.stderr.toString().trim().slice(0, 500)}`);
    })();
    ready.push(stripedDone);
    done.push(stripedDone);
  }
  [...ready, ...done].forEach((p) => p.catch(() => undefined));
  const waitList = Buffer.from(outs.map((_, k) => k + 1).join(' '), 'latin1');
  const { ch, exit, stderr, guard } = c.applier;
  async function* applyStream(): AsyncGenerator<Buffer, void, undefined> {
    yield* archiveChunks(groups[0] ?? [], options.signal, { terminate: false });
    // The other streams and the stripes have limits of their own; this channel is quiet meanwhile.
    guard.pause();
    await Promise.all(ready);
    guard.watch();
    yield* archiveChunks([{ name: '.rft-wait', size: waitList.length, mtime: now, mode: 0o600, source: waitList }, ...closing], options.signal);
  }
  // A dropped connection surfaces as a stream error ("Premature close") or a missing exit status; say what
  // it means for the user's files instead.
  const lost = (err?: unknown): Error =>
    new Error(
      `The SSH connection to ${session.resolved.alias} was lost while syncing to ${remoteDir}. ` +
        'Nothing was half-written (each file is renamed into place whole); sync again to finish.',
      err === undefined ? {} : { cause: err },
    );
  // A limit passed on one channel ends them all: the extractors and the apply command wait on each other.
  const closeAll = (): void => {
    ch.close();
    for (const o of outs)
      o.opened.then(
        (x) => x.ch.close(),
        () => undefined,
      );
  };
  // Whichever channel passes a limit first decides: the others may be waiting on it (or already gone).
  const never = new Promise<never>(() => undefined);
  const anyTripped = Promise.race([
    guard.failed,
    ...outs.map((o) =>
      o.opened.then(
        (x) => x.guard.failed,
        () => never,
      ),
    ),
  ]);
  anyTripped.catch(() => undefined);
  const bounded = <T>(p: Promise<T>): Promise<T> => Promise.race([p, anyTripped]);
  guard.watch();
  await bounded(pipeline(Readable.from(applyStream()), guard.meter(), ch, { end: true })).catch((err: unknown) => {
    closeAll();
    if (guard.tripped) throw guard.tripped;
    throw session.closed || /premature close|ECONNRESET|not connected|no response/i.test(String(err)) ? lost(err) : err;
  });
  // An extractor's own failure says more than the apply command's "did not extract".
  const [status, streamFailure] = await bounded(
    Promise.all([
      exit,
      Promise.all(done).then(
        () => undefined,
        (e: unknown) => e,
      ),
    ]),
  ).catch((err: unknown) => {
    closeAll();
    throw err;
  });
  if (streamFailure instanceof HostCommandError) closeAll();
  if (streamFailure) throw session.closed && !(streamFailure instanceof HostCommandError) ? lost(streamFailure) : streamFailure;
  if (!status && session.closed) throw lost();
  if (!status || status.code !== 0) {
    throw new Error(
      `remote apply failed (${status ? (status.code ?? status.signal) : 'connection lost'}): ${Buffer.concat(stderr).toString('utf8').trim().slice(0, 800)}`,
    );
  }
  return hashes;
}
