// A check is a table of small named rules run in order: each rule is read, tested and counted on its own
// (test/unit/config/ruleTables.test.ts fails when a rule id repeats or no fixture ever makes a rule report).
import type { ConfigDiagnostic } from '../types';

export interface Rule<C> {
  /** Unique across every table: what the rule checks, in words (`runspec.qlora-needs-4bit`). */
  readonly id: string;
  readonly check: (ctx: C) => readonly ConfigDiagnostic[];
}

/** Called with each rule that reported something; only tests set one (to see which rules the fixtures reach). */
type RuleTracer = (id: string, reported: number) => void;
let tracer: RuleTracer | undefined;

export function traceRules(t: RuleTracer | undefined): void {
  tracer = t;
}

export function runRules<C>(table: readonly Rule<C>[], ctx: C): ConfigDiagnostic[] {
  const out: ConfigDiagnostic[] = [];
  for (const r of table) {
    const got = r.check(ctx);
    if (got.length > 0) tracer?.(r.id, got.length);
    out.push(...got);
  }
  return out;
}

/** A node's range, at least one character wide so an empty value still shows a squiggle. */
export function nodeRange(n: { readonly start: number; readonly end: number }): { start: number; end: number } {
  return { start: n.start, end: Math.max(n.end, n.start + 1) };
}

export function finiteNumber(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}
