// A minimal POSIX tar (ustar + pax extended headers) writer, enough to stream many files to a remote `tar -x`
// over one exec channel. Names longer than ustar allows and sizes over 8 GiB go into pax records.
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
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
}

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, '0') + '\0';
}

function header(name: string, size: number, mtime: number, mode: number, type: '0' | '2' | 'x', linkName = ''): Buffer {
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

function padding(size: number): Buffer {
  const r = size % 512;
  return r === 0 ? Buffer.alloc(0) : Buffer.alloc(512 - r, 0);
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
    link === undefined ? '0' : '2',
    shortLink,
  );
  if (records.length === 0) return main;
  const pax = Buffer.from(records.join(''), 'utf8');
  return Buffer.concat([header('PaxHeader', pax.length, e.mtime, 0o644, 'x'), pax, padding(pax.length), main]);
}

const SMALL = 256 * 1024;
const READ_AHEAD = 32;

/**
 * Yields the archive as buffers; file content is read in large chunks and never held whole. Small files are
 * read a few dozen ahead, so the disk works while earlier bytes are being encrypted and sent.
 */
export async function* tarChunks(
  entries: readonly TarEntry[],
  signal?: AbortSignal,
  opts: { terminate?: boolean } = {},
): AsyncGenerator<Buffer, void, undefined> {
  let batch: Buffer[] = [];
  let batchBytes = 0;
  const flushAt = 1024 * 1024;
  const pending = new Map<number, Promise<Buffer>>();
  let ahead = 0;
  const prefetch = (upTo: number): void => {
    for (; ahead < Math.min(upTo, entries.length); ahead++) {
      const e = entries[ahead]!;
      if (typeof e.source === 'string' && e.size <= SMALL) {
        const p = readFile(e.source);
        p.catch(() => undefined);
        pending.set(ahead, p);
      }
    }
  };
  for (let i = 0; i < entries.length; i++) {
    if (signal?.aborted) throw new Error('aborted');
    prefetch(i + READ_AHEAD);
    const e = entries[i]!;
    batch.push(entryHeader(e));
    batchBytes += 512;
    const hash = e.onHash ? createHash('sha256') : undefined;
    const src = e.source;
    if (typeof src !== 'string') {
      const data = typeof src === 'function' ? src() : src;
      if (data.length !== e.size) throw new Error(`tar entry ${e.name}: ${data.length} bytes, header said ${e.size}`);
      hash?.update(data);
      batch.push(data);
      batchBytes += data.length;
    } else if (pending.has(i)) {
      const data = await pending.get(i)!;
      pending.delete(i);
      if (data.length !== e.size) throw new Error(`${src} changed size while syncing`);
      hash?.update(data);
      batch.push(data);
      batchBytes += data.length;
    } else {
      if (batch.length > 0) {
        yield Buffer.concat(batch);
        batch = [];
        batchBytes = 0;
      }
      let read = 0;
      for await (const chunk of createReadStream(src, { highWaterMark: 1024 * 1024, end: e.size - 1 }) as AsyncIterable<Buffer>) {
        read += chunk.length;
        hash?.update(chunk);
        yield chunk;
      }
      if (read !== e.size) throw new Error(`${src} changed size while syncing`);
    }
    if (hash) e.onHash?.(hash.digest('hex'));
    const pad = padding(e.size);
    if (pad.length > 0) {
      batch.push(pad);
      batchBytes += pad.length;
    }
    if (batchBytes >= flushAt) {
      yield Buffer.concat(batch);
      batch = [];
      batchBytes = 0;
    }
  }
  // The two zero blocks end the archive; leaving them out lets a caller append more entries to the stream.
  if (opts.terminate !== false) batch.push(Buffer.alloc(1024, 0));
  if (batch.length > 0) yield Buffer.concat(batch);
}
