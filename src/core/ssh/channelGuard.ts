// Limits for an exec channel the extension streams into and waits on (sync's extractors and apply command,
// upload stripes): the host may stop reading, stop answering, or answer without end. An idle limit fails the
// channel once nothing has moved for a while, counting bytes from the host and chunks the host accepted from us
// (a host that stops reading stalls our writes, so a stalled upload is as idle as a silent host), but only while
// the channel is watched: a channel opened early and not yet used, or one waiting on other channels that have
// their own limits, is paused. An output cap fails it once the host has printed too much. Either way the channel
// is closed and `failed` rejects with a HostCommandError naming the host and what was being done.
import { Transform } from 'node:stream';
import type { ClientChannel } from 'ssh2';
import { DEFAULT_COMMAND_OUTPUT_BYTES, DEFAULT_STREAM_IDLE_MS, noAnswerError, tooMuchOutputError } from './commandLimits';
import type { HostCommandError } from './commandLimits';

export interface StreamLimits {
  /** No byte either way for this long while the channel is watched: it fails (default DEFAULT_STREAM_IDLE_MS). */
  readonly idleMs?: number;
  /** More than this many bytes of stdout and stderr together: it fails (default DEFAULT_COMMAND_OUTPUT_BYTES). */
  readonly maxOutputBytes?: number;
}

export class ChannelGuard {
  /** Rejects when a limit is passed; never resolves. */
  readonly failed: Promise<never>;
  private reject!: (e: HostCommandError) => void;
  private timer: NodeJS.Timeout | undefined;
  private error: HostCommandError | undefined;
  private closed = false;
  private bytes = 0;
  private readonly idleMs: number;

  constructor(
    private readonly ch: ClientChannel,
    private readonly host: string,
    private readonly what: string,
    limits: StreamLimits = {},
  ) {
    this.idleMs = limits.idleMs ?? DEFAULT_STREAM_IDLE_MS;
    const max = limits.maxOutputBytes ?? DEFAULT_COMMAND_OUTPUT_BYTES;
    this.failed = new Promise<never>((_, reject) => (this.reject = reject));
    // Whoever races it may already have moved on; the error stays readable through `tripped`.
    this.failed.catch(() => undefined);
    const took = (d: Buffer): void => {
      this.bytes += d.length;
      if (this.bytes > max) return this.trip(tooMuchOutputError(host, what, max));
      this.touch();
    };
    ch.on('data', took);
    ch.stderr.on('data', took);
    ch.once('close', () => {
      this.closed = true;
      this.pause();
    });
  }

  /** The limit that was passed, if one was. */
  get tripped(): HostCommandError | undefined {
    return this.error;
  }

  /** Starts (or restarts) the idle limit: from now on the host must keep something moving. */
  watch(): void {
    if (this.closed || this.error) return;
    if (this.timer) return void this.timer.refresh();
    this.timer = setTimeout(() => this.trip(noAnswerError(this.host, this.what, this.idleMs)), this.idleMs);
  }

  /** Stops the idle limit while this channel waits on something that is bounded elsewhere. */
  pause(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  touch(): void {
    this.timer?.refresh();
  }

  /** A pass-through for what is piped into the channel: each chunk the channel takes counts as movement. */
  meter(): Transform {
    return new Transform({
      transform: (chunk: Buffer, _enc, done) => {
        this.touch();
        done(null, chunk);
      },
    });
  }

  /** `p`, or this guard's failure if a limit is passed first. */
  async race<T>(p: Promise<T>): Promise<T> {
    return await Promise.race([p, this.failed]);
  }

  private trip(e: HostCommandError): void {
    if (this.error) return;
    this.error = e;
    this.pause();
    this.ch.close();
    this.reject(e);
  }
}
