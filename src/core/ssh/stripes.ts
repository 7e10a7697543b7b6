// Large files travel in stripes: byte ranges sent over several exec channels at once, each written in place
// on the host by `dd seek=… conv=notrunc`. One SSH channel can have at most its window in flight (2 MiB for
// OpenSSH's sshd), so over a 40 ms link one channel moves about 50 MiB/s however fast the link is; scp and
// rsync use one channel and stop there. Ranges are cut on 1 MiB boundaries (dd's block size here), and dd
// reads its range from stdin to EOF, so short reads from the pipe are harmless (GNU, BusyBox and BSD dd alike).
import { open } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import type { SshSession } from './session';
import { shellQuote } from './quote';
import { ChannelGuard } from './channelGuard';
import type { StreamLimits } from './channelGuard';

export const STRIPE_BLOCK = 1024 * 1024;

export interface StripeFile {
  /** Path relative to the local root and to the remote stage's file tree. */
  readonly path: string;
  readonly size: number;
  readonly mode: number;
  /** Seconds, as the manifest records it. */
  readonly mtime: number;
}

export interface Piece {
  readonly file: StripeFile;
  readonly offset: number;
  readonly length: number;
}

/**
 * Cuts the files into about `lanes` pieces per file-set total, each a whole number of 1 MiB blocks (the last
 * piece of a file takes its tail), largest first so the pool finishes together.
 */
export function planPieces(files: readonly StripeFile[], lanes: number): Piece[] {
  const total = files.reduce((a, f) => a + f.size, 0);
  const target = Math.max(STRIPE_BLOCK, Math.ceil(total / Math.max(1, lanes) / STRIPE_BLOCK) * STRIPE_BLOCK);
  const pieces: Piece[] = [];
  for (const file of files) {
    for (let offset = 0; offset < file.size; offset += target) pieces.push({ file, offset, length: Math.min(target, file.size - offset) });
    if (file.size === 0) pieces.push({ file, offset: 0, length: 0 });
  }
  return pieces.sort((a, b) => b.length - a.length);
}

/**
 * Runs `fn` over `items`, at most `concurrency` at a time. After a failure nothing new starts, and the first
 * error is thrown only once the ones in flight have settled: their callers may close what those still use.
 */
export async function inPool<T>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const workers = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (!failure && next < items.length) {
      try {
        await fn(items[next++]!);
      } catch (error) {
        failure ??= { error };
      }
    }
  });
  await Promise.all(workers);
  if (failure) throw failure.error;
}

/**
 * Sends one piece of `localPath` into `remotePath` at its offset, within `limits`: a host that stops taking the
 * bytes or never says how dd ended, or prints without end, fails it with an error naming the host.
 */
export async function sendPiece(
  session: SshSession,
  localPath: string,
  remotePath: string,
  piece: Piece,
  signal?: AbortSignal,
  limits?: StreamLimits,
): Promise<void> {
  const q = shellQuote(remotePath);
  const dir = remotePath.slice(0, remotePath.lastIndexOf('/')) || '/';
  // dd prints its record counts on stderr even on success: kept back unless it fails (a full disk, say).
  const ch = await session.execStream(
    `mkdir -p ${shellQuote(dir)} && { e=$(dd of=${q} bs=${STRIPE_BLOCK} seek=${piece.offset / STRIPE_BLOCK} conv=notrunc 2>&1 >/dev/null) || { printf '%s\\n' "$e" >&2; exit 1; }; }`,
  );
  const guard = new ChannelGuard(ch, session.resolved.alias, `uploading ${remotePath} (bytes from ${piece.offset})`, limits);
  const exit = session.exitOf(ch);
  const err: Buffer[] = [];
  let errBytes = 0;
  ch.stderr.on('data', (d: Buffer) => {
    // Only the start is shown; the guard's cap ends a host that goes on.
    if (errBytes < 4096) err.push(d);
    errBytes += d.length;
  });
  ch.on('data', () => undefined);
  guard.watch();
  try {
    await guard.race(writeRange(localPath, piece, ch, () => guard.touch(), signal));
    const st = await guard.race(exit);
    if (!st || st.code !== 0)
      throw new Error(
        `writing ${remotePath} at ${piece.offset} on the host failed (${st ? (st.code ?? st.signal) : 'connection lost'}): ${Buffer.concat(err).toString('utf8').trim().slice(0, 500)}`,
      );
  } catch (e) {
    throw guard.tripped ?? e;
  } finally {
    guard.pause();
  }
}

/**
 * Writes `piece` of the file into `ch` and ends it. Two 1 MiB buffers take turns: one is read from disk while the
 * other is in the channel, and a buffer is read into again only once the channel's write callback said it was
 * taken (ssh2 copies it into packets). A fresh buffer per chunk, as a read stream gives, cost the upload a third
 * of its time in allocation and garbage collection on the extension host's one thread. On abort or failure the
 * channel is destroyed, as a pipeline would.
 */
async function writeRange(localPath: string, piece: Piece, ch: Writable, moved: () => void, signal?: AbortSignal): Promise<void> {
  const fh = await open(localPath, 'r');
  const aborted = (): Error => Object.assign(new Error('The operation was aborted'), { name: 'AbortError', code: 'ABORT_ERR' });
  try {
    const bufs = [Buffer.allocUnsafeSlow(STRIPE_BLOCK), Buffer.allocUnsafeSlow(STRIPE_BLOCK)];
    let pos = piece.offset;
    const end = piece.offset + piece.length;
    let inFlight: Promise<void> = Promise.resolve();
    for (let turn = 0; pos < end; turn ^= 1) {
      if (signal?.aborted) throw aborted();
      const buf = bufs[turn]!;
      const { bytesRead } = await fh.read(buf, 0, Math.min(STRIPE_BLOCK, end - pos), pos);
      if (bytesRead === 0) throw new Error(`${localPath} ended at byte ${pos}, before the ${end} it had when the sync began`);
      pos += bytesRead;
      await inFlight;
      if (signal?.aborted) throw aborted();
      inFlight = new Promise<void>((resolve, reject) => ch.write(buf.subarray(0, bytesRead), (e) => (e ? reject(e) : (moved(), resolve()))));
      // A failed write is also an 'error' on the channel; the rejection is awaited next turn or below.
      inFlight.catch(() => undefined);
    }
    await inFlight;
    await new Promise<void>((resolve, reject) => {
      ch.once('error', reject);
      ch.end(() => {
        ch.off('error', reject);
        resolve();
      });
    });
  } catch (e) {
    ch.destroy();
    throw e;
  } finally {
    await fh.close();
  }
}

/** Gives a striped file the mode and mtime tar would have given it (the next sync compares the mtime). */
export function finishCommand(remotePath: string, file: StripeFile): string {
  const q = shellQuote(remotePath);
  const mode = (file.mode & 0o7777).toString(8);
  // BusyBox and GNU touch take -d @seconds; perl is the fallback where a touch does not.
  return `chmod ${mode} ${q} && { touch -d @${file.mtime} ${q} 2>/dev/null || perl -e 'utime $ARGV[0], $ARGV[0], $ARGV[1] or exit 1' ${file.mtime} ${q}; }`;
}
