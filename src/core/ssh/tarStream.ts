// A minimal POSIX tar (ustar + pax extended headers) writer, enough to stream many files to a remote `tar -x`
// over one exec channel. Names longer than ustar allows and sizes over 8 GiB go into pax records.
import { close, createReadStream, open, read } from 'node:fs';
import { createHash } from 'node:crypto';

export interface TarEntry {
  /** Path inside the archive (posix separators). */
  readonly name: string;
  readonly size: number;
  /** Unix seconds. */
  readonly mtime: number;
  readonly mode: number;
  /**
   * Local file to read the content from, the content itself, or a function producing it when the entry is
   * reached (after every earlier entry was sent; its length must equal `size`).
   */
  readonly source: string | Buffer | (() => Buffer);
  /** Receives the sha256 (hex) of the content as it was sent (computed while streaming, no second read). */
  readonly onHash?: (hex: string) => void;
  /** Makes the entry a symbolic link to this target (size must be 0, source empty). */
  readonly linkTarget?: string;
  /** Makes the entry a directory (size 0, source empty; the name ends with '/'). */
  readonly directory?: boolean;
}

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, '0') + '\0';
}

function header(name: string, size: number, mtime: number, mode: number, type: '0' | '2' | '5' | 'x', linkName = ''): Buffer {
  const h = Buffer.alloc(512, 0);
  h.write(name, 0, 100, 'utf8');
  h.write(linkName, 157, 100, 'utf8');
  h.write(octal(mode & 0o7777, 8), 100, 'latin1');
  h.write(octal(0, 8), 108, 'latin1');
  h.write(octal(0, 8), 116, 'latin1');
  h.write(octal(Math.min(size, 0o77777777777), 12), 124, 'latin1');
  h.write(octal(Math.max(0, Math.floor(mtime)), 12), 136, 'latin1');
  h.write('        ', 148, 'latin1');
  h.write(type, 156, 'latin1');
  h.write('ustar\0', 257, 'latin1');
  h.write('00', 263, 'latin1');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(octal(sum, 7) + ' ', 148, 'latin1');
  return h;
}

function paxRecord(key: string, value: string): string {
  // The length prefix counts itself, so iterate until it is stable.
  const body = ` ${key}=${value}\n`;
  let len = Buffer.byteLength(body) + 1;
  while (String(len).length + Buffer.byteLength(body) !== len) len = String(len).length + Buffer.byteLength(body);
  return `${len}${body}`;
}

function padLength(size: number): number {
  return (512 - (size % 512)) % 512;
}

function padding(size: number): Buffer {
  return Buffer.alloc(padLength(size), 0);
}

/** Header blocks for one entry (a pax header first when the name or size needs one). */
export function entryHeader(e: TarEntry): Buffer {
  const nameBytes = Buffer.byteLength(e.name, 'utf8');
  const records: string[] = [];
  if (nameBytes > 99) records.push(paxRecord('path', e.name));
  if (e.size > 0o77777777777) records.push(paxRecord('size', String(e.size)));
  const link = e.linkTarget;
  const linkBytes = link === undefined ? 0 : Buffer.byteLength(link, 'utf8');
  if (linkBytes > 99) records.push(paxRecord('linkpath', link!));
  const shortLink = link === undefined ? '' : linkBytes > 99 ? link.slice(0, 60).replace(/[^\x20-\x7e]/g, '_') : link;
  const main = header(
    nameBytes > 99 ? e.name.slice(0, 60).replace(/[^\x20-\x7e]/g, '_') : e.name,
    e.size,
    e.mtime,
    e.mode,
    e.directory ? '5' : link === undefined ? '0' : '2',
    shortLink,
  );
  if (records.length === 0) return main;
  const pax = Buffer.from(records.join(''), 'utf8');
  return Buffer.concat([header('PaxHeader', pax.length, e.mtime, 0o644, 'x'), pax, padding(pax.length), main]);
}

/**
 * Directory entries for every folder above `entries` (parents first), to lead an archive that is extracted into
 * the same place as others at once. GNU tar (1.34) creates a missing parent when opening a file fails, and two
 * of them doing so for the same folder race: one fails with "Cannot open: No such file or directory" (seen in
 * 162 of 400 extractions of two such archives here). With the folders as members first, each tar makes them
 * itself, and an existing one is fine; BusyBox tar and bsdtar never raced.
 */
export function parentDirEntries(entries: readonly TarEntry[], mtime: number): TarEntry[] {
  const dirs = new Set<string>();
  for (const e of entries) {
    for (let i = e.name.indexOf('/'); i > 0; i = e.name.indexOf('/', i + 1)) dirs.add(e.name.slice(0, i + 1));
  }
  return [...dirs].sort().map((name) => ({ name, size: 0, mtime, mode: 0o755, source: Buffer.alloc(0), directory: true }));
}

const SMALL = 256 * 1024;
/** Small files are packed into archive slices of about this size, read straight into place. */
const SLICE = 1024 * 1024;
/** Slices being read ahead of the one being sent: the disk works while earlier bytes are encrypted and sent. */
const SLICES_AHEAD = 4;

/**
 * Reads up to `length` bytes of `path` into `buf` at `offset` with the callback API: open, one read, close.
 * fs/promises' readFile costs an fstat, a FileHandle and a promise per step; for 10,000 small files that was
 * most of the sending thread's time (a third of a first sync), where this costs a fifth of it.
 */
function readInto(path: string, buf: Buffer, offset: number, length: number): Promise<number> {
  return inReadOrder(
    () =>
      new Promise((resolve, reject) =>
        open(path, 'r', (err, fd) => {
          if (err) return reject(err);
          read(fd, buf, offset, length, 0, (readErr, n) => close(fd, (closeErr) => (readErr || closeErr ? reject(readErr ?? closeErr) : resolve(n))));
        }),
      ),
  );
}

/**
 * Reads started at once, process-wide. Every step of a read (open, read, close) joins the back of libuv's
 * thread-pool queue, so with the read-ahead of four streams queued together (1,600 files) each file's read
 * and close waited for every other file's open: the first slice, and the first byte on the wire, came 70 ms
 * late on a first sync. A bounded window keeps files finishing in the order they were asked for, with enough
 * in flight to keep the pool's four threads busy.
 */
const READS_IN_FLIGHT = 16;
let readsInFlight = 0;
const readQueue: Array<() => void> = [];

async function inReadOrder<T>(fn: () => Promise<T>): Promise<T> {
  if (readsInFlight >= READS_IN_FLIGHT) await new Promise<void>((r) => readQueue.push(r));
  readsInFlight++;
  try {
    return await fn();
  } finally {
    readsInFlight--;
    readQueue.shift()?.();
  }
}

const isSmallFile = (e: TarEntry): e is TarEntry & { source: string } => typeof e.source === 'string' && e.size <= SMALL;
const isPacked = (e: TarEntry): boolean => isSmallFile(e) || Buffer.isBuffer(e.source);

/** A run of consecutive entries (small files and in-memory contents) laid out as one archive slice. */
interface Slice {
  readonly from: number;
  readonly to: number;
  /** Where each entry's content starts in the slice. */
  readonly at: readonly number[];
  readonly filled: Promise<Buffer>;
}

/**
 * Lays out entries [from, to) as one buffer (headers, contents, padding) and reads each file's content straight
 * into its place. Each read asks for one byte more than the scan's size, so a file that grew or shrank since
 * is caught without a stat; that byte lands where a header or padding is written once all reads are done.
 */
function fillSlice(entries: readonly TarEntry[], from: number, to: number): Slice {
  const headers: Buffer[] = [];
  const at: number[] = [];
  let total = 0;
  for (let i = from; i < to; i++) {
    const e = entries[i]!;
    const h = entryHeader(e);
    headers.push(h);
    at.push(total + h.length);
    total += h.length + e.size + padLength(e.size);
  }
  const buf = Buffer.allocUnsafe(total + 1);
  const reads: Array<Promise<void>> = [];
  for (let i = from; i < to; i++) {
    const e = entries[i]!;
    const off = at[i - from]!;
    if (Buffer.isBuffer(e.source)) e.source.copy(buf, off);
    else
      reads.push(
        readInto(e.source as string, buf, off, e.size + 1).then((n) => {
          if (n !== e.size) throw new Error(`${e.source as string} changed size while syncing`);
        }),
      );
  }
  const filled = Promise.all(reads).then(() => {
    for (let i = from; i < to; i++) {
      const h = headers[i - from]!;
      const off = at[i - from]!;
      h.copy(buf, off - h.length);
      const size = entries[i]!.size;
      buf.fill(0, off + size, off + size + padLength(size));
    }
    return buf.subarray(0, total);
  });
  filled.catch(() => undefined);
  return { from, to, at, filled };
}

/**
 * Yields the archive as buffers; file content is read in large chunks and never held whole. Small files are
 * packed into slices read a few ahead (fillSlice); large ones stream in 1 MiB reads; a content function is
 * called only when its entry is reached, after every earlier entry's onHash.
 */
export async function* tarChunks(
  entries: readonly TarEntry[],
  signal?: AbortSignal,
  opts: { terminate?: boolean } = {},
): AsyncGenerator<Buffer, void, undefined> {
  const slices: Slice[] = [];
  let planned = 0;
  // Starts slices until SLICES_AHEAD are pending or the next entry is not packable (it is handled in order).
  const planAhead = (): void => {
    while (slices.length < SLICES_AHEAD && planned < entries.length && isPacked(entries[planned]!)) {
      const from = planned;
      let bytes = 0;
      while (planned < entries.length && isPacked(entries[planned]!) && (planned === from || bytes + entries[planned]!.size + 1024 <= SLICE)) {
        bytes += entries[planned]!.size + 1024;
        planned++;
      }
      slices.push(fillSlice(entries, from, planned));
    }
  };
  let i = 0;
  while (i < entries.length) {
    if (signal?.aborted) throw new Error('aborted');
    planAhead();
    const slice = slices[0];
    if (slice && slice.from === i) {
      slices.shift();
      const buf = await slice.filled;
      for (let k = slice.from; k < slice.to; k++) {
        const e = entries[k]!;
        if (!e.onHash) continue;
        const off = slice.at[k - slice.from]!;
        e.onHash(
          createHash('sha256')
            .update(buf.subarray(off, off + e.size))
            .digest('hex'),
        );
      }
      i = slice.to;
      planAhead();
      yield buf;
      continue;
    }
    // An entry that is not packed: a large file (streamed) or content produced now.
    const e = entries[i]!;
    planned = Math.max(planned, i + 1);
    yield entryHeader(e);
    const hash = e.onHash ? createHash('sha256') : undefined;
    const src = e.source;
    if (typeof src !== 'string') {
      const data = typeof src === 'function' ? src() : src;
      if (data.length !== e.size) throw new Error(`tar entry ${e.name}: ${data.length} bytes, header said ${e.size}`);
      hash?.update(data);
      yield data;
    } else {
      let got = 0;
      for await (const chunk of createReadStream(src, { highWaterMark: 1024 * 1024, end: e.size - 1 }) as AsyncIterable<Buffer>) {
        got += chunk.length;
        hash?.update(chunk);
        yield chunk;
      }
      if (got !== e.size) throw new Error(`${src} changed size while syncing`);
    }
    if (hash) e.onHash?.(hash.digest('hex'));
    const pad = padLength(e.size);
    if (pad > 0) yield Buffer.alloc(pad, 0);
    i++;
  }
  // The two zero blocks end the archive; leaving them out lets a caller append more entries to the stream.
  if (opts.terminate !== false) yield Buffer.alloc(1024, 0);
}
