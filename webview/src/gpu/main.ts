// GPU dashboard: one card per GPU with live uPlot charts over a chosen time window, the GPU processes,
// and plain statements for "no GPU" and "host unreachable" instead of empty charts. A host without a GPU
// gets one card of its CPU and memory (sampled by the runner instead), so the panel still shows the work.
import type { GpuFromWebview, GpuProcess, GpuSample, GpuToWebview, GpuViewState, HostSample, HostState } from '../../../src/protocol/gpu';
import { GPU_WINDOWS_S } from '../../../src/protocol/gpu';
import { createBridge } from '../shared/vscodeApi';
import { custom, el, formatNumber, renderEmpty } from '../shared/dom';
import { registerToolkit, setValue, valueOf } from '../shared/toolkit';
import { createChart, seriesColor } from '../shared/chart';
import type { LiveChart } from '../shared/chart';
import { GpuSeries, HostSeries } from './series';
import type { GpuField, HostField } from './series';
import { oncePerFrame } from '../shared/frame';

registerToolkit();
const bridge = createBridge<GpuToWebview, GpuFromWebview, GpuViewState>();
let view: GpuViewState = { windowS: bridge.state()?.windowS ?? 300 };
const root = document.getElementById('root') ?? document.body;

interface ChartSpec<F> {
  readonly field: F;
  readonly title: string;
  readonly unit: string;
  readonly range?: [number, number];
}

const CHARTS: ReadonlyArray<ChartSpec<GpuField>> = [
  { field: 'utilizationPct', title: 'Utilisation', unit: '%', range: [0, 100] },
  { field: 'memoryUsedMiB', title: 'Memory used (MiB)', unit: '' },
  { field: 'temperatureC', title: 'Temperature', unit: '°C' },
  { field: 'powerW', title: 'Power', unit: ' W' },
  { field: 'smClockMHz', title: 'SM clock', unit: ' MHz' },
];

const HOST_CHARTS: ReadonlyArray<ChartSpec<HostField>> = [
  { field: 'cpuPct', title: 'CPU busy', unit: '%', range: [0, 100] },
  { field: 'memoryUsedMiB', title: 'Memory used (MiB)', unit: '' },
];

function buildCharts<F>(specs: ReadonlyArray<ChartSpec<F>>): { charts: Map<F, LiveChart>; el: HTMLElement } {
  const chartsEl = el('div', { class: 'charts' });
  const charts = new Map<F, LiveChart>();
  specs.forEach((spec, i) => {
    const ch = createChart(spec.title, [{ label: spec.title, color: seriesColor(i) }], {
      time: true,
      unit: spec.unit,
      ...(spec.range ? { yRange: spec.range } : {}),
    });
    charts.set(spec.field, ch);
    chartsEl.append(ch.root);
  });
  return { charts, el: chartsEl };
}

/** Redraws a card's charts over the chosen window at the cards' width. */
function drawCharts<F extends string>(
  specs: ReadonlyArray<ChartSpec<F>>,
  charts: Map<F, LiveChart>,
  series: { t: number[]; values: Record<F, Array<number | null>>; windowStart(s: number): number },
  cardRoot: HTMLElement,
): void {
  const from = series.windowStart(view.windowS);
  const x = series.t.slice(from);
  const width = Math.max(200, (cardRoot.querySelector('.chart') as HTMLElement | null)?.clientWidth ?? 300);
  for (const spec of specs) {
    const ch = charts.get(spec.field);
    if (!ch) continue;
    ch.resize(width);
    ch.setData(x, [series.values[spec.field].slice(from)]);
  }
}

function memoryLimit(chart: LiveChart | undefined, totalMiB: number | null): void {
  const caption = chart?.root.querySelector('figcaption');
  if (caption && totalMiB !== null) caption.textContent = `Memory used (of ${formatNumber(totalMiB, 0)} MiB)`;
}

interface HostCard {
  readonly root: HTMLElement;
  readonly stats: HTMLElement;
  readonly charts: Map<HostField, LiveChart>;
  readonly series: HostSeries;
}

interface Card {
  readonly root: HTMLElement;
  readonly title: HTMLElement;
  readonly stats: HTMLElement;
  readonly charts: Map<GpuField, LiveChart>;
  readonly series: GpuSeries;
}

class Dashboard {
  private readonly cards = new Map<number, Card>();
  private hostCard: HostCard | undefined;
  private readonly banner: HTMLElement;
  private readonly gpusEl: HTMLElement;
  private readonly procsEl: HTMLElement;
  /** Charts redraw at most once per frame however fast samples arrive. */
  private readonly schedule = oncePerFrame(() => this.draw());
  private state: HostState = { kind: 'connecting' };

  constructor(title: string, host: string) {
    const windowSel = custom(
      'vscode-dropdown',
      { id: 'window', 'aria-label': 'Time window' },
      ...GPU_WINDOWS_S.map((s) => custom('vscode-option', { value: String(s) }, s < 3600 ? `Last ${s / 60} min` : 'Last hour')),
    );
    windowSel.addEventListener('change', () => {
      const s = Number(valueOf(windowSel));
      if (GPU_WINDOWS_S.includes(s)) {
        view = { windowS: s };
        bridge.saveState(view);
        this.schedule();
      }
    });
    requestAnimationFrame(() => setValue(windowSel, String(view.windowS)));
    const heading = el('h1', { class: 'title' }, title);
    heading.style.fontSize = '1.2em';
    this.banner = el('div', { id: 'hostState', class: 'banner', role: 'status', 'aria-live': 'polite' });
    this.gpusEl = el('div', { id: 'gpus' });
    this.procsEl = el('div', { id: 'processes' });
    root.replaceChildren(
      el('div', { class: 'toolbar' }, heading, el('span', { class: 'status' }, host), windowSel),
      this.banner,
      this.gpusEl,
      el('h2', {}, 'Processes'),
      this.procsEl,
    );
    this.renderState();
    this.renderProcesses([]);
    // "No GPU sample for N s" counts up while it lasts.
    setInterval(() => {
      if (this.state.kind === 'noSample') this.renderState();
    }, 1000);
    new ResizeObserver(() => this.schedule()).observe(this.gpusEl);
  }

  setState(state: HostState): void {
    this.state = state;
    this.renderState();
  }

  private renderState(): void {
    const s = this.state;
    const b = this.banner;
    b.className = 'banner';
    switch (s.kind) {
      case 'connecting':
        b.textContent = this.cards.size || this.hostCard ? '' : 'Waiting for the first GPU sample…';
        break;
      case 'connected':
        b.textContent = this.cards.size || this.hostCard ? '' : 'Connected; waiting for the first GPU sample…';
        break;
      case 'noGpu':
        // With the host's CPU and memory below, no GPU is a fact about the host, not a problem with the panel.
        b.classList.add(this.hostCard ? 'info' : 'warn');
        b.textContent = `No NVIDIA GPU on this host: ${s.detail}`;
        break;
      case 'gpuLost':
        b.classList.add('bad');
        b.textContent = `GPU lost: ${s.detail} The charts stop at the last sample.`;
        break;
      case 'unreachable':
        b.classList.add('bad');
        b.textContent = `Host unreachable since ${new Date(s.since).toLocaleTimeString()}: ${s.detail}. The charts resume when it answers again.`;
        break;
      case 'reconnecting':
        b.classList.add('warn');
        b.textContent = `Host not answering since ${new Date(s.since).toLocaleTimeString()}: ${s.detail}; reconnecting.`;
        break;
      case 'noSample':
        // Counted here, where it is shown: the host says only when the last sample came.
        b.classList.add('warn');
        b.textContent = `No GPU sample for ${Math.max(0, Math.round((Date.now() - s.since) / 1000))} s: the host answers, but its sampler has stopped writing gpu.csv.`;
        break;
      case 'ended':
        b.textContent = 'The run ended; the charts stop at its last sample.';
        break;
    }
    b.hidden = b.textContent === '';
  }

  addSamples(samples: readonly GpuSample[]): void {
    for (const s of samples) this.card(s).series.add(s);
    if (samples.length && (this.state.kind === 'connecting' || this.state.kind === 'connected' || this.state.kind === 'noSample'))
      this.setState({ kind: 'connected' });
    this.schedule();
  }

  addHostSamples(samples: readonly HostSample[]): void {
    if (!samples.length) return;
    if (!this.hostCard) {
      const stats = el('div', { class: 'stats' });
      const { charts, el: chartsEl } = buildCharts(HOST_CHARTS);
      const cardRoot = el('section', { class: 'host', 'aria-label': 'CPU and memory' }, el('h2', {}, 'This host: CPU and memory'), stats, chartsEl);
      this.hostCard = { root: cardRoot, stats, charts, series: new HostSeries() };
      this.gpusEl.append(cardRoot);
    }
    for (const s of samples) this.hostCard.series.add(s);
    this.schedule();
  }

  private card(s: GpuSample): Card {
    let c = this.cards.get(s.index);
    if (c) return c;
    const title = el('h2', {});
    const stats = el('div', { class: 'stats' });
    const { charts, el: chartsEl } = buildCharts(CHARTS);
    const cardRoot = el('section', { class: 'gpu', 'aria-label': `GPU ${s.index}`, 'data-gpu': String(s.index) }, title, stats, chartsEl);
    c = { root: cardRoot, title, stats, charts, series: new GpuSeries() };
    this.cards.set(s.index, c);
    const sorted = [...this.cards.entries()].sort((a, b) => a[0] - b[0]).map((e) => e[1].root);
    this.gpusEl.replaceChildren(...sorted, ...(this.hostCard ? [this.hostCard.root] : []));
    return c;
  }

  private draw(): void {
    for (const [index, c] of this.cards) {
      const last = c.series.last;
      if (!last) continue;
      c.title.textContent = `GPU ${index}: ${last.name}`;
      const mem = `${formatNumber(last.memoryUsedMiB, 0)} / ${formatNumber(last.memoryTotalMiB, 0)} MiB`;
      const power = `${formatNumber(last.powerW, 0)}${last.powerLimitW !== null ? ` / ${formatNumber(last.powerLimitW, 0)}` : ''} W`;
      c.stats.replaceChildren(
        el('span', {}, `Utilisation ${formatNumber(last.utilizationPct, 0)} %`),
        el('span', {}, `Memory ${mem}`),
        el('span', {}, `Temperature ${formatNumber(last.temperatureC, 0)} °C`),
        el('span', {}, `Power ${power}`),
        el('span', {}, `SM clock ${formatNumber(last.smClockMHz, 0)} MHz`),
      );
      drawCharts(CHARTS, c.charts, c.series, c.root);
      memoryLimit(c.charts.get('memoryUsedMiB'), last.memoryTotalMiB);
    }
    this.drawHost();
    this.renderState();
  }

  private drawHost(): void {
    const h = this.hostCard;
    const last = h?.series.last;
    if (!h || !last) return;
    const cpus = `${last.cpus} CPU${last.cpus === 1 ? '' : 's'}`;
    h.stats.replaceChildren(
      el('span', {}, `CPU ${formatNumber(last.cpuPct, 0)} % busy of ${cpus}`),
      el('span', {}, `Memory ${formatNumber(last.memoryUsedMiB, 0)} / ${formatNumber(last.memoryTotalMiB, 0)} MiB`),
    );
    drawCharts(HOST_CHARTS, h.charts, h.series, h.root);
    memoryLimit(h.charts.get('memoryUsedMiB'), last.memoryTotalMiB);
  }

  renderProcesses(procs: readonly GpuProcess[]): void {
    if (procs.length === 0) {
      this.procsEl.replaceChildren(el('p', { class: 'status' }, 'No GPU processes reported.'));
      return;
    }
    const rows = procs.map((p) =>
      el('tr', {}, el('td', {}, p.gpu), el('td', {}, String(p.pid)), el('td', {}, p.name), el('td', {}, `${formatNumber(p.usedMemoryMiB, 0)} MiB`)),
    );
    this.procsEl.replaceChildren(
      el(
        'table',
        { class: 'procs' },
        el(
          'thead',
          {},
          el(
            'tr',
            {},
            el('th', { scope: 'col' }, 'GPU'),
            el('th', { scope: 'col' }, 'PID'),
            el('th', { scope: 'col' }, 'Process'),
            el('th', { scope: 'col' }, 'Memory'),
          ),
        ),
        el('tbody', {}, ...rows),
      ),
    );
  }
}

let dash: Dashboard | undefined;
bridge.start((msg) => {
  switch (msg.type) {
    case 'empty':
      dash = undefined;
      renderEmpty(root, msg.message, msg.actions, (id) => {
        if (id === 'openLocalFile' || id === 'startRun') bridge.post({ type: 'action', id });
      });
      return;
    case 'init':
      dash = new Dashboard(msg.title, msg.host);
      document.title = msg.title;
      return;
    case 'samples':
      dash?.addSamples(msg.samples);
      return;
    case 'hostSamples':
      dash?.addHostSamples(msg.samples);
      return;
    case 'processes':
      dash?.renderProcesses(msg.processes);
      return;
    case 'hostState':
      dash?.setState(msg.state);
      return;
  }
});
