// A run's files on this machine (output.log, events.jsonl, gpu.csv, gpu_procs.csv from one run folder),
// tailed by byte offset: the panels work on a copied run folder or a local run without any SSH.
import { existsSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { FileTail, LineTail } from '../../core/telemetry/sourcesTail';
import type { RunEvent } from '../../core/telemetry/events';
import { LiveLog } from '../../core/runs/sync/liveLog';
import type { LogAppend } from '../../core/runs/sync/liveLog';
import { parseGpuCsvLine, parseGpuProcsCsvLine, parseHostCsvLine } from './gpuCsvLines';
import type { GpuProcess, GpuSample, HostSample, HostState } from '../../protocol/gpu';
import type { LogChunk, RunDataSource, Unsubscribe } from './runDataSource';
import { EventLines, RUN_FILES, runFile } from '../../core/runs/store/runFolder';
import type { RunFileKey } from '../../core/runs/store/runFolder';

export interface LocalRunFiles {
  readonly log?: string;
  readonly events?: string;
  readonly gpu?: string;
  readonly procs?: string;
}

/** Events and GPU samples kept for replay to a panel opened late; older ones leave. */
const MAX_EVENTS = 50_000;
const MAX_SAMPLES = 20_000;

/** From any one file of a run folder, the run's files that exist next to it. */
export function runFilesNear(path: string): LocalRunFiles {
  const dir = dirname(path);
  const pick = (key: RunFileKey): string | undefined => (existsSync(runFile(dir, key)) ? runFile(dir, key) : undefined);
  const name = basename(path);
  const files: { log?: string; events?: string; gpu?: string; procs?: string } = {
    log: pick('log'),
    events: pick('events'),
    gpu: pick('gpu'),
    procs: pick('gpuProcs'),
  };
  if (name.endsWith('.jsonl')) files.events = path;
  else if (name.endsWith('.csv') && !name.includes('procs')) files.gpu = path;
  else if (!name.endsWith('.csv')) files.log = path;
  return files;
}

class Listeners<T> {
  private readonly set = new Set<(v: T) => void>();
  add(l: (v: T) => void): Unsubscribe {
    this.set.add(l);
    return { dispose: () => this.set.delete(l) };
  }
  fire(v: T): void {
    for (const l of [...this.set]) l(v);
  }
}

export class LocalRunDataSource implements RunDataSource {
  readonly id: string;
  readonly label: string;
  /** What is known is where the files are, not which machine sampled them (a copied run folder, a replay). */
  readonly host = 'files on this machine';
  /** The log: a polled file, or (a followed run) the mirror's in-memory stream over the file's replay. */
  private readonly logTail: Pick<FileTail, 'size' | 'read' | 'onGrow'> | undefined;
  private readonly logSub: Unsubscribe | undefined;
  private readonly tails: FileTail[] = [];
  private readonly events: RunEvent[] = [];
  private readonly samples: GpuSample[] = [];
  private readonly hostSamples: HostSample[] = [];
  private processes: readonly GpuProcess[] = [];
  private state: HostState;
  private readonly eventListeners = new Listeners<readonly RunEvent[]>();
  private readonly sampleListeners = new Listeners<readonly GpuSample[]>();
  private readonly hostSampleListeners = new Listeners<readonly HostSample[]>();
  private readonly procListeners = new Listeners<readonly GpuProcess[]>();
  private readonly stateListeners = new Listeners<HostState>();
  /** When the last GPU sample arrived here (epoch ms): a live run whose samples stop says so. */
  lastSampleAt: number | undefined;
  private readonly eventLines = new EventLines({ keep: false });
  /** events.jsonl lines that did not parse, counted rather than shown. */
  get badEventLines(): number {
    return this.eventLines.badLines;
  }

  constructor(
    readonly files: LocalRunFiles,
    opts: {
      readonly pollMs?: number;
      readonly label?: string;
      /** The log's appended bytes as this process writes them: then the file is read only to replay. */
      readonly logStream?: (listener: (piece: LogAppend) => void) => Unsubscribe;
    } = {},
  ) {
    const any = files.log ?? files.events ?? files.gpu ?? '';
    this.id = `local:${dirname(any)}`;
    this.label = opts.label ?? `${basename(dirname(any))}/${basename(any)}`;
    this.state = files.gpu ? { kind: 'connecting' } : { kind: 'noGpu', detail: `no ${RUN_FILES.gpu} next to ${basename(any)}` };
    const pollMs = opts.pollMs ?? 500;
    if (files.log && opts.logStream) {
      const live = new LiveLog(files.log);
      this.logTail = live;
      this.logSub = opts.logStream((piece) => live.append(piece));
    } else if (files.log) {
      const tail = new FileTail(files.log, { pollMs });
      this.logTail = tail;
      this.tails.push(tail);
    }
    if (files.events) {
      const t = new FileTail(files.events, { pollMs });
      this.tails.push(t);
      new LineTail(t, (lines) => this.addEvents(lines));
    }
    if (files.gpu) {
      const t = new FileTail(files.gpu, { pollMs });
      this.tails.push(t);
      new LineTail(t, (lines) => this.addSamples(lines));
    }
    if (files.procs) {
      const t = new FileTail(files.procs, { pollMs });
      this.tails.push(t);
      new LineTail(t, (lines) => this.addProcs(lines));
    }
  }

  async start(): Promise<this> {
    await Promise.all(this.tails.map((t) => t.start()));
    return this;
  }

  fullLogPath(): string | undefined {
    return this.files.log;
  }

  logSize(): number {
    return this.logTail?.size() ?? 0;
  }

  async readLog(offset: number, maxBytes: number): Promise<LogChunk> {
    if (!this.logTail) return { offset, bytes: new Uint8Array(0) };
    return { offset, bytes: await this.logTail.read(offset, maxBytes) };
  }

  onLogGrown(listener: (size: number) => void): Unsubscribe {
    if (!this.logTail) return { dispose: () => undefined };
    const off = this.logTail.onGrow((size) => listener(size));
    return { dispose: off };
  }

  onEvents(listener: (events: readonly RunEvent[]) => void): Unsubscribe {
    if (this.events.length) listener([...this.events]);
    return this.eventListeners.add(listener);
  }

  onGpuSamples(listener: (samples: readonly GpuSample[]) => void): Unsubscribe {
    if (this.samples.length) listener([...this.samples]);
    return this.sampleListeners.add(listener);
  }

  onHostSamples(listener: (samples: readonly HostSample[]) => void): Unsubscribe {
    if (this.hostSamples.length) listener([...this.hostSamples]);
    return this.hostSampleListeners.add(listener);
  }

  onGpuProcesses(listener: (processes: readonly GpuProcess[]) => void): Unsubscribe {
    listener(this.processes);
    return this.procListeners.add(listener);
  }

  onHostState(listener: (state: HostState) => void): Unsubscribe {
    listener(this.state);
    return this.stateListeners.add(listener);
  }

  private addEvents(lines: readonly string[]): void {
    const batch: RunEvent[] = this.eventLines.pushLines(lines).map((r) => r.event);
    if (!batch.length) return;
    this.events.push(...batch);
    if (this.events.length > MAX_EVENTS) this.events.splice(0, this.events.length - MAX_EVENTS);
    this.eventListeners.fire(batch);
    // The runner's sampler says once when the host has no NVIDIA GPU; gpu.csv then never appears, so the
    // GPU panel must learn it from the event rather than wait for samples.
    const noGpu = batch.find((e) => e.type === 'warning' && e.code === 'no-gpu');
    if (noGpu && noGpu.type === 'warning' && this.state.kind !== 'connected') {
      this.state = { kind: 'noGpu', detail: noGpu.message.replace(/^No NVIDIA GPU on this host:\s*/, '') };
      this.stateListeners.fire(this.state);
    }
    // A GPU lost mid-run ends the sampler: the last charts stay, under a state that says why they stopped.
    const lost = batch.find((e) => e.type === 'warning' && e.code === 'gpu-lost');
    if (lost && lost.type === 'warning') {
      this.state = { kind: 'gpuLost', detail: lost.message };
      this.stateListeners.fire(this.state);
    }
  }

  private addSamples(lines: readonly string[]): void {
    const batch: GpuSample[] = [];
    const hostBatch: HostSample[] = [];
    for (const line of lines) {
      const s = parseGpuCsvLine(line);
      if (s) batch.push(s);
      else {
        const h = parseHostCsvLine(line);
        if (h) hostBatch.push(h);
      }
    }
    if (hostBatch.length) {
      this.hostSamples.push(...hostBatch);
      if (this.hostSamples.length > MAX_SAMPLES) this.hostSamples.splice(0, this.hostSamples.length - MAX_SAMPLES);
      this.hostSampleListeners.fire(hostBatch);
    }
    if (!batch.length) return;
    this.lastSampleAt = Date.now();
    this.samples.push(...batch);
    if (this.samples.length > MAX_SAMPLES) this.samples.splice(0, this.samples.length - MAX_SAMPLES);
    // gpuLost stays: samples read after the event were taken before it (the files are tailed separately).
    if (this.state.kind !== 'connected' && this.state.kind !== 'gpuLost') {
      this.state = { kind: 'connected' };
      this.stateListeners.fire(this.state);
    }
    this.sampleListeners.fire(batch);
  }

  private addProcs(lines: readonly string[]): void {
    // gpu_procs.csv is polled: the lines sharing the newest timestamp are the current list.
    const parsed = lines.map((l) => parseGpuProcsCsvLine(l)).filter((p) => p !== undefined);
    if (!parsed.length) return;
    const newest = parsed.reduce((m, p) => Math.max(m, p.t), 0);
    this.processes = parsed.filter((p) => p.t === newest).map(({ gpu, pid, name, usedMemoryMiB }) => ({ gpu, pid, name, usedMemoryMiB }));
    this.procListeners.fire(this.processes);
  }

  dispose(): void {
    this.logSub?.dispose();
    for (const t of this.tails) t.stop();
  }
}
