// Brings a remote folder (the adapter, checkpoints) back as one tar stream over the SSH connection and
// unpacks it here (safeUntar.ts): one round trip, however many files, and progress by bytes. Large files
// come beside it in stripes over several channels (stripedDownload.ts) where the host's tar is GNU tar (the
// one that can leave them out by literal name); elsewhere everything comes in the tar. What the host sends is
// bounded (entries, and bytes: about what it said the folder holds), and a download that fails removes the
// files it wrote, so a half-written checkpoint is never taken for a whole one.
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { SshSession } from '../../ssh/session';
import { shellQuote } from '../../ssh/quote';
import { DEFAULT_STREAM_IDLE_MS, IdleLimit, noAnswerError, tooMuchOutputError } from '../../ssh/commandLimits';
import type { CommandLimits } from '../../ssh/commandLimits';
import { MAX_DOWNLOAD_BYTES, MAX_DOWNLOAD_ENTRIES, SafeUntar, UnsafeArchiveError, safeTarget } from './safeUntar';
import type { UntarLimits } from './safeUntar';
import { excludeArgs, fetchStriped, largeFilesCommand, parseLargeFiles } from './stripedDownload';
import type { StripeFile } from '../../ssh/stripes';

export interface DownloadProgress {
  readonly bytes: number;
  readonly totalBytes?: number;
}

/** tar prints a line per file it cannot read: a megabyte of that is a host saying nothing useful. */
const MAX_TAR_STDERR_BYTES = 1024 * 1024;

/** Room over the size the host gave for files that grow while they are read (a log still being written). */
const GROWTH_SLACK_BYTES = 256 * 1024 * 1024;

/** At most a quarter more than the host said the folder holds, or the absolute cap when it said nothing. */
export function downloadByteCap(totalBytes: number | undefined): number {
  if (!totalBytes) return MAX_DOWNLOAD_BYTES;
  return Math.min(MAX_DOWNLOAD_BYTES, Math.ceil(totalBytes * 1.25) + GROWTH_SLACK_BYTES);
}

/** Removes the files a failed download wrote (relative to localDir); the folders stay, empty or as they were. */
function removePartial(localDir: string, files: readonly string[]): void {
  for (const f of files) {
    try {
      rmSync(join(localDir, ...f.split('/')), { force: true });
    } catch {
      // Already gone, or never created.
    }
  }
}

export async function downloadFolder(
  session: SshSession,
  remoteDir: string,
  localDir: string,
  options: {
    readonly signal?: AbortSignal;
    readonly onProgress?: (p: DownloadProgress) => void;
    readonly stripes?: number;
    readonly stripeMinBytes?: number;
    /** Overrides the size probe's time limit and output cap (commandLimits.ts). */
    readonly probeLimits?: Omit<CommandLimits, 'what'>;
    /** The download fails when the host sends nothing for this long (default DEFAULT_STREAM_IDLE_MS). */
    readonly idleTimeoutMs?: number;
    /** Overrides the caps on what the host sends (default: MAX_DOWNLOAD_ENTRIES, downloadByteCap of its size). */
    readonly limits?: UntarLimits;
  } = {},
): Promise<{ bytes: number }> {
  const q = shellQuote(remoteDir);
  const lanes = Math.max(1, Math.min(8, options.stripes ?? 4));
  // One round trip: the total, whether tar is GNU tar, and the large files (NUL-separated, after two lines).
  const probe = await session.exec(
    `du -sb ${q} 2>/dev/null | cut -f1; if tar --version 2>/dev/null | grep -q 'GNU tar'; then echo gnu; else echo other; fi; ` +
      (lanes > 1 ? `${largeFilesCommand(remoteDir, options.stripeMinBytes)} 2>/dev/null` : 'true'),
    {
      what: `sizing ${remoteDir} for download`,
      timeoutMs: 2 * 60_000,
      // Two short lines and one record per file of at least stripeMinBytes: a few KB on a real host.
      maxOutputBytes: 4 * 1024 * 1024,
      ...options.probeLimits,
      ...(options.signal ? { signal: options.signal } : {}),
    },
  );
  const out = probe.stdout;
  const nl1 = out.indexOf(10);
  const nl2 = nl1 < 0 ? -1 : out.indexOf(10, nl1 + 1);
  const totalBytes = Number(out.subarray(0, Math.max(0, nl1)).toString().trim()) || undefined;
  const gnu = nl2 > 0 && out.subarray(nl1 + 1, nl2).toString() === 'gnu';
  const large = gnu && lanes > 1 ? parseLargeFiles(out.subarray(nl2 + 1)) : [];
  const maxEntries = options.limits?.maxEntries ?? MAX_DOWNLOAD_ENTRIES;
  const maxBytes = options.limits?.maxBytes ?? downloadByteCap(totalBytes);
  const stripedBytes = large.reduce((n, f) => n + f.size, 0);
  // The listed sizes become file lengths here: a listing past the caps is refused before anything is opened.
  if (large.length > maxEntries || stripedBytes > maxBytes)
    throw new Error(`download of ${remoteDir} refused: the host lists ${large.length} large files of ${stripedBytes} bytes, over the download's caps`);
  mkdirSync(localDir, { recursive: true });
  let bytes = 0;
  const progress = (n: number): void => {
    bytes += n;
    options.onProgress?.({ bytes, ...(totalBytes ? { totalBytes } : {}) });
  };
  // Our own stop: a failed tar stream ends the stripes too before their files are removed.
  const stop = new AbortController();
  const onAbort = (): void => stop.abort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const striped =
    large.length > 0
      ? fetchStriped(session, remoteDir, localDir, large, lanes, {
          signal: stop.signal,
          onBytes: progress,
          ...(options.idleTimeoutMs ? { idleTimeoutMs: options.idleTimeoutMs } : {}),
        })
      : undefined;
  striped?.catch(() => undefined);
  const untar = new SafeUntar(localDir, { maxEntries: maxEntries - large.length, maxBytes: maxBytes - stripedBytes });
  try {
    await receiveTar(session, remoteDir, large, untar, stop.signal, progress, options.idleTimeoutMs ?? DEFAULT_STREAM_IDLE_MS);
    if (options.signal?.aborted) throw new Error('download cancelled');
    if (striped)
      await striped.catch((e: unknown) => {
        throw e instanceof UnsafeArchiveError ? new Error(`download of ${remoteDir} refused: ${e.message}`) : e;
      });
    return { bytes };
  } catch (err) {
    stop.abort();
    untar.abort();
    await striped?.catch(() => undefined);
    const stripedFiles = large.flatMap((f) => {
      try {
        return [safeTarget(localDir, f.path).rel];
      } catch {
        return [];
      }
    });
    removePartial(localDir, [...untar.written, ...stripedFiles]);
    throw err;
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * The tar stream of `remoteDir` (less the striped files) into `untar`; throws on a refused entry, a failed tar, a
 * host that goes quiet for `idleMs` or one whose stderr passes MAX_TAR_STDERR_BYTES.
 */
async function receiveTar(
  session: SshSession,
  remoteDir: string,
  large: readonly StripeFile[],
  untar: SafeUntar,
  signal: AbortSignal,
  progress: (n: number) => void,
  idleMs: number,
): Promise<void> {
  const q = shellQuote(remoteDir);
  const ch = await session.execStream(
    `test -d ${q} || { echo "no such folder: ${remoteDir.replace(/[^\w./~-]/g, '?')}" >&2; exit 3; }; tar -C ${q}${excludeArgs(large)} -cf - .`,
  );
  // Asked for at once: the exit status can arrive with the channel's first packets (exitOf records it from the start).
  const exit = session.exitOf(ch);
  const what = `downloading ${remoteDir}`;
  // Settles (rejects) at the first limit passed: the caller does not wait for a hostile host to confirm the close.
  let limitError: Error | undefined;
  let rejectLimit: (e: Error) => void = () => undefined;
  const limitHit = new Promise<never>((_, reject) => (rejectLimit = reject));
  limitHit.catch(() => undefined);
  const overLimit = (e: Error): void => {
    if (limitError) return;
    limitError = e;
    ch.close();
    rejectLimit(e);
  };
  const idle = new IdleLimit(idleMs, () => overLimit(noAnswerError(session.resolved.alias, what, idleMs)));
  // Only the end of stderr is shown; what a host prints there beyond the cap ends the download.
  let errors = '';
  let errorBytes = 0;
  let unsafe: Error | undefined;
  ch.stderr.on('data', (d: Buffer) => {
    idle.touch();
    errorBytes += d.length;
    if (errorBytes > MAX_TAR_STDERR_BYTES) return overLimit(tooMuchOutputError(session.resolved.alias, `${what} (on stderr)`, MAX_TAR_STDERR_BYTES));
    errors = (errors + d.subarray(-4000).toString()).slice(-4000);
  });
  const onAbort = (): void => {
    ch.close();
  };
  if (signal.aborted) ch.close();
  signal.addEventListener('abort', onAbort, { once: true });
  ch.on('data', (d: Buffer) => {
    idle.touch();
    if (unsafe || limitError) return;
    try {
      untar.write(d);
    } catch (e) {
      unsafe = e as Error;
      untar.abort();
      ch.close();
      return;
    }
    progress(d.length);
  });
  try {
    await Promise.race([new Promise<void>((r) => ch.on('close', () => r())), limitHit]);
  } finally {
    idle.stop();
    signal.removeEventListener('abort', onAbort);
  }
  if (signal.aborted) throw new Error('download cancelled');
  if (!unsafe) {
    try {
      untar.end();
    } catch (e) {
      unsafe = e as Error;
    }
  }
  if (unsafe) throw new Error(`download of ${remoteDir} refused: ${unsafe.message}`);
  // The exit status may come before the last data: the download is over when the channel closes.
  const status = await exit;
  const remoteCode = status ? (status.code ?? status.signal) : null;
  if (remoteCode !== 0) throw new Error(`download of ${remoteDir} failed: ${errors.trim() || `exit ${remoteCode}`}`);
}
