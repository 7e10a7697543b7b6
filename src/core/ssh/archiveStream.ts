// Streams many files as one archive (the format and the host's reader are in packFormat.ts) over an exec
// channel: small files packed into slices read straight into place a few ahead, large ones in 1 MiB reads,
// each file hashed from the bytes as they were sent.
import { close, createReadStream, open, read } from 'node:fs';
import { createHash } from 'node:crypto';
import { PACK_END, packHeader } from './packFormat';
import type { ArchiveEntry } from './packFormat';

export type { ArchiveEntry };

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

const isSmallFile = (e: ArchiveEntry): e is ArchiveEntry & { source: string } => typeof e.source === 'string' && e.size <= SMALL;
const isPacked = (e: ArchiveEntry): boolean => isSmallFile(e) || Buffer.isBuffer(e.source);

/** A run of consecutive entries (small files and in-memory contents) laid out as one archive slice. */
interface Slice {
  readonly from: number;
  readonly to: number;
  /** Where each entry's content starts in the slice. */
  readonly at: readonly number[];
  readonly filled: Promise<Buffer>;
}

/**
 * Lays out entries [from, to) as one buffer (headers and contents) and reads each file's content straight
 * into its place. Each read asks for one byte more than the scan's size, so a file that grew or shrank since
 * is caught without a stat; that byte lands where the next header is written once all reads are done.
 */
function fillSlice(entries: readonly ArchiveEntry[], from: number, to: number): Slice {
  const headers: Buffer[] = [];
  const at: number[] = [];
  let total = 0;
  for (let i = from; i < to; i++) {
    const e = entries[i]!;
    const h = packHeader(e);
    headers.push(h);
    at.push(total + h.length);
    total += h.length + e.size;
  }
  const buf = Buffer.allocUnsafe(total + 1);
  const reads: Array<Promise<void>> = [];
  for (let i = from; i < to; i++) {
    const e = entries[i]!;
    const off = at[i - from]!;
    if (Buffer.isBuffer(e.source)) {
      if (e.source.length !== e.size) throw new Error(`archive entry ${e.name}: ${e.source.length} bytes, header said ${e.size}`);
      e.source.copy(buf, off);
    } else
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
export async function* archiveChunks(
  entries: readonly ArchiveEntry[],
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
    yield packHeader(e);
    const hash = e.onHash ? createHash('sha256') : undefined;
    const src = e.source;
    if (typeof src !== 'string') {
      const data = typeof src === 'function' ? src() : src;
      if (data.length !== e.size) throw new Error(`archive entry ${e.name}: ${data.length} bytes, header said ${e.size}`);
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
    i++;
  }
  // The two zero blocks end the archive; leaving them out lets a caller append more entries to the stream.
  if (opts.terminate !== false) yield PACK_END;
}
