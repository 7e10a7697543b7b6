// A followed run's log as the log panel reads it: the mirror hands each appended piece over in memory
// (RunManager.onLogAppended), so the panel never polls the file this same process is writing. The file is
// read only to replay what came before the panel opened, or what a slow reader let fall out of the window.
import { existsSync, promises as fsp, statSync } from 'node:fs';

/** Bytes appended to a run's local log at `offset`; an empty piece at an offset below the size is a cut. */
export interface LogAppend {
  readonly offset: number;
  readonly bytes: Uint8Array;
}

/** The newest bytes kept in memory for a reader that lags; older ones are read from the file. */
const WINDOW_BYTES = 8 * 1024 * 1024;

export class LiveLog {
  private known: number;
  /** Offset of the first byte in `pieces`. */
  private windowStart: number;
  private pieces: Buffer[] = [];
  private windowBytes = 0;
  private readonly listeners = new Set<(size: number, truncated: boolean) => void>();
  /** Reads that went to the file (the replay), for tests. */
  readonly stats = { fileReads: 0, memoryReads: 0 };

  constructor(
    readonly path: string,
    private readonly maxWindowBytes = WINDOW_BYTES,
  ) {
    // Appends arrive after this size is taken (the mirror writes and hands over in one turn), so nothing
    // between the file and the stream is missed or seen twice.
    this.known = existsSync(path) ? statSync(path).size : 0;
    this.windowStart = this.known;
  }

  size(): number {
    return this.known;
  }

  /** One piece from the stream. */
  append(piece: LogAppend): void {
    const bytes = Buffer.from(piece.bytes.buffer, piece.bytes.byteOffset, piece.bytes.byteLength);
    const truncated = piece.offset < this.known;
    if (piece.offset !== this.known) {
      // Cut (the host's file was replaced) or a gap: what is in memory no longer lines up; start the window here.
      this.pieces = [];
      this.windowBytes = 0;
      this.windowStart = piece.offset;
      this.known = piece.offset;
    }
    if (bytes.length > 0) {
      this.pieces.push(Buffer.from(bytes));
      this.windowBytes += bytes.length;
      this.known += bytes.length;
      while (this.windowBytes > this.maxWindowBytes && this.pieces.length > 1) {
        const old = this.pieces.shift()!;
        this.windowBytes -= old.length;
        this.windowStart += old.length;
      }
    }
    for (const l of [...this.listeners]) l(this.known, truncated);
  }

  async read(offset: number, maxBytes: number): Promise<Buffer> {
    if (offset >= this.known || maxBytes <= 0) return Buffer.alloc(0);
    if (offset < this.windowStart) {
      this.stats.fileReads++;
      return this.readFile(offset, Math.min(maxBytes, this.windowStart - offset));
    }
    this.stats.memoryReads++;
    const parts: Buffer[] = [];
    let at = this.windowStart;
    let want = Math.min(maxBytes, this.known - offset);
    for (const p of this.pieces) {
      if (want <= 0) break;
      const end = at + p.length;
      if (end > offset) {
        const from = Math.max(0, offset - at);
        const take = p.subarray(from, Math.min(p.length, from + want));
        parts.push(take);
        want -= take.length;
      }
      at = end;
    }
    return Buffer.concat(parts);
  }

  private async readFile(offset: number, length: number): Promise<Buffer> {
    const fh = await fsp.open(this.path, 'r');
    try {
      const buf = Buffer.alloc(length);
      const { bytesRead } = await fh.read(buf, 0, length, offset);
      return buf.subarray(0, bytesRead);
    } finally {
      await fh.close();
    }
  }

  onGrow(listener: (size: number, truncated: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
