// One metric with every run on the charts overlaid, like a W&B panel: a step axis with integer ticks, a
// legend entry per run, raw values faint behind the smoothed curve, and a "no data yet" placeholder
// instead of an empty box.
import uPlot from 'uplot';
import { cssVar, fmt } from '../shared/chart';
import { el } from '../shared/dom';

export interface OverlayRun {
  readonly key: string;
  readonly name: string;
  readonly color: string;
  readonly xs: readonly number[];
  readonly raw: ReadonlyArray<number | null>;
  /** Absent when smoothing is off: only the raw curve is drawn, at full strength. */
  readonly smoothed?: ReadonlyArray<number | null>;
}

/** What was last handed to uPlot: read by the panel tests through window.__metricsPanel. */
export interface Plotted {
  readonly x: readonly number[];
  readonly series: ReadonlyArray<{ readonly label: string; readonly values: ReadonlyArray<number | null> }>;
}

/** Whole-number tick spacings only: steps are integers, so a tick at 2.5 would name no step. */
const STEP_INCRS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1e3, 2e3, 2.5e3, 5e3, 1e4, 2e4, 2.5e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7];
const HEIGHT = 160;

export class OverlayChart {
  readonly root: HTMLElement;
  private readonly host: HTMLElement;
  private readonly legend: HTMLElement;
  private readonly placeholder: HTMLElement;
  private plot: uPlot | undefined;
  private signature = '';
  private width = 320;
  plotted: Plotted = { x: [], series: [] };

  constructor(
    readonly metric: string,
    title: string,
    emptyText: string,
  ) {
    this.placeholder = el('div', { class: 'placeholder', role: 'note' }, emptyText);
    this.legend = el('ul', { class: 'legend', 'aria-label': `${title} legend` });
    this.host = el('div', { class: 'plot' });
    this.root = el('figure', { class: 'chart', 'data-metric': metric }, el('figcaption', {}, title), this.placeholder, this.host, this.legend);
  }

  resize(width: number): void {
    this.width = Math.max(200, width);
    if (this.plot && Math.abs(this.plot.width - this.width) > 2) this.plot.setSize({ width: this.width, height: HEIGHT });
  }

  update(runs: readonly OverlayRun[]): void {
    const shown = runs.filter((r) => r.xs.length > 0);
    this.root.classList.toggle('no-data', shown.length === 0);
    this.placeholder.hidden = shown.length > 0;
    this.host.hidden = shown.length === 0;
    this.renderLegend(shown);
    if (shown.length === 0) {
      this.plotted = { x: [], series: [] };
      return;
    }
    const { x, columns } = joinOnSteps(shown);
    const series: Array<{ label: string; values: Array<number | null>; color: string; faint: boolean }> = [];
    shown.forEach((r, i) => {
      const raw = columns[i]?.raw ?? [];
      const sm = columns[i]?.smoothed;
      series.push({ label: sm ? `${r.name} (raw)` : r.name, values: raw, color: r.color, faint: Boolean(sm) });
      if (sm) series.push({ label: r.name, values: sm, color: r.color, faint: false });
    });
    // uPlot's series list is fixed per instance: a new set of runs (or smoothing switched on) builds a new one.
    const sig = series.map((s) => `${s.label}|${s.color}|${s.faint}`).join('\n');
    if (!this.plot || sig !== this.signature) {
      this.plot?.destroy();
      this.plot = this.create(series);
      this.signature = sig;
    }
    this.plot.setData([x, ...series.map((s) => s.values)]);
    this.plotted = { x, series: series.map((s) => ({ label: s.label, values: s.values })) };
  }

  private renderLegend(runs: readonly OverlayRun[]): void {
    this.legend.replaceChildren(
      ...runs.map((r) => {
        const swatch = el('span', { class: 'swatch', 'aria-hidden': 'true' });
        swatch.style.background = r.color;
        return el('li', { 'data-run': r.key }, swatch, r.name);
      }),
    );
  }

  private create(series: ReadonlyArray<{ label: string; color: string; faint: boolean }>): uPlot {
    const fg = cssVar('--vscode-foreground', '#ccc');
    const grid = cssVar('--vscode-editorWidget-border', 'rgba(128,128,128,0.3)');
    const axis: uPlot.Axis = { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const root = this.root;
    return new uPlot(
      {
        width: this.width,
        height: HEIGHT,
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: false } },
        axes: [
          {
            ...axis,
            label: 'step',
            labelSize: 18,
            incrs: STEP_INCRS,
            // The labels drawn are recorded on the figure: the canvas itself cannot be read back as text.
            values: (_u, vals) => {
              const labels = vals.map((v) => (Number.isInteger(v) ? v.toLocaleString('en-US') : fmt(v)));
              root.setAttribute('data-x-ticks', labels.join(' '));
              return labels;
            },
          },
          { ...axis, size: 64, values: (_u, vals) => vals.map(fmt) },
        ],
        series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.faint ? faint(s.color) : s.color, width: s.faint ? 1 : 1.5, spanGaps: true }))],
      },
      [[], ...series.map(() => [])],
      this.host,
    );
  }
}

/** The raw curve behind a smoothed one, as TensorBoard draws it. */
function faint(color: string): string {
  return /^#[0-9a-f]{6}$/i.test(color) ? `${color}4d` : color;
}

/** One shared, sorted step axis for several runs (uPlot's data model); a run has null where it logged nothing. */
export function joinOnSteps(runs: readonly OverlayRun[]): { x: number[]; columns: Array<{ raw: Array<number | null>; smoothed?: Array<number | null> }> } {
  const all = new Set<number>();
  for (const r of runs) for (const s of r.xs) all.add(s);
  const x = [...all].sort((a, b) => a - b);
  const index = new Map(x.map((s, i) => [s, i]));
  const columns = runs.map((r) => {
    const raw = new Array<number | null>(x.length).fill(null);
    const smoothed = r.smoothed ? new Array<number | null>(x.length).fill(null) : undefined;
    r.xs.forEach((s, i) => {
      const j = index.get(s);
      if (j === undefined) return;
      raw[j] = r.raw[i] ?? null;
      if (smoothed) smoothed[j] = r.smoothed?.[i] ?? null;
    });
    return smoothed ? { raw, smoothed } : { raw };
  });
  return { x, columns };
}
