// Brings a remote folder (the adapter, checkpoints) back as one tar stream over the SSH connection and
// unpacks it here (safeUntar.ts): one round trip, however many files, and progress by bytes.
import { mkdirSync } from 'node:fs';
import type { SshSession } from '../ssh/session';
import { shellQuote } from '../ssh/quote';
import { SafeUntar } from './safeUntar';

export interface DownloadProgress {
  readonly bytes: number;
  readonly totalBytes?: number;
}

export async function downloadFolder(
  session: SshSession,
  remoteDir: string,
  localDir: string,
  options: { readonly signal?: AbortSignal; readonly onProgress?: (p: DownloadProgress) => void } = {},
): Promise<{ bytes: number }> {
  const q = shellQuote(remoteDir);
  const size = await session.exec(`du -sb ${q} 2>/dev/null | cut -f1`);
  const totalBytes = Number(size.stdout.toString().trim()) || undefined;
  mkdirSync(localDir, { recursive: true });
  const ch = await session.execStream(`test -d ${q} || { echo "no such folder: ${remoteDir.replace(/[^\w./~-]/g, '?')}" >&2; exit 3; }; tar -C ${q} -cf - .`);
  // Unpacked here, not by the local tar: only files and folders inside localDir (safeUntar.ts).
  const untar = new SafeUntar(localDir);
  let bytes = 0;
  const errors: string[] = [];
  let unsafe: Error | undefined;
  ch.stderr.on('data', (d: Buffer) => errors.push(d.toString()));
  const onAbort = (): void => { ch.close(); };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  ch.on('data', (d: Buffer) => {
    if (unsafe) return;
    bytes += d.length;
    try { untar.write(d); } catch (e) { unsafe = e as Error; untar.abort(); ch.close(); return; }
    options.onProgress?.({ bytes, ...(totalBytes ? { totalBytes } : {}) });
  });
  // The exit status may come before the last data: the download is over when the channel closes.
  let remoteCode: number | null = null;
  ch.on('exit', (c: number | null) => { remoteCode = c; });
  await new Promise<void>((r) => ch.on('close', () => r()));
  options.signal?.removeEventListener('abort', onAbort);
  if (options.signal?.aborted) throw new Error('download cancelled');
  if (!unsafe) { try { untar.end(); } catch (e) { unsafe = e as Error; } }
  if (unsafe) throw new Error(`download of ${remoteDir} refused: ${unsafe.message}`);
  if (remoteCode !== 0) throw new Error(`download of ${remoteDir} failed: ${errors.join('').trim() || `exit ${remoteCode}`}`);
  return { bytes };
}
