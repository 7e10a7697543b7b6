// uPlot wrapper shared by the GPU and metrics panels. uPlot draws to one canvas and redraws only when told,
// so a panel batches incoming points and calls setData once per animation frame.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface SeriesSpec {
  readonly label: string;
  readonly color: string;
}

export interface LiveChart {
  readonly root: HTMLElement;
  setData(x: readonly number[], ys: ReadonlyArray<ReadonlyArray<number | null>>): void;
  resize(width: number): void;
  destroy(): void;
}

export function cssVar(name: string, fallback: string): string {
  const v = getComputedStyle(document.body).getPropertyValue(name).trim();
  return v || fallback;
}

export function createChart(
  title: string,
  series: readonly SeriesSpec[],
  opts: { readonly time: boolean; readonly unit?: string; readonly yRange?: readonly [number, number]; readonly logY?: boolean },
): LiveChart {
  const root = document.createElement('figure');
  root.className = 'chart';
  const caption = document.createElement('figcaption');
  caption.textContent = title;
  root.append(caption);
  const fg = cssVar('--vscode-foreground', '#ccc');
  const grid = cssVar('--vscode-editorWidget-border', 'rgba(128,128,128,0.3)');
  const axis: uPlot.Axis = { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
  const yRange = opts.yRange;
  const plot = new uPlot(
    {
      width: 320,
      height: 140,
      legend: { show: series.length > 1 },
      cursor: { drag: { x: false, y: false } },
      scales: {
        x: { time: opts.time },
        y: yRange ? { range: (): uPlot.Range.MinMax => [yRange[0], yRange[1]] } : opts.logY ? { distr: 3 } : {},
      },
      axes: [axis, { ...axis, size: 76, values: (_u, vals) => vals.map((v) => (opts.unit ? `${fmt(v)}${opts.unit}` : fmt(v))) }],
      // uPlot's default point rule draws markers only where they are far apart: a lone eval point stays visible.
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 1.5, spanGaps: true }))],
    },
    [[], ...series.map(() => [])],
    root,
  );
  return {
    root,
    setData(x, ys) {
      plot.setData([x as number[], ...(ys as Array<Array<number | null>>)]);
    },
    resize(width) {
      if (width > 50 && Math.abs(width - plot.width) > 2) plot.setSize({ width, height: 140 });
    },
    destroy() {
      plot.destroy();
    },
  };
}

/** Short tick label: a few significant digits, exponent notation for very small or large values. */
export function fmt(v: number): string {
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(1);
  return String(Math.round(v * 1000) / 1000);
}

/** Colours from the theme's terminal palette, so charts match the editor's theme. */
export function seriesColor(i: number): string {
  const names = [
    '--vscode-charts-blue',
    '--vscode-charts-orange',
    '--vscode-charts-green',
    '--vscode-charts-purple',
    '--vscode-charts-red',
    '--vscode-charts-yellow',
  ];
  const fallback = ['#3794ff', '#d18616', '#89d185', '#b180d7', '#f14c4c', '#cca700'];
  return cssVar(names[i % names.length] ?? '', fallback[i % fallback.length] ?? '#888');
}
