// Runs of this extension overlaid on the metrics charts next to the followed one. Each reads its own
// events.jsonl (a run's local mirror, or a file the person opened) and is disposed when taken off.
import type * as vscode from 'vscode';
import { showQuickPick } from '../linkSafeUi';
import { basename, dirname } from 'node:path';
import type { MetricsRunMessage } from '../../protocol/metrics';
import { LocalRunDataSource } from './localRunSource';
import { eventsToPoints, runStateFromEvents } from './metricPoints';
import type { RunEvent } from '../../core/telemetry/events';
import type { RunContext } from './runDataSource';
import { pickLocalFile } from './sourceBinding';
import { RUN_FILES } from '../../core/runs/store/runFolder';

export interface ComparedPick {
  readonly key: string;
  readonly label: string;
  readonly eventsPath: string;
}

/** Quick pick of this extension's runs (from the run store) plus "an events.jsonl on this machine". */
export async function pickRunToCompare(ctx: RunContext | undefined, shown: ReadonlySet<string>): Promise<ComparedPick | undefined> {
  type Item = vscode.QuickPickItem & { pick?: ComparedPick; file?: true };
  const runs = ctx?.comparableRuns?.() ?? [];
  const items: Item[] = runs
    .filter((r) => !shown.has(`run:${r.id}`))
    .map((r) => ({ label: r.label, detail: r.detail, pick: { key: `run:${r.id}`, label: r.label, eventsPath: r.eventsPath } }));
  items.push({ label: `$(file) ${RUN_FILES.events} on this machine…`, detail: 'A run folder downloaded or mirrored earlier', file: true });
  const chosen = await showQuickPick(items, {
    title: 'Compare with a run',
    placeHolder: runs.length ? 'Runs of this extension, newest first' : 'No other runs recorded yet',
  });
  if (!chosen) return undefined;
  if (chosen.pick) return chosen.pick;
  const path = await pickLocalFile('metrics');
  if (!path) return undefined;
  return { key: `file:${path}`, label: `${basename(dirname(path))}/${basename(path)}`, eventsPath: path };
}

/** Tails one compared run's events and posts them as its series. */
export class ComparedRun {
  private source: LocalRunDataSource | undefined;
  private disposed = false;

  constructor(
    readonly pick: ComparedPick,
    private readonly post: (m: MetricsRunMessage) => void,
  ) {}

  async start(): Promise<void> {
    const src = await new LocalRunDataSource({ events: this.pick.eventsPath }, { label: this.pick.label }).start();
    if (this.disposed) {
      src.dispose();
      return;
    }
    this.source = src;
    const seen: RunEvent[] = [];
    let first = true;
    src.onEvents((events) => {
      seen.push(...events.filter((e) => e.type === 'started' || e.type === 'finished' || e.type === 'error'));
      const { state } = runStateFromEvents(seen, this.pick.label);
      this.post({ type: 'run', info: { key: this.pick.key, source: 'events', name: this.pick.label, state }, reset: first, points: eventsToPoints(events) });
      first = false;
    });
    if (first)
      this.post({ type: 'run', info: { key: this.pick.key, source: 'events', name: this.pick.label, state: 'no metrics yet' }, reset: true, points: [] });
  }

  dispose(): void {
    this.disposed = true;
    this.source?.dispose();
  }
}
