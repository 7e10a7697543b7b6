// Host half of the log panel's flow control. The host reads the log by byte offset only while the webview
// has credit: at most `windowBytes` sent and not yet acknowledged (the webview acks from xterm's write
// callback, i.e. once the text is parsed). A 5 MB/s stream therefore waits in the file, never in the
// webview's message queue, and the window stays responsive; the full log stays on disk.
import type { LogSignature, LogToWebview } from '../../protocol/log';
import type { RunDataSource, Unsubscribe } from './runDataSource';

export interface LogStreamerOptions {
  /** Bytes in flight before the host waits for acks. */
  readonly windowBytes?: number;
  readonly chunkBytes?: number;
  /** On (re)attach only the last this-many bytes are sent; older lines stay in the full log. */
  readonly tailBytes?: number;
  readonly scrollback?: number;
}

export const DEFAULT_SCROLLBACK = 10_000;

export class LogStreamer {
  private offset = 0;
  private seq = 0;
  private readonly inFlight = new Map<number, number>();
  private inFlightBytes = 0;
  private pumping = false;
  private again = false;
  private stopped = false;
  private decoder = new TextDecoder('utf-8');
  private sub: Unsubscribe | undefined;
  private readonly windowBytes: number;
  private readonly chunkBytes: number;
  private readonly tailBytes: number;
  /** Sent bytes and the largest in-flight figure seen, for tests and the benchmark. */
  readonly stats = { sentBytes: 0, maxInFlightBytes: 0, chunks: 0 };

  constructor(
    private readonly source: Pick<RunDataSource, 'logSize' | 'readLog' | 'onLogGrown'>,
    private readonly post: (message: LogToWebview) => void,
    private readonly title: string,
    private readonly signatures: readonly LogSignature[],
    private readonly opts: LogStreamerOptions = {},
  ) {
    this.windowBytes = opts.windowBytes ?? 512 * 1024;
    this.chunkBytes = opts.chunkBytes ?? 64 * 1024;
    this.tailBytes = opts.tailBytes ?? 4 * 1024 * 1024;
  }

  /** (Re)starts from the tail of the log: called on every "ready" (a reloaded webview has lost its lines). */
  async start(): Promise<void> {
    this.sub?.dispose();
    this.inFlight.clear();
    this.inFlightBytes = 0;
    this.decoder = new TextDecoder('utf-8');
    const size = this.source.logSize();
    let start = Math.max(0, size - this.tailBytes);
    if (start > 0) start = await this.nextLineStart(start, size);
    this.offset = start;
    this.post({
      type: 'init',
      title: this.title,
      signatures: this.signatures,
      startOffset: start,
      truncated: start > 0,
      scrollback: this.opts.scrollback ?? DEFAULT_SCROLLBACK,
    });
    this.sub = this.source.onLogGrown(() => void this.pump());
    await this.pump();
  }

  /** Starting mid-file, skip to just after a newline so the first line shown is whole. */
  private async nextLineStart(from: number, size: number): Promise<number> {
    const probe = await this.source.readLog(from, Math.min(64 * 1024, size - from));
    const nl = probe.bytes.indexOf(0x0a);
    return nl >= 0 ? from + nl + 1 : from;
  }

  ack(seq: number): void {
    const bytes = this.inFlight.get(seq);
    if (bytes === undefined) return;
    this.inFlight.delete(seq);
    this.inFlightBytes -= bytes;
    void this.pump();
  }

  get inFlightNow(): number {
    return this.inFlightBytes;
  }

  get sentOffset(): number {
    return this.offset;
  }

  async pump(): Promise<void> {
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.again = false;
        while (!this.stopped && this.inFlightBytes < this.windowBytes && this.offset < this.source.logSize()) {
          const want = Math.min(this.chunkBytes, this.windowBytes - this.inFlightBytes);
          const chunk = await this.source.readLog(this.offset, want);
          if (chunk.bytes.length === 0 || this.stopped) break;
          const seq = ++this.seq;
          const data = this.decoder.decode(chunk.bytes, { stream: true });
          this.inFlight.set(seq, chunk.bytes.length);
          this.inFlightBytes += chunk.bytes.length;
          this.stats.maxInFlightBytes = Math.max(this.stats.maxInFlightBytes, this.inFlightBytes);
          this.stats.sentBytes += chunk.bytes.length;
          this.stats.chunks++;
          this.post({ type: 'chunk', seq, offset: this.offset, bytes: chunk.bytes.length, data });
          this.offset += chunk.bytes.length;
        }
      } while (this.again && !this.stopped);
    } finally {
      this.pumping = false;
    }
  }

  dispose(): void {
    this.stopped = true;
    this.sub?.dispose();
  }
}
