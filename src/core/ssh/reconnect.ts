// Keeps one live session per host: hands out the current one, and after a drop reconnects with
// exponential backoff (jittered, capped) until it succeeds, the caller aborts, or the failure is fatal.
import { abortableSleep } from '../abortableSleep';
import { connect, SshFatalError } from './session';
import type { ConnectOptions, SshSession, SshTarget } from './session';

export interface BackoffOptions {
  readonly initialMs?: number;
  readonly maxMs?: number;
  /** Give up after this many failed attempts in a row (default: never). */
  readonly maxAttempts?: number;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return abortableSleep(ms, signal, () => new Error('aborted'));
}

export class SshHost {
  private current: SshSession | undefined;
  private pending: Promise<SshSession> | undefined;
  /** How many connections were opened (1 + reconnects); tests and logs read it. */
  connects = 0;
  /** Sibling connections opened because the server's MaxSessions was reached. */
  overflowConnects = 0;
  private readonly siblings = new Set<SshSession>();

  constructor(
    readonly target: SshTarget,
    private readonly options: ConnectOptions,
    private readonly backoff: BackoffOptions = {},
  ) {}

  /** The live session, connecting (with backoff) when there is none. */
  async session(signal?: AbortSignal): Promise<SshSession> {
    if (this.current && !this.current.closed) return this.current;
    this.pending ??= this.connectWithBackoff(signal).finally(() => {
      this.pending = undefined;
    });
    return await this.pending;
  }

  private async connectWithBackoff(signal?: AbortSignal): Promise<SshSession> {
    let delay = this.backoff.initialMs ?? 250;
    const max = this.backoff.maxMs ?? 15_000;
    for (let attempt = 1; ; attempt++) {
      try {
        // Handed out with the login-shell probe still running: the first commands start beside it.
        const s = await connect(this.target, { ...this.options, awaitShellProbe: false, ...(signal ? { signal } : {}) });
        this.connects++;
        s.overflow = this.overflowFor(s);
        this.current = s;
        return s;
      } catch (err) {
        if (err instanceof SshFatalError || signal?.aborted) throw err;
        if (this.backoff.maxAttempts !== undefined && attempt >= this.backoff.maxAttempts) throw err;
        this.options.log?.(`connect to ${this.target.host} failed (${(err as Error).message}); retrying in ${delay} ms`);
        await sleep(delay * (0.75 + Math.random() * 0.5), signal);
        delay = Math.min(max, delay * 2);
      }
    }
  }

  /**
   * Runs `fn` with a live session; when the connection turns out to be dead (dropped but not yet noticed), it
   * reconnects and runs `fn` again. Only for idempotent operations (status, list, reads).
   */
  async use<T>(fn: (session: SshSession) => Promise<T>, signal?: AbortSignal): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const s = await this.session(signal);
      try {
        return await fn(s);
      } catch (err) {
        if (err instanceof SshFatalError) throw err;
        await new Promise((r) => setTimeout(r, 20));
        const dead = s.closed || /No response from server|Not connected|connection closed|ECONNRESET|EPIPE/i.test((err as Error).message);
        if (!dead || attempt >= 3 || signal?.aborted) throw err;
        if (!s.closed) s.close();
      }
    }
  }

  /**
   * The sibling connection `s` hands channels to once the server refuses more on it. One at a time, made on
   * first need, replaced when it drops, closed with `s`; a sibling has its own sibling in turn.
   */
  private overflowFor(s: SshSession): () => Promise<SshSession> {
    let sibling: Promise<SshSession> | undefined;
    const open = async (): Promise<SshSession> => {
      const sib = await connect(this.target, { ...this.options, awaitShellProbe: false });
      this.overflowConnects++;
      this.options.log?.(`${this.target.host}: the server's MaxSessions was reached; opened another connection`);
      sib.overflow = this.overflowFor(sib);
      this.siblings.add(sib);
      sib.onClose(() => this.siblings.delete(sib));
      s.onClose(() => sib.close());
      return sib;
    };
    return async () => {
      for (;;) {
        const p = (sibling ??= open());
        const sib = await p.catch((err: unknown) => {
          if (sibling === p) sibling = undefined;
          throw err;
        });
        if (!sib.closed) return sib;
        if (sibling === p) sibling = undefined;
      }
    };
  }

  close(): void {
    this.current?.close();
    this.current = undefined;
    for (const sib of this.siblings) sib.close();
    this.siblings.clear();
  }
}
