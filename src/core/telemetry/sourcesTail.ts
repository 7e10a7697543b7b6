// Tailing a growing local file by byte offset: fs.watch for promptness, a stat poll because fs.watch misses
// changes on some filesystems (network mounts, editors that replace files). Both only ever trigger a stat.
import { watch, promises as fsp } from 'node:fs';
import type { FSWatcher } from 'node:fs';

export interface FileTailOptions {
  readonly pollMs?: number;
}

export type TailListener = (size: number, truncated: boolean) => void;

export class FileTail {
  private known = 0;
  private watcher: FSWatcher | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly listeners = new Set<TailListener>();
  private checking = false;
  private again = false;
  private exists = false;

  constructor(
    readonly path: string,
    private readonly opts: FileTailOptions = {},
  ) {}

  /** Bytes known to be in the file at the last check. */
  size(): number {
    return this.known;
  }

  fileExists(): boolean {
    return this.exists;
  }

  async start(): Promise<void> {
    await this.check();
    try {
      this.watcher = watch(this.path, { persistent: false }, () => void this.check());
      this.watcher.on('error', () => undefined);
    } catch {
      // The file may not exist yet; the poll picks it up when it appears.
    }
    this.timer = setInterval(() => void this.check(), this.opts.pollMs ?? 500);
    this.timer.unref?.();
  }

  onGrow(listener: TailListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async read(offset: number, maxBytes: number): Promise<Buffer> {
    const end = Math.min(this.known, offset + maxBytes);
    if (end <= offset) return Buffer.alloc(0);
    const fh = await fsp.open(this.path, 'r');
    try {
      const buf = Buffer.alloc(end - offset);
      const { bytesRead } = await fh.read(buf, 0, buf.length, offset);
      return bytesRead === buf.length ? buf : buf.subarray(0, bytesRead);
    } finally {
      await fh.close();
    }
  }

  /** Stats the file and tells listeners when it grew (or shrank: a rotated or rewritten file starts over). */
  async check(): Promise<void> {
    if (this.checking) {
      this.again = true;
      return;
    }
    this.checking = true;
    try {
      do {
        this.again = false;
        let size: number;
        try {
          size = (await fsp.stat(this.path)).size;
          this.exists = true;
        } catch {
          this.exists = false;
          continue;
        }
        if (size !== this.known) {
          const truncated = size < this.known;
          this.known = size;
          for (const l of [...this.listeners]) l(size, truncated);
        }
      } while (this.again);
    } finally {
      this.checking = false;
    }
  }

  stop(): void {
    this.watcher?.close();
    this.watcher = undefined;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.listeners.clear();
  }
}

/** Complete lines of a growing text file, in order, each delivered once (a trailing partial line waits). */
export class LineTail {
  private offset = 0;
  private rest = '';
  private readonly decoder = new TextDecoder('utf-8');
  private reading = false;
  private pending = false;

  constructor(
    readonly tail: FileTail,
    private readonly onLines: (lines: string[]) => void,
  ) {
    tail.onGrow((_size, truncated) => {
      if (truncated) {
        this.offset = 0;
        this.rest = '';
      }
      void this.drain();
    });
  }

  async drain(): Promise<void> {
    if (this.reading) {
      this.pending = true;
      return;
    }
    this.reading = true;
    try {
      do {
        this.pending = false;
        while (this.offset < this.tail.size()) {
          const buf = await this.tail.read(this.offset, 1024 * 1024);
          if (buf.length === 0) break;
          this.offset += buf.length;
          const text = this.rest + this.decoder.decode(buf, { stream: true });
          const lines = text.split('\n');
          this.rest = lines.pop() ?? '';
          const complete = lines.map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l)).filter((l) => l.trim() !== '');
          if (complete.length) this.onLines(complete);
        }
      } while (this.pending);
    } finally {
      this.reading = false;
    }
  }
}
