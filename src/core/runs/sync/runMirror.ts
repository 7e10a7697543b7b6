// Mirrors a remote run's files into a local folder by byte offset. The local copy is the full log on
// disk (the panels keep only a bounded tail), and its size is the resume offset: after a reload, a crash
// or a dropped connection the tail restarts exactly where the last byte landed, so no line is lost or
// delivered twice.
import { appendFileSync, existsSync, mkdirSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import type { SshHost } from '../../ssh/reconnect';
import { tailFile } from '../../ssh/tail';
import type { TailOffsets } from '../store/runRecord';
import { RUN_FILES, runFile } from '../store/runFolder';
import type { RunFileKey } from '../store/runFolder';

/** The files a run writes on the host, by the key their offset has in the run record. */
export const MIRRORED_FILES: ReadonlyArray<{ readonly key: keyof TailOffsets; readonly name: string }> = [
  { key: 'output_log', name: RUN_FILES.log },
  { key: 'events', name: RUN_FILES.events },
  { key: 'gpu', name: RUN_FILES.gpu },
];

export interface MirrorCallbacks {
  /** New complete lines of one file, as bytes appended to the local copy. */
  onData?(file: keyof TailOffsets, data: Buffer, offsets: TailOffsets): void;
  onTruncated?(file: keyof TailOffsets): void;
  /** One file's tail lost its connection and is reconnecting (each file has its own tail). */
  onDropped?(file: keyof TailOffsets): void;
  onReconnected?(attempt: number, file: keyof TailOffsets): void;
}

export function localOffsets(localDir: string): TailOffsets {
  const size = (key: RunFileKey): number => (existsSync(runFile(localDir, key)) ? statSync(runFile(localDir, key)).size : 0);
  return { output_log: size('log'), events: size('events'), gpu: size('gpu') };
}

/**
 * Follows every mirrored file until the run's wrapper (pid) exits and the files are drained, or until
 * aborted. Without a pid (a run found on the host, started elsewhere) it follows until aborted.
 */
export async function mirrorRun(
  host: SshHost,
  remoteRunDir: string,
  localDir: string,
  options: {
    readonly pid?: number;
    readonly signal?: AbortSignal;
    readonly callbacks?: MirrorCallbacks;
    /**
     * Local sizes where this host's files begin (a relaunched run's earlier attempts came before them): the
     * host's offset is the local size less the base, and a replaced file cuts the local copy back to the base.
     */
    readonly base?: TailOffsets;
  },
): Promise<TailOffsets> {
  mkdirSync(localDir, { recursive: true });
  const offsets = localOffsets(localDir);
  const base = options.base ?? { output_log: 0, events: 0, gpu: 0 };
  await Promise.all(
    MIRRORED_FILES.map(async ({ key, name }) => {
      const local = join(localDir, name);
      const tail = tailFile(host, `${remoteRunDir}/${name}`, {
        fromOffset: Math.max(0, offsets[key] - base[key]),
        ...(options.pid !== undefined ? { untilPid: options.pid } : { follow: true }),
        // The log is read by people: a progress bar shows as it moves. The other two are parsed line by line.
        partialLines: key === 'output_log',
        ...(options.signal ? { signal: options.signal } : {}),
      });
      for await (const item of tail) {
        if (item.kind === 'data') {
          appendFileSync(local, item.data);
          offsets[key] = base[key] + item.nextOffset;
          options.callbacks?.onData?.(key, item.data, { ...offsets });
        } else if (item.kind === 'truncated') {
          // The remote file was replaced or cut: start the local copy over rather than splice two files.
          if (existsSync(local)) truncateSync(local, base[key]);
          offsets[key] = base[key];
          options.callbacks?.onTruncated?.(key);
        } else if (item.kind === 'dropped') {
          options.callbacks?.onDropped?.(key);
        } else {
          options.callbacks?.onReconnected?.(item.attempt, key);
        }
      }
    }),
  );
  return { ...offsets };
}
