// Large files of a download (checkpoints, merged weights) come back in stripes: byte ranges read by `dd skip=`
// on the host over several exec channels at once and written here at their offsets, while the rest of the
// folder comes as one tar stream (artifacts.ts). Over a long link one channel is capped by its window, so
// this is what makes a 1 GiB checkpoint arrive at the link's speed rather than at 2 MiB per round trip.
// Every name and number is the host's word: paths go through the same checks as the tar entries
// (safeUntar.ts), files are opened without following links, and each must end at the size listed.
import { closeSync, constants as fsc, fstatSync, ftruncateSync, futimesSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { SshSession } from '../../ssh/session';
import { shellQuote } from '../../ssh/quote';
import { STRIPE_BLOCK, inPool, planPieces } from '../../ssh/stripes';
import type { StripeFile } from '../../ssh/stripes';
import { UnsafeArchiveError, safeMode, safeTarget } from './safeUntar';
import { DEFAULT_STREAM_IDLE_MS, IdleLimit, noAnswerError, tooMuchOutputError } from '../../ssh/commandLimits';

/** Files at least this large are fetched in stripes. */
export const STRIPE_DOWNLOAD_BYTES = 64 * 1024 * 1024;

/** Parses `find -printf '%s %m %T@ %P\0'` output; a malformed record is an error, not a guess. */
export function parseLargeFiles(out: Buffer): StripeFile[] {
  const files: StripeFile[] = [];
  for (const rec of out.toString('utf8').split('\0')) {
    if (rec === '') continue;
    const m = /^(\d+) ([0-7]+) (\d+)(?:\.\d+)? (.+)$/s.exec(rec);
    if (!m) throw new UnsafeArchiveError(`unreadable file listing entry ${JSON.stringify(rec.slice(0, 200))}`);
    files.push({ size: Number(m[1]), mode: parseInt(m[2]!, 8), mtime: Number(m[3]), path: m[4]! });
  }
  return files;
}

/** The host-side listing: large regular files under `dir`, NUL-separated. */
export function largeFilesCommand(dir: string, minBytes = STRIPE_DOWNLOAD_BYTES): string {
  return `find ${shellQuote(dir)} -type f -size +${Math.floor(minBytes / 1024) - 1}k -printf '%s %m %T@ %P\\0'`;
}

/** GNU tar options that leave the striped files out of the tar stream (literal names, anchored at ./). */
export function excludeArgs(files: readonly StripeFile[]): string {
  return files.length === 0 ? '' : ` --no-wildcards --anchored ${files.map((f) => shellQuote(`--exclude=./${f.path}`)).join(' ')}`;
}

/**
 * Fetches `files` (relative to `remoteDir`) into `localDir` over `lanes` channels; calls onBytes with each
 * chunk's length. Resolves when every file is complete with its mode and mtime.
 */
export async function fetchStriped(
  session: SshSession,
  remoteDir: string,
  localDir: string,
  files: readonly StripeFile[],
  lanes: number,
  opts: { signal?: AbortSignal; onBytes?: (n: number) => void; idleTimeoutMs?: number } = {},
): Promise<void> {
  const idleMs = opts.idleTimeoutMs ?? DEFAULT_STREAM_IDLE_MS;
  const fds = new Map<StripeFile, number>();
  try {
    for (const f of files) {
      const { rel, target } = safeTarget(localDir, f.path);
      if (rel === '') throw new UnsafeArchiveError('a file listed without a name');
      mkdirSync(join(target, '..'), { recursive: true });
      fds.set(f, openSync(target, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_TRUNC | (fsc.O_NOFOLLOW ?? 0), safeMode(f.mode)));
    }
    await inPool(planPieces(files, lanes), lanes, async (p) => {
      if (opts.signal?.aborted) throw new Error('download cancelled');
      const fd = fds.get(p.file)!;
      const blocks = Math.ceil(p.length / STRIPE_BLOCK);
      if (blocks === 0) return;
      const ch = await session.execStream(
        `exec dd if=${shellQuote(`${remoteDir}/${p.file.path}`)} bs=${STRIPE_BLOCK} skip=${p.offset / STRIPE_BLOCK} count=${blocks} 2>/dev/null`,
      );
      const onAbort = (): void => {
        ch.close();
      };
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      let at = p.offset;
      const end = p.offset + p.length;
      // Asked for at once: the exit status can arrive with the channel's first packets (exitOf records it from the start).
      const exit = session.exitOf(ch);
      // A host that goes quiet, or sends past the range asked for, ends the piece at once (not when it agrees to close).
      let rejectLimit: (e: Error) => void = () => undefined;
      const limitHit = new Promise<never>((_, reject) => (rejectLimit = reject));
      limitHit.catch(() => undefined);
      const overLimit = (e: Error): void => {
        ch.close();
        rejectLimit(e);
      };
      const what = `downloading ${p.file.path}`;
      let received = 0;
      const idle = new IdleLimit(idleMs, () => overLimit(noAnswerError(session.resolved.alias, what, idleMs)));
      ch.on('data', (d: Buffer) => {
        idle.touch();
        // Never past this piece's range, whatever the host sends.
        const n = Math.min(d.length, end - at);
        if (n > 0) {
          writeSync(fd, d, 0, n, at);
          at += n;
          opts.onBytes?.(n);
        }
        // dd sends at most its count of blocks (more than the piece where a file grew since it was listed).
        received += d.length;
        if (received > blocks * STRIPE_BLOCK) overLimit(tooMuchOutputError(session.resolved.alias, what, blocks * STRIPE_BLOCK));
      });
      try {
        await Promise.race([new Promise<void>((r) => ch.on('close', () => r())), limitHit]);
      } finally {
        idle.stop();
        opts.signal?.removeEventListener('abort', onAbort);
      }
      if (opts.signal?.aborted) throw new Error('download cancelled');
      const status = await exit;
      const code = status ? (status.code ?? status.signal) : null;
      if (code !== 0 || at !== end)
        throw new Error(
          `reading ${p.file.path} at ${p.offset} from the host failed (${code !== 0 ? `exit ${code}` : `${at - p.offset} of ${p.length} bytes`})`,
        );
    });
    for (const [f, fd] of fds) {
      // The host listed the size; a file that grew while we read keeps only what was listed.
      if (fstatSync(fd).size !== f.size) ftruncateSync(fd, f.size);
      futimesSync(fd, f.mtime, f.mtime);
    }
  } finally {
    for (const fd of fds.values()) closeSync(fd);
  }
}
