// The full check of big documents off the editor's thread. The full YAML parser reads about 1.5 MB/s, so a
// config over EDITOR_LIBRARY_PARSE_LIMIT that needs it (anchors, merge keys, block scalars) would freeze the
// extension host for up to a second per keystroke; here it runs in one worker thread instead. One job at a
// time per document, the newest text wins: while a check runs, further edits only replace what runs next.
import { Worker } from 'node:worker_threads';
import type { ValidateResult } from './validate';

export interface BackgroundRequest {
  readonly id: number;
  readonly text: string;
  readonly fileName: string;
  /** Where the check may read neighbouring files (see boundedRead.ts); empty: anywhere. */
  readonly roots: readonly string[];
}
export type BackgroundReply = { readonly id: number; readonly result: ValidateResult } | { readonly id: number; readonly error: string };

interface Job {
  readonly key: string;
  readonly text: string;
  readonly fileName: string;
  readonly roots: readonly string[];
  readonly resolve: (r: ValidateResult | undefined) => void;
  readonly reject: (e: Error) => void;
}

export class BackgroundValidator {
  private worker: Worker | undefined;
  private running: (Job & { readonly id: number }) | undefined;
  /** Per document, the newest text waiting for the worker; an older waiting job is answered undefined. */
  private readonly waiting = new Map<string, Job>();
  private nextId = 1;
  private disposed = false;
  private timer: NodeJS.Timeout | undefined;
  private expired = 0;

  /** `script` is the worker entry (dist/configWorker.js; tests pass the .ts with tsx in `execArgv`). */
  /** A check running longer than `timeoutMs` is stopped with its worker and rejected: nothing may hold the queue for ever. */
  constructor(
    private readonly script: string,
    private readonly execArgv: readonly string[] = [],
    private readonly timeoutMs = 30_000,
  ) {}

  /**
   * The full result for this text, or undefined when newer text for the same document superseded it (or
   * the validator was disposed). Rejects when the worker fails, so the caller can say the check did not run.
   */
  check(key: string, text: string, fileName: string, roots: readonly string[] = []): Promise<ValidateResult | undefined> {
    if (this.disposed) return Promise.resolve(undefined);
    return new Promise((resolve, reject) => {
      this.waiting.get(key)?.resolve(undefined);
      this.waiting.set(key, { key, text, fileName, roots, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    if (this.running || this.disposed) return;
    const next = this.waiting.values().next();
    if (next.done) return;
    const job = next.value;
    this.waiting.delete(job.key);
    const id = this.nextId++;
    this.running = { ...job, id };
    const w = this.ensureWorker();
    w.postMessage({ id, text: job.text, fileName: job.fileName, roots: job.roots } satisfies BackgroundRequest);
    this.timer = setTimeout(() => {
      if (this.running?.id !== id) return;
      // terminate() makes the worker exit; its exit handler then fails this job and starts the next.
      this.expired = id;
      void w.terminate();
    }, this.timeoutMs);
    this.timer.unref();
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    // A runaway check ends the worker (ERR_WORKER_OUT_OF_MEMORY), not the extension host.
    const w = new Worker(this.script, { execArgv: [...this.execArgv], resourceLimits: { maxOldGenerationSizeMb: 1024 } });
    // The extension host should not wait for an idle worker to exit.
    w.unref();
    w.on('message', (m: BackgroundReply) => {
      const job = this.running;
      if (!job || job.id !== m.id) return;
      clearTimeout(this.timer);
      this.running = undefined;
      if ('result' in m) job.resolve(m.result);
      else job.reject(new Error(m.error));
      this.pump();
    });
    const fail = (e: Error): void => {
      this.worker = undefined;
      clearTimeout(this.timer);
      const job = this.running;
      this.running = undefined;
      if (job)
        job.reject(job.id === this.expired ? new Error(`the check took longer than ${Math.max(1, Math.round(this.timeoutMs / 1000))} s and was stopped`) : e);
      this.pump();
    };
    w.on('error', fail);
    w.on('exit', (code) => {
      if (this.worker === w) fail(new Error(`the config check worker exited (${code})`));
    });
    this.worker = w;
    return w;
  }

  dispose(): void {
    this.disposed = true;
    clearTimeout(this.timer);
    for (const j of this.waiting.values()) j.resolve(undefined);
    this.waiting.clear();
    this.running?.resolve(undefined);
    this.running = undefined;
    void this.worker?.terminate();
    this.worker = undefined;
  }
}
