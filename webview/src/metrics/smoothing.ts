// TensorBoard's scalar smoothing: an exponential moving average, debiased so the curve starts at the
// first value instead of rising from zero. Gaps (null) pass through and do not move the average.

/** Smoothing weights the slider offers: 0 draws raw values; 1 would freeze the curve, so 0.99 is the top. */
export const MAX_SMOOTHING = 0.99;

export function clampSmoothing(w: number): number {
  return Number.isFinite(w) ? Math.min(MAX_SMOOTHING, Math.max(0, w)) : 0;
}

export function smooth(values: ReadonlyArray<number | null>, weight: number): Array<number | null> {
  const w = clampSmoothing(weight);
  if (w === 0) return values.slice();
  let last = 0;
  let n = 0;
  return values.map((v) => {
    if (v === null || !Number.isFinite(v)) return v;
    last = last * w + (1 - w) * v;
    n++;
    return last / (1 - Math.pow(w, n));
  });
}
