// Reading a file the workspace names, without letting the workspace choose what the read does. A path in a
// config can lead through `../` or a link to /dev/zero (an endless read: the extension host died of
// std::bad_alloc and crash-looped), to a FIFO (the read blocks the host's only thread until a writer comes) or to
// a 3 GB file. So: the path is resolved and must stay under one of the roots; it must be a regular file both
// by name (so no device or FIFO is ever opened) and on the opened descriptor (so a swap between the two checks
// gains nothing); the open never blocks (O_NONBLOCK); at most `cap` bytes are read, whatever the size says.
import { closeSync, constants, fstatSync, openSync, readSync, realpathSync, statSync } from 'node:fs';
import type { Stats } from 'node:fs';
import { open as openAsync, stat as statAsync } from 'node:fs/promises';
import { sep } from 'node:path';

/** What a bounded read gave: the text, or why there is none (`refused` is a sentence for a diagnostic). */
export type FileRead = { readonly text: string } | { readonly missing: true } | { readonly refused: string };

export interface BoundedReadOptions {
  /** Most bytes read; a larger file is refused. */
  readonly cap: number;
  /** The resolved path must lie under one of these (after their own links are resolved); none: anywhere. */
  readonly roots?: readonly string[];
}

/** Referenced configs (accelerate, DeepSpeed, config.json) are kilobytes; 4 MiB leaves room and bounds the cost. */
export const REFERENCED_FILE_CAP = 4 * 1024 * 1024;

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | (constants.O_NOCTTY ?? 0);

function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a folder';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}

const mb = (n: number): string => `${(n / 1048576).toFixed(n < 1048576 ? 2 : 1)} MB`;

function outsideRoots(real: string, roots: readonly string[] | undefined, realRoot: (r: string) => string | undefined): boolean {
  if (!roots || roots.length === 0) return false;
  return !roots.some((r) => {
    const rr = realRoot(r);
    return rr !== undefined && (real === rr || real.startsWith(rr.endsWith(sep) ? rr : rr + sep));
  });
}

const refusedOutside = (real: string): { refused: string } => ({
  refused: `it resolves to ${real}, outside the workspace; only files inside the workspace are read`,
});
const refusedKind = (st: Stats): { refused: string } => ({ refused: `it is ${kindOf(st)}, not a regular file` });
const refusedSize = (size: number, cap: number): { refused: string } => ({ refused: `it is larger than ${mb(cap)} (${mb(size)}); such a file is not read` });

function realOrUndefined(p: string): string | undefined {
  try {
    return realpathSync(p);
  } catch {
    return undefined;
  }
}

/** The text of `readBoundedBytesSync` (invalid UTF-8 replaced: a referenced config's own check reports encoding). */
export function readBoundedSync(p: string, opts: BoundedReadOptions): FileRead {
  const r = readBoundedBytesSync(p, opts);
  return 'bytes' in r ? { text: Buffer.from(r.bytes.buffer, r.bytes.byteOffset, r.bytes.byteLength).toString('utf8') } : r;
}

/** Synchronous (the config checks are synchronous) and bounded: no call here can block or allocate past `cap`. */
export function readBoundedBytesSync(p: string, opts: BoundedReadOptions): { readonly bytes: Uint8Array } | Exclude<FileRead, { readonly text: string }> {
  let real: string;
  try {
    real = realpathSync(p);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT'
      ? { missing: true }
      : { refused: `it cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  if (outsideRoots(real, opts.roots, realOrUndefined)) return refusedOutside(real);
  let fd: number;
  try {
    const st = statSync(real);
    if (!st.isFile()) return refusedKind(st);
    if (st.size > opts.cap) return refusedSize(st.size, opts.cap);
    fd = openSync(real, OPEN_FLAGS);
  } catch (e) {
    return { refused: `it cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return refusedKind(st);
    if (st.size > opts.cap) return refusedSize(st.size, opts.cap);
    // One byte past the cap tells a file that grew since fstat from one that is exactly at it.
    const buf = Buffer.allocUnsafe(Math.min(opts.cap + 1, st.size + 1));
    let n = 0;
    for (;;) {
      const got = readSync(fd, buf, n, buf.length - n, null);
      if (got === 0) break;
      n += got;
      if (n === buf.length) break;
    }
    if (n > opts.cap) return refusedSize(n, opts.cap);
    return { bytes: buf.subarray(0, n) };
  } catch (e) {
    return { refused: `it cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'})` };
  } finally {
    closeSync(fd);
  }
}

/** What the workspace scan needs of a file: its first `prefix` bytes, and its size (to report a skip). */
export type PrefixRead = { readonly bytes: Uint8Array; readonly size: number; readonly complete: boolean } | { readonly refused: string };

/**
 * The first `prefix` bytes of a regular file, off the caller's thread (libuv's pool): for deciding what a file
 * is without reading it in full. `complete` when those bytes are the whole file.
 */
export async function readPrefix(p: string, prefix: number): Promise<PrefixRead> {
  let st: Stats;
  try {
    st = await statAsync(p);
  } catch (e) {
    return { refused: `it cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  if (!st.isFile()) return refusedKind(st);
  let fh;
  try {
    fh = await openAsync(p, OPEN_FLAGS);
  } catch (e) {
    return { refused: `it cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  try {
    const fst = await fh.stat();
    if (!fst.isFile()) return refusedKind(fst);
    const want = Math.min(prefix, fst.size) + 1;
    const buf = Buffer.allocUnsafe(want);
    let n = 0;
    while (n < want) {
      const { bytesRead } = await fh.read(buf, n, want - n, n);
      if (bytesRead === 0) break;
      n += bytesRead;
    }
    const complete = n <= prefix;
    return { bytes: buf.subarray(0, Math.min(n, prefix)), size: Math.max(fst.size, n), complete };
  } catch (e) {
    return { refused: `it cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'})` };
  } finally {
    await fh.close();
  }
}
