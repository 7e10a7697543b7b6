// Host of "Fine-Tune: Show Training Metrics": the followed run's events.jsonl, plus any number of runs to
// compare on the same charts: runs of this extension (their events.jsonl) and W&B runs fetched through its
// GraphQL API with the key from SecretStorage.
import { hostStateLine } from './linkedHostState';
import * as vscode from 'vscode';
import { setting } from '../settings';
import type { MetricsFromWebview, MetricsToWebview, WandbRunRef } from '../../protocol/metrics';
import { PRIMARY_RUN, wandbKey } from '../../protocol/metrics';
import { ComparedRun, pickRunToCompare } from './comparedRuns';
import type { RunEvent } from '../../core/telemetry/events';
import {
  DEFAULT_WANDB_BASE_URL,
  historyToPoints,
  ownWandbRunRef,
  resolveWandbBaseUrl,
  WANDB_METRIC_KEYS,
  WandbClient,
  WandbError,
  wandbBaseUrlProblem,
  wandbRunUrl,
} from '../../core/telemetry/wandb';
import { showWarningMessage } from '../notify';
import { APPROVED_WANDB_ORIGINS } from '../../core/runs/store/originApprovals';
import { metricsFromWebview } from './messages';
import type { PanelKind } from './panelHost';
import { RunPanelHost } from './runPanel';
import type { PanelServices } from './runPanel';
import type { RunDataSource } from './runDataSource';
import { eventsToPoints, runStateFromEvents } from './metricPoints';
import { runProgressLines } from '../../core/runs/view/runProgress';
import { RUN_FILES } from '../../core/runs/store/runFolder';

export const METRICS_PANEL: PanelKind = { viewType: 'remoteFinetune.metricsPanel', bundle: 'metrics', title: 'Training Metrics' };
export const WANDB_KEY_SECRET = 'remoteFinetune.wandb.apiKey';
/** Points W&B samples per key: enough for a smooth curve, small enough for one quick request. */
const WANDB_SAMPLES = 1000;
/** A running W&B run is fetched again this often while the panel is visible. */
const WANDB_REFRESH_MS = 30_000;
/** The time left counts down between logged steps: said again this often while nothing else changes. */
const PROGRESS_REFRESH_MS = 15_000;

function wandbOriginApproved(state: vscode.Memento, origin: string): boolean {
  return origin === new URL(DEFAULT_WANDB_BASE_URL).origin || state.get<string[]>(APPROVED_WANDB_ORIGINS, []).includes(origin);
}

/** True when the W&B key may go to `origin`: W&B's cloud, or a server the person approved (asked once, modal). */
export async function approveWandbOrigin(
  state: vscode.Memento,
  origin: string,
  ask: (origin: string) => Promise<boolean> = askToSendWandbKey,
): Promise<boolean> {
  if (wandbOriginApproved(state, origin)) return true;
  if (!(await ask(origin))) return false;
  await state.update(APPROVED_WANDB_ORIGINS, [...new Set([...state.get<string[]>(APPROVED_WANDB_ORIGINS, []), origin])]);
  return true;
}

async function askToSendWandbKey(origin: string): Promise<boolean> {
  const send = 'Send Key';
  const choice = await showWarningMessage(
    `Send your W&B API key to ${origin}?`,
    {
      modal: true,
      detail:
        'The remoteFinetune.wandb.baseUrl setting (or WANDB_BASE_URL) points the Training Metrics panel at this server. It receives your W&B API key with every request. Approve only a W&B Server you run or trust.',
    },
    send,
  );
  return choice === send;
}

export async function wandbApiKey(secrets: vscode.SecretStorage, prompt: boolean): Promise<string | undefined> {
  const stored = await secrets.get(WANDB_KEY_SECRET);
  if (stored || !prompt) return stored;
  const key = await vscode.window.showInputBox({
    title: 'W&B API key',
    prompt: "Kept in VS Code's secret storage; used only to read your runs (https://wandb.ai/authorize).",
    password: true,
    ignoreFocusOut: true,
    validateInput: (v) => (v.trim().length >= 20 ? undefined : 'A W&B API key is 40 characters (at least 20 for W&B Server keys).'),
  });
  if (!key) return undefined;
  await secrets.store(WANDB_KEY_SECRET, key.trim());
  return key.trim();
}

interface WandbSeries {
  readonly ref: WandbRunRef;
  url?: string;
  abort?: AbortController;
  timer?: ReturnType<typeof setTimeout>;
}

export class MetricsPanelHost extends RunPanelHost<MetricsFromWebview, MetricsToWebview> {
  private readonly wandb = new Map<string, WandbSeries>();
  private readonly compared = new Map<string, ComparedRun>();
  /** What the page was last told of the followed run's progress (the host tests read it from the panel's state). */
  private progressLines: readonly string[] = [];

  constructor(panel: vscode.WebviewPanel, services: PanelServices) {
    super(panel, METRICS_PANEL, metricsFromWebview, services, RUN_FILES.events);
    this.disposables.push({
      dispose: () => {
        for (const k of [...this.wandb.keys(), ...this.compared.keys()]) this.drop(k);
      },
    });
  }

  protected override attach(source: RunDataSource): void {
    const seen: RunEvent[] = [];
    let first = true;
    let linked = false;
    this.subscribe(
      source.onEvents((events) => {
        seen.push(...events.filter((e) => e.type === 'started' || e.type === 'finished' || e.type === 'error'));
        // The runner names its W&B run in `started`: it joins the charts with no typing, when a key is already stored.
        const started = events.find((e) => e.type === 'started' && e.wandb_run_id);
        if (!linked && started?.type === 'started') {
          linked = true;
          void this.linkOwnWandbRun(started);
        }
        const { name, state } = runStateFromEvents(seen, source.label);
        this.post({ type: 'run', info: { key: PRIMARY_RUN, source: 'events', name, state }, reset: first, points: eventsToPoints(events) });
        first = false;
      }),
    );
    if (first)
      this.post({ type: 'run', info: { key: PRIMARY_RUN, source: 'events', name: source.label, state: 'waiting for metrics' }, reset: true, points: [] });
    first = false;
    this.subscribe(
      source.onHostState((state) => {
        const text = hostStateLine(state);
        if (text !== undefined) this.post({ type: 'hostState', text });
      }),
    );
    // A reloaded page lost its compared runs of this extension; the page asks for W&B ones itself.
    for (const c of this.compared.values()) void c.start();
    this.followProgress(source);
  }

  /** Step of total, time left and cost so far from the run's record; an events.jsonl without a record says nothing. */
  private followProgress(source: RunDataSource): void {
    const runs = this.services.runContext;
    // A run of this extension is the source `run:<id>` (runPanelsContext.ts), as the log panel reads it.
    const runId = source.id.startsWith('run:') ? source.id.slice('run:'.length) : undefined;
    let last = '';
    const post = (): void => {
      const r = runId ? runs?.runHistories?.([runId])[0]?.record : undefined;
      const lines = r ? runProgressLines(r, Date.now()) : [];
      const key = lines.join('\n');
      if (key === last) return;
      last = key;
      this.progressLines = lines;
      this.post({ type: 'progress', lines });
    };
    post();
    const timer = setInterval(post, PROGRESS_REFRESH_MS);
    timer.unref?.();
    this.subscribe({ dispose: () => clearInterval(timer) }, ...(runs?.onDidChangeRuns ? [runs.onDidChangeRuns(post)] : []));
  }

  protected override async onMessage(m: MetricsFromWebview): Promise<void> {
    switch (m.type) {
      case 'loadWandb':
        await this.loadWandb(m.run, true);
        return;
      case 'compareRun':
        await this.compareRun();
        return;
      case 'dropRun':
        this.drop(m.key);
        return;
      case 'openRunPage': {
        const url = this.wandb.get(m.key)?.url;
        if (url) await vscode.env.openExternal(vscode.Uri.parse(url));
        return;
      }
      case 'action':
        await this.runAction(m);
        return;
      case 'ready':
        return;
    }
  }

  protected override details(): Record<string, number | string | null> {
    return { compared: this.compared.size, wandbRuns: this.wandb.size, progress: this.progressLines.join('\n') };
  }

  private async compareRun(): Promise<void> {
    const pick = await pickRunToCompare(this.services.runContext, new Set(this.compared.keys()));
    if (!pick || this.compared.has(pick.key)) return;
    const run = new ComparedRun(pick, (msg) => this.post(msg));
    this.compared.set(pick.key, run);
    try {
      await run.start();
    } catch (e) {
      this.drop(pick.key);
      this.post({ type: 'error', message: `Could not read ${pick.eventsPath}: ${e instanceof Error ? e.message : String(e)}` });
    }
  }

  private drop(key: string): void {
    this.compared.get(key)?.dispose();
    this.compared.delete(key);
    const w = this.wandb.get(key);
    if (w) {
      w.abort?.abort();
      if (w.timer) clearTimeout(w.timer);
      this.wandb.delete(key);
    }
  }

  private async linkOwnWandbRun(started: { readonly wandb_run_id?: string; readonly wandb_url?: string }): Promise<void> {
    const key = await wandbApiKey(this.services.secrets, false);
    const baseUrl = resolveWandbBaseUrl(setting('wandb.baseUrl'));
    // Unasked: only with a stored key, to W&B's cloud or a server already approved (no dialog pops up for this).
    if (!key || wandbBaseUrlProblem(baseUrl) || !wandbOriginApproved(this.services.globalState, new URL(baseUrl).origin)) return;
    try {
      const ref = await ownWandbRunRef(started, {}, new WandbClient({ baseUrl, apiKey: key }));
      if (ref && !this.wandb.has(wandbKey(ref))) await this.loadWandb(ref, false);
    } catch (e) {
      this.log.warn(`W&B run ${started.wandb_run_id ?? ''} not linked: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  private async loadWandb(ref: WandbRunRef, prompt: boolean): Promise<void> {
    const k = wandbKey(ref);
    this.drop(k);
    const apiKey = await wandbApiKey(this.services.secrets, prompt);
    if (!apiKey) {
      this.post({ type: 'error', key: k, message: 'No W&B API key: run "Fine-Tune: Set W&B API Key" or load again to enter one.' });
      return;
    }
    const baseUrl = resolveWandbBaseUrl(setting('wandb.baseUrl'));
    const problem = wandbBaseUrlProblem(baseUrl);
    if (problem) {
      this.post({ type: 'error', key: k, message: problem });
      return;
    }
    // The webview asks for W&B data on its own (also when a restored panel replays its last view): the key goes
    // to a server only after the person has approved that server once; W&B's own cloud is approved.
    if (!(await approveWandbOrigin(this.services.globalState, new URL(baseUrl).origin))) {
      this.post({ type: 'error', key: k, message: `Not sending the W&B API key to ${new URL(baseUrl).origin}: not approved.` });
      return;
    }
    const client = new WandbClient({ baseUrl, apiKey });
    const series: WandbSeries = { ref, abort: new AbortController() };
    this.wandb.set(k, series);
    try {
      const run = await client.run(ref, series.abort?.signal);
      const keys = Object.values(WANDB_METRIC_KEYS).flat();
      const rows = await client.sampledHistory(ref, keys, WANDB_SAMPLES, series.abort?.signal);
      series.url = wandbRunUrl(baseUrl, ref);
      this.post({
        type: 'run',
        info: { key: k, source: 'wandb', name: run.displayName, state: run.state, hasPage: true },
        reset: true,
        points: historyToPoints(rows),
      });
      if (run.state === 'running' && this.wandb.get(k) === series) {
        series.timer = setTimeout(() => {
          if (this.panel.visible) void this.loadWandb(ref, false);
        }, WANDB_REFRESH_MS);
      }
    } catch (e) {
      if (e instanceof WandbError && e.kind === 'aborted') return;
      const message = e instanceof WandbError ? e.message : `W&B request failed: ${String(e)}`;
      this.log.warn(`W&B ${ref.entity}/${ref.project}/${ref.runId}: ${message}`);
      this.post({ type: 'error', key: k, message });
    }
  }
}
