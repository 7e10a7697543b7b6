// The connect deadline. ssh2's own readyTimeout counts the whole handshake, including the time a person
// spends comparing a host key fingerprint or fetching a one-time code from their phone, so a careful user
// was cut off after 20 s. This one stops counting while the user is being asked something.
export class HandshakeTimer {
  private timer: NodeJS.Timeout | undefined;
  private remaining: number;
  private startedAt = 0;
  private asking = 0;
  private done = false;

  constructor(
    ms: number,
    private readonly onTimeout: () => void,
  ) {
    this.remaining = ms;
  }

  start(): void {
    this.startedAt = Date.now();
    this.timer = setTimeout(() => this.fire(), this.remaining);
  }

  /** Runs `ask` (a prompt) with the clock stopped; prompts may overlap. */
  async pauseWhile<T>(ask: () => Promise<T>): Promise<T> {
    if (this.asking++ === 0 && this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.remaining -= Date.now() - this.startedAt;
    }
    try {
      return await ask();
    } finally {
      if (--this.asking === 0 && !this.done) this.start();
    }
  }

  stop(): void {
    this.done = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private fire(): void {
    if (this.done) return;
    this.done = true;
    this.onTimeout();
  }
}
