// Unpacks the tar stream a host sends back (adapter, checkpoints) without the platform's tar: the host is not
// trusted, and tars differ in what they let through (symlinks that later writes follow, `../` names, absolute
// paths, device files, setuid bits). Only regular files and folders are accepted, each strictly inside the
// destination; anything else stops the download with the entry named. Formats: ustar, GNU long names (L),
// pax extended headers (x: path, size; g: ignored), base-256 sizes. The stream is bounded too: at most so many
// entries and so many bytes of declared content, checked at each header before a byte of it is written.
import { closeSync, constants as fsc, mkdirSync, openSync, writeSync } from 'node:fs';
import { isAbsolute, join, relative, sep } from 'node:path';

export class UnsafeArchiveError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsafeArchiveError';
  }
}

function cstr(b: Buffer, start: number, len: number): string {
  const s = b.subarray(start, start + len);
  const z = s.indexOf(0);
  return s.subarray(0, z < 0 ? s.length : z).toString('utf8');
}

function num(b: Buffer, start: number, len: number): number {
  const f = b.subarray(start, start + len);
  if (f[0]! & 0x80) {
    // base-256 (GNU) for large values
    let n = f[0]! & 0x7f;
    for (let i = 1; i < f.length; i++) n = n * 256 + f[i]!;
    return n;
  }
  const t = cstr(b, start, len).trim();
  return t ? parseInt(t, 8) : 0;
}

function paxRecords(data: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  let off = 0;
  while (off < data.length) {
    const sp = data.indexOf(0x20, off);
    if (sp < 0) break;
    const len = Number(data.toString('ascii', off, sp));
    if (!Number.isInteger(len) || len <= 0) throw new UnsafeArchiveError('malformed pax header');
    const rec = data.toString('utf8', sp + 1, off + len - 1);
    const eq = rec.indexOf('=');
    if (eq > 0) out.set(rec.slice(0, eq), rec.slice(eq + 1));
    off += len;
  }
  return out;
}

/** The entry's path relative to the destination, or an UnsafeArchiveError. */
export function safeEntryPath(name: string): string {
  if (name.includes('\0') || name.includes('\\')) throw new UnsafeArchiveError(`entry ${JSON.stringify(name)}: invalid characters`);
  if (name.startsWith('/') || isAbsolute(name)) throw new UnsafeArchiveError(`entry ${JSON.stringify(name)}: absolute path`);
  const parts = name.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.some((p) => p === '..')) throw new UnsafeArchiveError(`entry ${JSON.stringify(name)}: leaves the folder (..)`);
  return parts.join('/');
}

/** Where an entry named by the host lands: strictly inside `dest`, or an UnsafeArchiveError. '' is `dest` itself. */
export function safeTarget(dest: string, name: string): { rel: string; target: string } {
  const rel = safeEntryPath(name);
  const target = join(dest, ...rel.split('/'));
  const r = relative(dest, target);
  if (r.startsWith(`..${sep}`) || r === '..' || isAbsolute(r)) throw new UnsafeArchiveError(`entry ${JSON.stringify(name)} leaves the folder`);
  return { rel, target };
}

/** A folder of checkpoints holds a few thousand files; a stream that goes on past this is not one. */
export const MAX_DOWNLOAD_ENTRIES = 100_000;
/** Past any checkpoint folder this extension brings back (a 70B model's merged weights are 140 GB). */
export const MAX_DOWNLOAD_BYTES = 2 ** 40;

export interface UntarLimits {
  /** Entries of any kind (files, folders, metadata headers). */
  readonly maxEntries?: number;
  /** Bytes of content the headers declare, metadata included. */
  readonly maxBytes?: number;
}

/** The mode a file from the host gets here: no setuid, setgid, sticky or world-writable bits; always ours to write. */
export function safeMode(mode: number): number {
  return (mode & 0o755) | 0o600;
}

export class SafeUntar {
  private buf: Buffer = Buffer.alloc(0);
  private file: { fd: number; left: number; pad: number } | undefined;
  private meta: { left: number; pad: number; kind: 'x' | 'g' | 'L'; chunks: Buffer[] } | undefined;
  private pax = new Map<string, string>();
  private longName: string | undefined;
  private zeros = 0;
  private done = false;
  private entries = 0;
  private bytes = 0;
  private readonly maxEntries: number;
  private readonly maxBytes: number;
  /** Files opened for writing, relative to the destination, in order: what a failed download removes again. */
  readonly written: string[] = [];

  constructor(
    private readonly dest: string,
    limits: UntarLimits = {},
  ) {
    this.maxEntries = limits.maxEntries ?? MAX_DOWNLOAD_ENTRIES;
    this.maxBytes = limits.maxBytes ?? MAX_DOWNLOAD_BYTES;
    mkdirSync(dest, { recursive: true });
  }

  /** Counts one entry of `size` declared bytes against the limits, before anything of it is kept. */
  private count(size: number): void {
    if (!Number.isSafeInteger(size) || size < 0) throw new UnsafeArchiveError(`entry size ${String(size)} is not a size`);
    if (++this.entries > this.maxEntries) throw new UnsafeArchiveError(`more than ${this.maxEntries} entries`);
    this.bytes += size;
    if (this.bytes > this.maxBytes) throw new UnsafeArchiveError(`more than ${this.maxBytes} bytes of content`);
  }

  write(chunk: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    this.pump();
  }

  /** Throws when the stream ended inside an entry. */
  end(): void {
    this.pump();
    if (this.file) {
      closeSync(this.file.fd);
      this.file = undefined;
      throw new UnsafeArchiveError('archive ends inside a file');
    }
    if (this.meta) throw new UnsafeArchiveError('archive ends inside a header');
  }

  abort(): void {
    if (this.file) {
      try {
        closeSync(this.file.fd);
      } catch {
        /* closed */
      }
      this.file = undefined;
    }
  }

  private pump(): void {
    for (;;) {
      if (this.done) {
        this.buf = Buffer.alloc(0);
        return;
      }
      if (this.file) {
        const n = Math.min(this.file.left, this.buf.length);
        if (n > 0) {
          writeSync(this.file.fd, this.buf, 0, n);
          this.file.left -= n;
          this.buf = this.buf.subarray(n);
        }
        if (this.file.left > 0) return;
        if (this.buf.length < this.file.pad) return;
        this.buf = this.buf.subarray(this.file.pad);
        closeSync(this.file.fd);
        this.file = undefined;
        continue;
      }
      if (this.meta) {
        const n = Math.min(this.meta.left, this.buf.length);
        this.meta.chunks.push(this.buf.subarray(0, n));
        this.meta.left -= n;
        this.buf = this.buf.subarray(n);
        if (this.meta.left > 0 || this.buf.length < this.meta.pad) return;
        this.buf = this.buf.subarray(this.meta.pad);
        const data = Buffer.concat(this.meta.chunks);
        if (this.meta.kind === 'x') this.pax = paxRecords(data);
        else if (this.meta.kind === 'L') this.longName = cstr(data, 0, data.length);
        this.meta = undefined;
        continue;
      }
      if (this.buf.length < 512) return;
      const h = this.buf.subarray(0, 512);
      this.buf = this.buf.subarray(512);
      if (h.every((b) => b === 0)) {
        if (++this.zeros >= 2) this.done = true;
        continue;
      }
      this.zeros = 0;
      this.entry(h);
    }
  }

  private entry(h: Buffer): void {
    const type = String.fromCharCode(h[156]!) || '0';
    let size = num(h, 124, 12);
    if (type === 'x' || type === 'g' || type === 'L') {
      if (size > 1 << 20) throw new UnsafeArchiveError('oversized metadata entry');
      this.count(size);
      this.meta = { left: size, pad: (512 - (size % 512)) % 512, kind: type, chunks: [] };
      return;
    }
    const prefix = cstr(h, 345, 155);
    let name = this.longName ?? this.pax.get('path') ?? (prefix ? `${prefix}/${cstr(h, 0, 100)}` : cstr(h, 0, 100));
    if (this.pax.has('size')) size = Number(this.pax.get('size'));
    this.longName = undefined;
    this.pax = new Map();
    this.count(type === '5' ? 0 : size);
    if (type !== '0' && type !== '\0' && type !== '5' && type !== '7') {
      const what =
        ({ 1: 'a hard link', 2: 'a symbolic link', 3: 'a character device', 4: 'a block device', 6: 'a FIFO' } as Record<string, string>)[type] ??
        `type ${JSON.stringify(type)}`;
      throw new UnsafeArchiveError(`entry ${JSON.stringify(name)} is ${what}: only files and folders are accepted`);
    }
    const { rel, target } = safeTarget(this.dest, name);
    if (rel === '') {
      if (type === '5') return;
      throw new UnsafeArchiveError('a file entry without a name');
    }
    name = rel;
    if (type === '5') {
      mkdirSync(target, { recursive: true });
      return;
    }
    mkdirSync(join(target, '..'), { recursive: true });
    const mode = safeMode(num(h, 100, 8));
    // O_NOFOLLOW: a path a previous download left as something else is never followed.
    const fd = openSync(target, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_TRUNC | (fsc.O_NOFOLLOW ?? 0), mode);
    this.written.push(name);
    this.file = { fd, left: size, pad: (512 - (size % 512)) % 512 };
  }
}
