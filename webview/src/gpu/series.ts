// Time series kept in the webview (one per GPU, or one for a GPU-less host's CPU and memory): bounded by the
// longest window, trimmed as samples arrive.
import type { GpuSample, HostSample } from '../../../src/protocol/gpu';

export const MAX_WINDOW_S = 3600;
/** Hard cap on points per series whatever the sampling interval: charts stay fast, memory stays bounded. */
export const MAX_POINTS = 7200;

export const GPU_FIELDS = ['utilizationPct', 'memoryUsedMiB', 'temperatureC', 'powerW', 'smClockMHz'] as const;
export type GpuField = (typeof GPU_FIELDS)[number];
export const HOST_FIELDS = ['cpuPct', 'memoryUsedMiB'] as const;
export type HostField = (typeof HOST_FIELDS)[number];

export class SampleSeries<S extends { readonly t: number } & Record<F, number | null>, F extends string> {
  readonly t: number[] = [];
  readonly values: Record<F, Array<number | null>>;
  last: S | undefined;

  constructor(private readonly fields: readonly F[]) {
    this.values = Object.fromEntries(fields.map((f) => [f, []])) as unknown as Record<F, Array<number | null>>;
  }

  add(s: S): void {
    if (this.last && s.t <= this.last.t) return; // replays overlap live data: keep time increasing
    this.t.push(s.t / 1000);
    for (const f of this.fields) this.values[f].push(s[f]);
    this.last = s;
    const cutoff = s.t / 1000 - MAX_WINDOW_S;
    let drop = 0;
    while (drop < this.t.length && (this.t[drop] ?? 0) < cutoff) drop++;
    if (this.t.length - drop > MAX_POINTS) drop = this.t.length - MAX_POINTS;
    if (drop > 0) {
      this.t.splice(0, drop);
      for (const f of this.fields) this.values[f].splice(0, drop);
    }
  }

  /** Index of the first point inside the last `windowS` seconds. */
  windowStart(windowS: number): number {
    const end = this.t[this.t.length - 1];
    if (end === undefined) return 0;
    const cutoff = end - windowS;
    let lo = 0;
    let hi = this.t.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.t[mid] ?? 0) < cutoff) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

export class GpuSeries extends SampleSeries<GpuSample, GpuField> {
  constructor() {
    super(GPU_FIELDS);
  }
}

export class HostSeries extends SampleSeries<HostSample, HostField> {
  constructor() {
    super(HOST_FIELDS);
  }
}
