// One run's metrics as the panel keeps them: the steps it logged, a column per metric, the latest value
// of each. Bounded: a long run is thinned to every other step once it passes MAX_POINTS.
import type { MetricPoint, RunSeriesInfo } from '../../../src/protocol/metrics';
import { CHART_KEYS } from '../../../src/protocol/metrics';

const MAX_POINTS = 20000;
/** Names of other metrics kept per run: a run that logs thousands of keys must not grow the page forever. */
const MAX_OTHER_KEYS = 40;
const CHARTED = new Set<string>(CHART_KEYS);

export class RunSeries {
  steps: number[] = [];
  /** A Map: metric names are the run's own, and `__proto__` or `constructor` are names like any other. */
  private cols = new Map<string, Array<number | null>>();
  readonly latest = new Map<string, number>();
  /** Step at which each latest value was logged (eval loss lags loss). */
  readonly latestStep = new Map<string, number>();
  error = '';

  constructor(
    public info: RunSeriesInfo,
    readonly color: string,
  ) {}

  clear(): void {
    this.steps = [];
    this.cols.clear();
    this.latest.clear();
    this.latestStep.clear();
  }

  add(points: readonly MetricPoint[]): void {
    for (const p of points) {
      let i = this.steps.length;
      // Points come in step order almost always; an eval line for an earlier step joins that step.
      if (i > 0 && p.step <= (this.steps[i - 1] ?? 0)) {
        const j = this.steps.lastIndexOf(p.step);
        if (j >= 0) i = j;
        else continue;
      } else {
        this.steps.push(p.step);
        for (const c of this.cols.values()) c.push(null);
      }
      for (const [k, v] of Object.entries(p.values)) {
        if (!Number.isFinite(v)) continue;
        let col = this.cols.get(k);
        if (!col) {
          if (!CHARTED.has(k) && this.otherKeys().length >= MAX_OTHER_KEYS) continue;
          col = new Array<number | null>(this.steps.length).fill(null);
          this.cols.set(k, col);
        }
        col[i] = v;
        this.latest.set(k, v);
        this.latestStep.set(k, p.step);
      }
    }
    if (this.steps.length > MAX_POINTS) this.thin();
  }

  /** Steps and values where this run logged `key` (eval loss is logged far less often than loss). */
  column(key: string): { xs: number[]; ys: number[] } {
    const xs: number[] = [];
    const ys: number[] = [];
    const col = this.cols.get(key);
    if (col)
      col.forEach((v, i) => {
        if (v !== null) {
          xs.push(this.steps[i] ?? 0);
          ys.push(v);
        }
      });
    return { xs, ys };
  }

  otherKeys(): string[] {
    return [...this.cols.keys()].filter((k) => !CHARTED.has(k));
  }

  get lastStep(): number | undefined {
    return this.steps[this.steps.length - 1];
  }

  private thin(): void {
    const keep = (_: unknown, i: number): boolean => i % 2 === 0 || i === this.steps.length - 1;
    this.steps = this.steps.filter(keep);
    for (const [k, col] of this.cols) this.cols.set(k, col.filter(keep));
  }
}
