// Training metrics, read the way W&B and TensorBoard are read: the latest values of every run at the top,
// then one chart per metric with all runs overlaid (the followed run, runs of this extension and W&B runs
// added with "Compare…"), smoothed with TensorBoard's EMA when the slider says so.
import type { ChartKey, MetricsFromWebview, MetricsToWebview, MetricsViewState, RunSeriesInfo, WandbRunRef } from '../../../src/protocol/metrics';
import { CHART_KEYS, PRIMARY_RUN, PREFERENCE_METRIC_KEYS, wandbKey } from '../../../src/protocol/metrics';
import { createBridge } from '../shared/vscodeApi';
import { el, formatNumber, renderEmpty } from '../shared/dom';
import { registerToolkit } from '../shared/toolkit';
import { seriesColor } from '../shared/chart';
import { oncePerFrame } from '../shared/frame';
import { OverlayChart } from './overlayChart';
import type { Plotted } from './overlayChart';
import { RunSeries } from './runSeries';
import { renderLatest } from './latestTable';
import { createCompareBar } from './compareBar';
import { clampSmoothing, MAX_SMOOTHING, smooth } from './smoothing';

registerToolkit();
const bridge = createBridge<MetricsToWebview, MetricsFromWebview, MetricsViewState>();
const saved = bridge.state();
let view: MetricsViewState = {
  // Older saved states held W&B runs per side ({ a, b }); only a list is kept now.
  wandb: Array.isArray(saved?.wandb) ? saved.wandb : [],
  smoothing: clampSmoothing(saved?.smoothing ?? 0.6),
};
const root = document.getElementById('root') ?? document.body;
// The empty state sits above the charts: with no run followed, W&B runs can still be compared.
const emptyHost = document.createElement('div');
const appHost = document.createElement('div');
root.replaceChildren(emptyHost, appHost);

const TITLES: Record<ChartKey, string> = {
  loss: 'Training loss',
  eval_loss: 'Eval loss',
  learning_rate: 'Learning rate',
  grad_norm: 'Gradient norm',
  tokens_per_second: 'Tokens / s',
  'rewards/margins': 'Reward margin (chosen − rejected)',
  'rewards/accuracies': 'Reward accuracy (chosen ranked above rejected)',
};
/** Shown only when some run logs them: an SFT run has no rewards, and an empty chart there would only mislead. */
const WHEN_LOGGED = new Set<ChartKey>(PREFERENCE_METRIC_KEYS);
const EMPTY_TEXT: Record<ChartKey, string> = {
  loss: 'No data yet: the loss appears after the first logging step.',
  eval_loss: 'No eval loss yet: the runner logs it at each evaluation when the run has an eval set (data.eval).',
  learning_rate: 'No data yet: the learning rate appears after the first logging step.',
  grad_norm: 'No data yet: the gradient norm appears after the first logging step.',
  tokens_per_second: 'No data yet: throughput appears after the first logging step.',
  'rewards/margins': 'No data yet: the reward margin appears after the first logging step of a dpo or orpo run.',
  'rewards/accuracies': 'No data yet: the reward accuracy appears after the first logging step of a dpo or orpo run.',
};

class MetricsApp {
  private readonly runs = new Map<string, RunSeries>();
  private readonly charts = new Map<ChartKey, OverlayChart>();
  private readonly latest = el('table', { class: 'latest', 'aria-label': 'Latest values' });
  /** The followed run's step of total, time left and cost so far (or, ended, its estimate against actual). */
  private readonly progress = el('div', { class: 'progress', id: 'runProgress', role: 'status', 'aria-label': 'Run progress' });
  /** Why the charts stopped moving (host unreachable, reconnecting), host text; hidden while the run is live. */
  private readonly hostState = el('div', { class: 'banner bad', id: 'hostState', role: 'status', 'aria-live': 'polite' });
  private readonly others = el('div', { class: 'others', 'aria-label': 'Other metrics' });
  private readonly chartsEl = el('div', { class: 'charts' });
  private readonly main: HTMLElement;
  private readonly compare;
  private colors = 0;
  /** Charts redraw at most once per frame however fast samples arrive. */
  readonly schedule = oncePerFrame(() => this.draw());

  constructor() {
    this.compare = createCompareBar(view.wandb.at(-1), {
      addOwn: () => bridge.post({ type: 'compareRun' }),
      addWandb: (ref) => this.addWandb(ref),
    });
    const slider = el('input', { id: 'smoothing', type: 'range', min: '0', max: String(MAX_SMOOTHING), step: '0.01', 'aria-label': 'Smoothing' });
    slider.value = String(view.smoothing);
    const shown = el('output', { id: 'smoothingValue', for: 'smoothing' }, view.smoothing.toFixed(2));
    slider.addEventListener('input', () => {
      view = { ...view, smoothing: clampSmoothing(Number(slider.value)) };
      shown.textContent = view.smoothing.toFixed(2);
      bridge.saveState(view);
      this.schedule();
    });
    const toolbar = el(
      'div',
      { class: 'toolbar', role: 'toolbar', 'aria-label': 'Metrics controls' },
      el('label', { for: 'smoothing', class: 'smoothing', title: 'Exponential moving average, as TensorBoard smooths: 0 is raw' }, 'Smoothing', slider, shown),
      this.compare.toggle,
    );
    for (const k of CHART_KEYS) {
      const ch = new OverlayChart(k, TITLES[k], EMPTY_TEXT[k]);
      this.charts.set(k, ch);
      this.chartsEl.append(ch.root);
    }
    this.progress.hidden = true;
    this.hostState.hidden = true;
    this.main = el(
      'main',
      { class: 'metrics', 'data-points': '0' },
      this.hostState,
      this.progress,
      this.latest,
      toolbar,
      this.compare.root,
      this.chartsEl,
      this.others,
    );
    appHost.replaceChildren(this.main);
    new ResizeObserver(() => this.schedule()).observe(this.chartsEl);
    this.draw();
  }

  /** After a reload the host has lost the W&B runs; ask for them again from the saved state. */
  restoreWandb(): void {
    for (const ref of view.wandb) bridge.post({ type: 'loadWandb', run: ref });
  }

  private addWandb(ref: WandbRunRef): void {
    const key = wandbKey(ref);
    if (!view.wandb.some((r) => wandbKey(r) === key)) {
      view = { ...view, wandb: [...view.wandb, ref] };
      bridge.saveState(view);
    }
    bridge.post({ type: 'loadWandb', run: ref });
  }

  private series(info: RunSeriesInfo): RunSeries {
    let r = this.runs.get(info.key);
    if (!r) {
      r = new RunSeries(info, seriesColor(this.colors++));
      this.runs.set(info.key, r);
    }
    r.info = info;
    return r;
  }

  setRun(info: RunSeriesInfo, reset: boolean, points: Parameters<RunSeries['add']>[0]): void {
    const r = this.series(info);
    if (reset) r.clear();
    r.error = '';
    r.add(points);
    this.schedule();
  }

  setError(key: string | undefined, message: string): void {
    const r = key ? this.runs.get(key) : undefined;
    if (r) r.error = message;
    else {
      this.compare.setError(message);
      // A W&B run that never loaded is not asked for again after a reload.
      if (key?.startsWith('wandb:')) {
        view = { ...view, wandb: view.wandb.filter((ref) => wandbKey(ref) !== key) };
        bridge.saveState(view);
      }
    }
    this.schedule();
  }

  remove(key: string): void {
    this.runs.delete(key);
    if (key.startsWith('wandb:')) {
      view = { ...view, wandb: view.wandb.filter((ref) => wandbKey(ref) !== key) };
      bridge.saveState(view);
    }
    this.schedule();
  }

  /** Host text, one line each, as text. */
  setProgress(lines: readonly string[]): void {
    this.progress.replaceChildren(...lines.map((l) => el('div', {}, l)));
    this.progress.hidden = lines.length === 0;
  }

  setHostState(text: string): void {
    this.hostState.textContent = text;
    this.hostState.hidden = text === '';
  }

  plotted(metric: string): Plotted | undefined {
    return this.charts.get(metric as ChartKey)?.plotted;
  }

  private draw(): void {
    const runs = [...this.runs.values()].sort((a, b) => Number(b.info.key === PRIMARY_RUN) - Number(a.info.key === PRIMARY_RUN));
    renderLatest(this.latest, runs, {
      openPage: (key) => bridge.post({ type: 'openRunPage', key }),
      remove: (key) => {
        bridge.post({ type: 'dropRun', key });
        this.remove(key);
      },
    });
    for (const [k, ch] of this.charts) {
      const lines = runs.map((r) => {
        const { xs, ys } = r.column(k);
        return { key: r.info.key, name: r.info.name, color: r.color, xs, raw: ys, ...(view.smoothing > 0 ? { smoothed: smooth(ys, view.smoothing) } : {}) };
      });
      ch.root.hidden = WHEN_LOGGED.has(k) && !lines.some((l) => l.xs.length > 0);
      if (ch.root.hidden) continue;
      ch.resize(ch.root.clientWidth - 4);
      ch.update(lines);
    }
    this.others.replaceChildren(
      ...runs
        .filter((r) => r.otherKeys().length)
        .map((r) =>
          el(
            'div',
            {},
            el('strong', {}, r.info.name),
            ` ${r
              .otherKeys()
              .map((k) => `${k}: ${formatNumber(r.latest.get(k), 4)}`)
              .join(' · ')}`,
          ),
        ),
    );
    // Read by the end-to-end test (and screen readers): how far the followed run has got.
    const primary = this.runs.get(PRIMARY_RUN);
    this.main.setAttribute('data-points', String(primary?.steps.length ?? 0));
    const loss = primary?.latest.get('loss');
    if (primary?.lastStep !== undefined)
      this.chartsEl.setAttribute('aria-description', `step ${primary.lastStep}${loss !== undefined ? `, loss ${formatNumber(loss, 4)}` : ''}`);
  }
}

let app: MetricsApp | undefined;
const ensureApp = (): MetricsApp => {
  if (!app) {
    app = new MetricsApp();
    app.restoreWandb();
  }
  return app;
};

bridge.start((msg) => {
  switch (msg.type) {
    case 'empty':
      renderEmpty(emptyHost, msg.message, msg.actions, (id) => {
        if (id === 'openLocalFile' || id === 'startRun') bridge.post({ type: 'action', id });
      });
      ensureApp();
      return;
    case 'run': {
      const a = ensureApp();
      if (msg.info.key === PRIMARY_RUN) emptyHost.replaceChildren();
      a.setRun(msg.info, msg.reset, msg.points);
      return;
    }
    case 'error':
      ensureApp().setError(msg.key, msg.message);
      return;
    case 'removeRun':
      ensureApp().remove(msg.key);
      return;
    case 'progress':
      ensureApp().setProgress(msg.lines);
      return;
    case 'hostState':
      ensureApp().setHostState(msg.text);
      return;
  }
});

// Exposed for the panel tests: the data each chart last handed to uPlot (its canvas cannot be read as numbers).
(window as unknown as { __metricsPanel: { plotted: (metric: string) => Plotted | undefined } }).__metricsPanel = {
  plotted: (metric) => app?.plotted(metric),
};
