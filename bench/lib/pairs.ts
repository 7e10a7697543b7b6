// Shared measuring discipline for every benchmark: ours and the reference alternate (A B A B …) in one
// process so machine noise hits both alike; the figure reported is the ratio of medians, and the verdict keeps
// every pair's values, each side's spread, the reference's command line and the commit measured.
import { execFileSync } from 'node:child_process';

export interface PairResult {
  readonly ours: number[];
  readonly reference: number[];
}

export async function measurePairs(pairs: number, ours: () => Promise<number>, reference: () => Promise<number>): Promise<PairResult> {
  const result: PairResult = { ours: [], reference: [] };
  for (let i = 0; i < pairs; i++) {
    result.ours.push(await ours());
    result.reference.push(await reference());
  }
  return result;
}

/** Wall time of fn in milliseconds. */
export async function timeMs(fn: () => Promise<unknown> | unknown): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const idx = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[idx]!;
}

export function printTable(title: string, rows: ReadonlyArray<readonly [string, string | number]>): void {
  console.log(`\n${title}`);
  const w = Math.max(...rows.map(([k]) => k.length));
  for (const [k, v] of rows) console.log(`  ${k.padEnd(w)}  ${typeof v === 'number' ? v.toFixed(3) : v}`);
}

export interface Verdict {
  readonly bench: string;
  readonly metric: string;
  readonly ours: number;
  readonly reference: number;
  /** "<= 0.9" or ">= 1.0": how ratio = ours / reference must compare for a pass. */
  readonly goal: string;
  /** Further goals (a p95 latency, say), each part of `pass`: value compared with its goal ("< 250"). */
  readonly checks?: ReadonlyArray<{ readonly name: string; readonly value: number; readonly goal: string }>;
  readonly extra?: Record<string, number | string | boolean>;
  /** Each side's value per pair, in the units of ours/reference, as measured. */
  readonly samples?: PairResult;
  /** Repository paths (files or folders) of the code this bench measures: a later change there makes it stale. */
  readonly covers?: readonly string[];
  /** The reference side as run (program and arguments), so "like for like" can be checked. */
  readonly referenceCommand?: string;
}

export interface Spread {
  readonly min: number;
  readonly median: number;
  readonly max: number;
}

export function spreadOf(xs: readonly number[]): Spread {
  const round = (n: number): number => Math.round(n * 10000) / 10000;
  return { min: round(Math.min(...xs)), median: round(median(xs)), max: round(Math.max(...xs)) };
}

/** The commit the working tree is at, and whether any covered path differs from it (then the figure is of no commit). */
export function measuredCommit(covers: readonly string[]): { commit: string; dirty: boolean } {
  try {
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = covers.length > 0 && execFileSync('git', ['status', '--porcelain', '--', ...covers], { encoding: 'utf8' }).trim() !== '';
    return { commit, dirty };
  } catch {
    return { commit: 'unknown', dirty: true };
  }
}

/** Whether `value` meets `goal` ("<= 0.5", ">= 1.0", "< 250", "> 0"). */
export function meets(value: number, goal: string): boolean {
  const m = /^(<=|>=|<|>)\s*(-?[0-9.]+)$/.exec(goal.trim());
  if (!m) throw new Error(`bad goal ${goal}`);
  const bound = Number(m[2]);
  switch (m[1]) {
    case '<=':
      return value <= bound;
    case '>=':
      return value >= bound;
    case '<':
      return value < bound;
    default:
      return value > bound;
  }
}

/**
 * Prints the one JSON line that outside tools (and the README's figures, scripts/bench-readme.ts) read; it
 * must be the very last line of output. `pass` holds only when the ratio and every check meet their goals.
 */
export function printVerdict(v: Verdict): boolean {
  const ratio = v.ours / v.reference;
  const round = (n: number): number => Math.round(n * 10000) / 10000;
  const checks = (v.checks ?? []).map((c) => ({ name: c.name, value: round(c.value), goal: c.goal, pass: meets(c.value, c.goal) }));
  const pass = meets(ratio, v.goal) && checks.every((c) => c.pass);
  const at = measuredCommit(v.covers ?? []);
  const round4 = (xs: readonly number[]): number[] => xs.map(round);
  console.log(
    JSON.stringify({
      bench: v.bench,
      metric: v.metric,
      ours: round(v.ours),
      reference: round(v.reference),
      ratio: round(ratio),
      goal: v.goal,
      pass,
      ...(checks.length > 0 ? { checks } : {}),
      date: new Date().toISOString().slice(0, 10),
      ...(v.samples
        ? {
            samples: { ours: round4(v.samples.ours), reference: round4(v.samples.reference) },
            spread: { ours: spreadOf(v.samples.ours), reference: spreadOf(v.samples.reference) },
          }
        : {}),
      ...(v.referenceCommand ? { reference_command: v.referenceCommand } : {}),
      ...(v.covers ? { covers: v.covers } : {}),
      commit: at.commit,
      ...(at.dirty ? { dirty: true } : {}),
      ...(v.extra ?? {}),
    }),
  );
  return pass;
}
