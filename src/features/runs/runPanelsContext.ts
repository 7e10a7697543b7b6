// Gives the live panels the run to follow: the one picked in the Runs view, else the newest running
// one. A run's panels read the local mirror of its files, which the run manager fills by byte offset.
import { LocalRunDataSource } from '../panels/localRunSource';
import type { ComparableRun, RunContext, RunDataSource, Unsubscribe } from '../panels/runDataSource';
import type { RunStore } from '../../core/runs/store/runStore';
import type { RunRecord } from '../../core/runs/store/runRecord';
import type { ComparedRunInput } from '../../core/runs/view/runCompare';
import { runDisplayName } from '../../core/runs/view/runDisplayName';
import { usedHardwareLabel } from '../../core/runs/view/runHardware';
import type { HostLink } from '../../core/runs/sync/hostLink';
import type { LogAppend } from '../../core/runs/sync/liveLog';
import { onLinkedHostState } from '../panels/linkedHostState';
import type { HostLinkFeed } from '../panels/linkedHostState';
import { runFile } from '../../core/runs/store/runFolder';

/**
 * The run manager's in-memory feeds: link states (RunManager.hostLink / onHostLink) and, for a followed run,
 * the bytes its mirror appends to the log (onLogAppended), so the log panel reads the file only to replay.
 */
export interface HostLinks {
  hostLink(runId: string): HostLink | undefined;
  onHostLink(listener: (runId: string, link: HostLink) => void): Unsubscribe;
  onLogAppended?(listener: (runId: string, piece: LogAppend) => void): Unsubscribe;
}

/** The local mirror read as a run: the same tails as a local file, named after the run and its host. */
class MirrorSource implements RunDataSource {
  readonly id: string;
  readonly label: string;
  readonly host: string;
  private readonly local: LocalRunDataSource;

  private readonly feed: HostLinkFeed | undefined;

  constructor(
    dir: string,
    readonly record: RunRecord,
    links?: HostLinks,
  ) {
    this.feed = links && {
      current: () => links.hostLink(record.id),
      onChange: (l) => links.onHostLink((id, link) => id === record.id && l(link)),
    };
    const logFeed = links?.onLogAppended?.bind(links);
    this.local = new LocalRunDataSource(
      {
        log: runFile(dir, 'log'),
        events: runFile(dir, 'events'),
        gpu: runFile(dir, 'gpu'),
        procs: runFile(dir, 'gpuProcs'),
      },
      logFeed ? { logStream: (l) => logFeed((id, piece) => id === record.id && l(piece)) } : {},
    );
    this.id = `run:${record.id}`;
    this.label = runDisplayName(record);
    this.host = record.host ?? 'host';
  }

  start(): Promise<unknown> {
    return this.local.start();
  }
  fullLogPath(): string | undefined {
    return this.local.fullLogPath();
  }
  logSize(): number {
    return this.local.logSize();
  }
  readLog(offset: number, maxBytes: number): ReturnType<RunDataSource['readLog']> {
    return this.local.readLog(offset, maxBytes);
  }
  onLogGrown(l: Parameters<RunDataSource['onLogGrown']>[0]): Unsubscribe {
    return this.local.onLogGrown(l);
  }
  onEvents(l: Parameters<RunDataSource['onEvents']>[0]): Unsubscribe {
    return this.local.onEvents(l);
  }
  onGpuSamples(l: Parameters<RunDataSource['onGpuSamples']>[0]): Unsubscribe {
    return this.local.onGpuSamples(l);
  }
  onHostSamples(l: Parameters<RunDataSource['onHostSamples']>[0]): Unsubscribe {
    return this.local.onHostSamples(l);
  }
  onGpuProcesses(l: Parameters<RunDataSource['onGpuProcesses']>[0]): Unsubscribe {
    return this.local.onGpuProcesses(l);
  }
  onHostState(l: Parameters<RunDataSource['onHostState']>[0]): Unsubscribe {
    return onLinkedHostState(this.local, this.feed, l);
  }
  dispose(): void {
    this.local.dispose();
  }
}

export class RunPanelsContext implements RunContext {
  private selected: string | undefined;
  private source: MirrorSource | undefined;
  private readonly listeners = new Set<(run: RunDataSource | undefined) => void>();
  private readonly sub: { dispose(): void };
  private readonly closedListeners = new Set<() => void>();

  /** The last run panel closed. */
  onPanelsClosed(listener: () => void): Unsubscribe {
    this.closedListeners.add(listener);
    return { dispose: () => this.closedListeners.delete(listener) };
  }

  panelsClosed(): void {
    for (const l of this.closedListeners) l();
  }

  constructor(
    private readonly store: RunStore,
    private readonly localDirOf: (id: string) => string,
    private readonly links?: HostLinks,
  ) {
    this.sub = store.onDidChange(() => this.refresh());
  }

  select(runId: string | undefined): void {
    this.selected = runId;
    this.refresh();
  }

  /** Every recorded run (newest first) whose metrics the metrics panel's Compare… can overlay. */
  comparableRuns(): readonly ComparableRun[] {
    return this.store.all().map((r) => ({
      id: r.id,
      label: runDisplayName(r),
      detail: [new Date(r.createdAt).toLocaleString(), usedHardwareLabel(r), r.host, r.status].filter((x) => x).join(' · '),
      eventsPath: runFile(r.localDir ?? this.localDirOf(r.id), 'events'),
    }));
  }

  runHistories(ids: readonly string[]): readonly ComparedRunInput[] {
    return ids.flatMap((id) => {
      const record = this.store.get(id);
      return record ? [{ record, localDir: record.localDir ?? this.localDirOf(id) }] : [];
    });
  }

  onDidChangeRuns(listener: () => void): Unsubscribe {
    return this.store.onDidChange(() => listener());
  }

  activeRecord(): RunRecord | undefined {
    const chosen = this.selected ? this.store.get(this.selected) : undefined;
    return chosen ?? this.store.all().find((r) => r.status === 'running') ?? this.store.all()[0];
  }

  activeRun(): RunDataSource | undefined {
    const rec = this.activeRecord();
    if (!rec) return undefined;
    if (this.source?.record.id !== rec.id) {
      this.source?.dispose();
      this.source = new MirrorSource(rec.localDir ?? this.localDirOf(rec.id), rec, this.links);
      void this.source.start();
    }
    return this.source;
  }

  onDidChangeActiveRun(listener: (run: RunDataSource | undefined) => void): Unsubscribe {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  private refresh(): void {
    const rec = this.activeRecord();
    if (rec?.id === this.source?.record.id) return;
    const run = this.activeRun();
    for (const l of this.listeners) l(run);
  }

  dispose(): void {
    this.sub.dispose();
    this.source?.dispose();
  }
}
