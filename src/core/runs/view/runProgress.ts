// How far a live run is and how long it has left: "step 120 of 500, ≈ 14m left". The runner's metrics events
// carry the step and the Trainer's max_steps; the rate is measured from the logged steps of the run's current
// stretch (a resumed run starts mid-way, and the hours it lay interrupted are no part of its speed). Pure, so
// the Runs row, the status bar and the metrics panel say the same words.
import { formatDuration } from '../cost/duration';
import type { RunProgress } from '../store/runProgressSchema';
import type { RunStatus } from '../store/runRecord';
import { isTerminal } from '../store/runRecord';
import type { RunRecord } from '../store/runRecord';
import { estimateVsActualLines } from '../cost/estimateVsActual';

export type { RunProgress };

/** A run is called stalled here once no step has come for this many logging gaps, and at least STALL_MIN_MS. */
const STALL_GAPS = 4;
const STALL_MIN_MS = 5 * 60_000;

/**
 * The progress after one logged step. A step below the last one (a resume from an older checkpoint, a spot
 * replacement) or a `restart` (the host's `resumed` event) starts a new stretch, so the rate is never taken
 * across the time the run lay still.
 */
export function nextProgress(
  prev: RunProgress | undefined,
  lastStep: number | undefined,
  e: { readonly step: number; readonly tsMs: number; readonly maxSteps?: number | undefined },
  seenAt: number,
  restart = false,
): RunProgress {
  const maxSteps = e.maxSteps ?? prev?.maxSteps;
  const fresh = !prev || restart || lastStep === undefined || e.step < lastStep || e.tsMs < prev.lastAt;
  if (fresh) return { ...(maxSteps !== undefined ? { maxSteps } : {}), fromStep: e.step, fromAt: e.tsMs, lastAt: e.tsMs, seenAt };
  return {
    ...prev,
    ...(maxSteps !== undefined ? { maxSteps } : {}),
    lastAt: e.tsMs,
    seenAt,
    ...(e.step > lastStep ? { gapMs: e.tsMs - prev.lastAt } : {}),
  };
}

/** Steps per millisecond over the stretch, once two logged steps are apart in step and time. */
export function stepRate(p: RunProgress, lastStep: number): number | undefined {
  const steps = lastStep - p.fromStep;
  const ms = p.lastAt - p.fromAt;
  return steps > 0 && ms > 0 ? steps / ms : undefined;
}

export interface ProgressFacts {
  readonly step: number;
  readonly maxSteps?: number;
  /** Milliseconds left at the measured rate, from now. */
  readonly leftMs?: number;
  /** No step for this long (longer than the run's own gaps allow): no time left is promised. */
  readonly stalledMs?: number;
}

/** Step, total, time left or the stall, as numbers; undefined before the first logged step. */
export function progressFacts(
  r: { readonly lastStep?: number | undefined; readonly progress?: RunProgress | undefined },
  now: number,
): ProgressFacts | undefined {
  const step = r.lastStep;
  if (step === undefined) return undefined;
  const p = r.progress;
  const maxSteps = p?.maxSteps;
  if (!p) return { step };
  const base = { step, ...(maxSteps !== undefined ? { maxSteps } : {}) };
  const quiet = Math.max(0, now - p.seenAt);
  if (p.gapMs !== undefined && quiet > Math.max(STALL_GAPS * p.gapMs, STALL_MIN_MS)) return { ...base, stalledMs: quiet };
  const rate = stepRate(p, step);
  if (maxSteps === undefined || rate === undefined) return base;
  const remaining = Math.max(0, maxSteps - step);
  return { ...base, leftMs: Math.max(0, remaining / rate - quiet) };
}

/** "step 120 of 500, ≈ 14m 05s left"; "step 120" without a total; "step 120 of 500, no step for 12m 00s". */
export function progressText(f: ProgressFacts): string {
  const of = f.maxSteps !== undefined ? `step ${f.step} of ${f.maxSteps}` : `step ${f.step}`;
  if (f.stalledMs !== undefined) return `${of}, no step for ${formatDuration(f.stalledMs)}`;
  if (f.leftMs === undefined) return of;
  if (f.maxSteps !== undefined && f.step >= f.maxSteps) return `${of}, finishing`;
  return `${of}, ≈ ${formatDuration(f.leftMs)} left`;
}

/** The cost so far and, at the same price, what the run will have cost when it ends: "$1.20 so far, ≈ $3.40 in all". */
export function costSoFarText(costUsd: number | undefined, pricePerHour: number | undefined, leftMs: number | undefined): string | undefined {
  if (costUsd === undefined) return undefined;
  const soFar = `$${costUsd.toFixed(2)} so far`;
  if (pricePerHour === undefined || leftMs === undefined) return soFar;
  return `${soFar}, ≈ $${(costUsd + (pricePerHour * leftMs) / 3_600_000).toFixed(2)} in all`;
}

/** The live line: progress, then for a billed run the money. Undefined before the first step and without a cost. */
export function liveProgressLine(
  r: {
    readonly lastStep?: number | undefined;
    readonly progress?: RunProgress | undefined;
    readonly costUsd?: number | undefined;
    readonly pricePerHour?: number | undefined;
  },
  now: number,
): string | undefined {
  const f = progressFacts(r, now);
  const money = costSoFarText(r.costUsd, r.pricePerHour, f?.stalledMs === undefined ? f?.leftMs : undefined);
  const parts = [...(f ? [progressText(f)] : []), ...(money ? [money] : [])];
  return parts.length ? parts.join(' · ') : undefined;
}

/** The step as a row says it: a live run's total and time left, a finished run's last step. */
export function stepWords(
  r: { readonly status: RunStatus; readonly lastStep?: number | undefined; readonly progress?: RunProgress | undefined },
  now: number,
): string | undefined {
  if (r.lastStep === undefined) return undefined;
  if (isTerminal(r.status)) return `step ${r.lastStep}`;
  const f = progressFacts(r, now);
  return f ? progressText(f) : `step ${r.lastStep}`;
}

/** The metrics panel's progress lines: live, the step, time left and money; ended, estimated against actual. */
export function runProgressLines(r: RunRecord, now: number): string[] {
  if (isTerminal(r.status)) return estimateVsActualLines(r);
  const live = liveProgressLine(r, now);
  return live ? [live] : [];
}
