// What the Try Adapter panel does, without `vscode`: the generate process for each place (the run's host, this
// machine's CPU) starts on the first prompt there and stays up for the next ones, so the model loads once; each
// prompt's pieces of text go to the page as they arrive; Stop cancels; closing ends every process. The panel
// host (tryAdapterPanel.ts) forwards validated page messages here; the panel tests drive it against the page.
import type { AdapterGenerator, GeneratorInfo } from '../../core/runs/outputs/tryAdapter';
import type { TryFromWebview, TryToWebview, TryWhere } from '../../protocol/tryAdapterMessages';

export interface TryAdapterTarget {
  readonly runId: string;
  readonly runName: string;
  readonly host: string;
  /** Starts the generate process at `where`; the host side connects over the run's SSH connection. */
  open(where: TryWhere): Promise<AdapterGenerator>;
  /** Why the local CPU option cannot run, or undefined when it can. */
  readonly localUnavailable?: string;
}

interface Live {
  readonly gen: Promise<AdapterGenerator>;
  info?: GeneratorInfo;
}

export class TryAdapterSession {
  private readonly live = new Map<TryWhere, Live>();
  private readonly running = new Map<number, AbortController>();

  constructor(
    readonly target: TryAdapterTarget,
    private readonly post: (m: TryToWebview) => void,
    private readonly warn: (line: string) => void = () => undefined,
  ) {}

  /** The page (re)loaded: what it needs to show the current state. */
  replay(): void {
    const t = this.target;
    this.post({ type: 'init', runName: t.runName, host: t.host, ...(t.localUnavailable ? { localUnavailable: t.localUnavailable } : {}) });
    for (const [where, l] of this.live) {
      if (l.info) this.post({ type: 'status', where, state: 'ready', text: describe(l.info) });
    }
  }

  async handle(m: TryFromWebview): Promise<void> {
    if (m.type === 'stop') {
      this.running.get(m.requestId)?.abort();
      return;
    }
    if (m.type !== 'generate') return;
    if (m.where === 'local' && this.target.localUnavailable) {
      this.post({ type: 'error', requestId: m.requestId, message: this.target.localUnavailable });
      return;
    }
    const abort = new AbortController();
    this.running.set(m.requestId, abort);
    try {
      const gen = await this.generator(m.where);
      const r = await gen.generate(
        { prompt: m.prompt, temperature: m.temperature, maxNewTokens: m.maxNewTokens, chat: m.chat },
        (text) => this.post({ type: 'token', requestId: m.requestId, text }),
        abort.signal,
      );
      this.post({ type: 'done', requestId: m.requestId, tokens: r.tokens, stopped: r.stopped, seconds: r.seconds });
    } catch (err) {
      const message = (err as Error).message;
      this.warn(`[${this.target.runId}] try adapter (${m.where}): ${message}`);
      this.post({ type: 'error', requestId: m.requestId, message });
    } finally {
      this.running.delete(m.requestId);
    }
  }

  /** The live generator for `where`, started on first use; a failed or ended one is started again next time. */
  private async generator(where: TryWhere): Promise<AdapterGenerator> {
    let l = this.live.get(where);
    if (!l) {
      const text = where === 'host' ? `loading the model on ${this.target.host}…` : 'loading the model on this machine (CPU)…';
      this.post({ type: 'status', where, state: 'loading', text });
      l = { gen: this.target.open(where) };
      this.live.set(where, l);
    }
    const entry = l;
    try {
      const gen = await entry.gen;
      entry.info ??= await gen.ready();
      if (!gen.isOpen) throw new Error('the generate process ended');
      this.post({ type: 'status', where, state: 'ready', text: describe(entry.info) });
      return gen;
    } catch (err) {
      if (this.live.get(where) === entry) this.live.delete(where);
      void entry.gen.then((g) => g.close(0)).catch(() => undefined);
      this.post({ type: 'status', where, state: 'failed', text: (err as Error).message });
      throw err;
    }
  }

  dispose(): void {
    for (const a of this.running.values()) a.abort();
    for (const l of this.live.values()) void l.gen.then((g) => g.close()).catch(() => undefined);
    this.live.clear();
  }
}

function describe(i: GeneratorInfo): string {
  return `${i.base} + ${i.adapter} on ${i.device}${i.chatTemplate ? ' · chat template' : ''}`;
}
