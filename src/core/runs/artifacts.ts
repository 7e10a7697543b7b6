// Brings a remote folder (the adapter, checkpoints) back as one tar stream over the SSH connection and
// unpacks it here (safeUntar.ts): one round trip, however many files, and progress by bytes. Large files
// come beside it in stripes over several channels (stripedDownload.ts) where the host's tar is GNU tar (the
// one that can leave them out by literal name); elsewhere everything comes in the tar.
import { mkdirSync } from 'node:fs';
import type { SshSession } from '../ssh/session';
import { shellQuote } from '../ssh/quote';
import type { CommandLimits } from '../ssh/commandLimits';
import { SafeUntar, UnsafeArchiveError } from './safeUntar';
import { excludeArgs, fetchStriped, largeFilesCommand, parseLargeFiles } from './stripedDownload';

export interface DownloadProgress {
  readonly bytes: number;
  readonly totalBytes?: number;
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
  mkdirSync(localDir, { recursive: true });
  let bytes = 0;
  const progress = (n: number): void => {
    bytes += n;
    options.onProgress?.({ bytes, ...(totalBytes ? { totalBytes } : {}) });
  };
  const striped =
    large.length > 0
      ? fetchStriped(session, remoteDir, localDir, large, lanes, { ...(options.signal ? { signal: options.signal } : {}), onBytes: progress })
      : undefined;
  striped?.catch(() => undefined);
  const ch = await session.execStream(
    `test -d ${q} || { echo "no such folder: ${remoteDir.replace(/[^\w./~-]/g, '?')}" >&2; exit 3; }; tar -C ${q}${excludeArgs(large)} -cf - .`,
  );
  // Unpacked here, not by the local tar: only files and folders inside localDir (safeUntar.ts).
  const untar = new SafeUntar(localDir);
  const errors: string[] = [];
  let unsafe: Error | undefined;
  ch.stderr.on('data', (d: Buffer) => errors.push(d.toString()));
  const onAbort = (): void => {
    ch.close();
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  ch.on('data', (d: Buffer) => {
    if (unsafe) return;
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
  // The exit status may come before the last data: the download is over when the channel closes.
  let remoteCode: number | null = null;
  ch.on('exit', (c: number | null) => {
    remoteCode = c;
  });
  await new Promise<void>((r) => ch.on('close', () => r()));
  options.signal?.removeEventListener('abort', onAbort);
  if (options.signal?.aborted) throw new Error('download cancelled');
  if (!unsafe) {
    try {
      untar.end();
    } catch (e) {
      unsafe = e as Error;
    }
  }
  if (unsafe) throw new Error(`download of ${remoteDir} refused: ${unsafe.message}`);
  if (remoteCode !== 0) throw new Error(`download of ${remoteDir} failed: ${errors.join('').trim() || `exit ${remoteCode}`}`);
  if (striped)
    await striped.catch((e: unknown) => {
      throw e instanceof UnsafeArchiveError ? new Error(`download of ${remoteDir} refused: ${e.message}`) : e;
    });
  return { bytes };
}
