// Derivative-free minimisation for the estimators' fits (throughputModel.ts, vramFit.ts): Nelder-Mead from a fixed
// start, restarted from its own result until it stops improving. Deterministic, so a committed fit
// (estimateAccuracy.json) can be checked by fitting again.

function nelderMead(f: (p: readonly number[]) => number, start: readonly number[], iterations: number): number[] {
  const n = start.length;
  let simplex = [start.slice(), ...start.map((_, i) => start.map((v, j) => (i === j ? v + 0.5 : v)))];
  let values = simplex.map(f);
  for (let it = 0; it < iterations; it++) {
    const order = values.map((v, i) => [v, i] as const).sort((a, b) => a[0] - b[0]);
    simplex = order.map(([, i]) => simplex[i]!);
    values = order.map(([v]) => v);
    if (values[n]! - values[0]! < 1e-14) break;
    const centroid = start.map((_, j) => simplex.slice(0, n).reduce((s, p) => s + p[j]!, 0) / n);
    const along = (t: number): number[] => centroid.map((c, j) => c + t * (simplex[n]![j]! - c));
    const reflected = along(-1);
    const fr = f(reflected);
    if (fr < values[0]!) {
      const expanded = along(-2);
      const fe = f(expanded);
      [simplex[n], values[n]] = fe < fr ? [expanded, fe] : [reflected, fr];
    } else if (fr < values[n - 1]!) {
      [simplex[n], values[n]] = [reflected, fr];
    } else {
      const contracted = along(fr < values[n]! ? -0.5 : 0.5);
      const fc = f(contracted);
      if (fc < Math.min(fr, values[n]!)) [simplex[n], values[n]] = [contracted, fc];
      else {
        simplex = simplex.map((p) => p.map((v, j) => simplex[0]![j]! + 0.5 * (v - simplex[0]![j]!)));
        values = simplex.map(f);
      }
    }
  }
  return simplex[values.indexOf(Math.min(...values))]!;
}

/** The point near `start` where `loss` is least (Nelder-Mead, restarted until a round gains under 1e-12). */
export function minimize(loss: (p: readonly number[]) => number, start: readonly number[]): number[] {
  let p = start.slice();
  let best = loss(p);
  for (let round = 0; round < 20; round++) {
    const next = nelderMead(loss, p, 5000);
    const value = loss(next);
    p = next;
    if (best - value < 1e-12) break;
    best = value;
  }
  return p;
}
