// The user's own runs make the next estimate better (issue 32.4). A finished run's record holds the estimate it
// started with (RunEstimated) and what its host measured (RunMeasured); here they are set side by side with the
// error, and a new estimate for the same case (same model, GPU class and count, method, and a sequence length
// and batch close to it) takes the measured figures instead of the model's. All of it is local.
import type { RunRecord } from '../store/runRecord';
import type { RunEstimated } from '../store/runMeasuredSchema';
import type { RunLength } from './runLength';
import { RUNNER_DEFAULTS } from '../../config/runnerDefaults';
import type { LooseRunSpec } from '../../config/runSpecDefaults';
import { formatDuration } from './duration';

const MIB_PER_GIB = 1024;

export interface RunActuals {
  /** The largest torch peak reserved over the run's GPUs (what decides whether it fits), GiB. */
  readonly vramGib?: number;
  /** nvidia-smi's largest peak over the GPUs (CUDA context and every allocator included), GiB. */
  readonly smiGib?: number;
  /** Hours spent training: the runner's runtime less the time to the first step. */
  readonly hours?: number;
  readonly costUsd?: number;
  readonly tokensPerSecond?: number;
  readonly firstStepS?: number;
  /** The launch call to SSH answering. */
  readonly provisioningS?: number;
  /** The launch call to the end of the run (the instance billed all of it). */
  readonly billedS?: number;
}

function maxOf(xs: readonly (number | undefined)[]): number | undefined {
  const ok = xs.filter((x): x is number => x !== undefined);
  return ok.length ? Math.max(...ok) : undefined;
}

export function actualsOf(r: RunRecord): RunActuals {
  const m = r.measured;
  const reserved = maxOf((m?.gpus ?? []).map((g) => g.torchPeakReservedMib ?? g.torchPeakAllocatedMib));
  const smi = maxOf((m?.gpus ?? []).map((g) => g.smiPeakMib));
  const ended = r.finishedAt ? Date.parse(r.finishedAt) : undefined;
  const hours = m?.runtimeS !== undefined ? Math.max(0, m.runtimeS - (m.firstStepS ?? 0)) / 3600 : undefined;
  return {
    ...(reserved !== undefined ? { vramGib: reserved / MIB_PER_GIB } : {}),
    ...(smi !== undefined ? { smiGib: smi / MIB_PER_GIB } : {}),
    ...(hours !== undefined ? { hours } : {}),
    ...(r.costUsd !== undefined ? { costUsd: r.costUsd } : {}),
    ...(m?.tokensPerSecond !== undefined ? { tokensPerSecond: m.tokensPerSecond } : {}),
    ...(m?.firstStepS !== undefined ? { firstStepS: m.firstStepS } : {}),
    ...(r.launchedAt !== undefined && r.readyAt !== undefined ? { provisioningS: Math.max(0, (r.readyAt - r.launchedAt) / 1000) } : {}),
    ...(r.launchedAt !== undefined && ended !== undefined && Number.isFinite(ended) ? { billedS: Math.max(0, (ended - r.launchedAt) / 1000) } : {}),
  };
}

/** "+4%" / "−12%": how far the estimate was from what happened, relative to the estimate. */
export function errorPct(estimated: number, actual: number): string {
  if (!(estimated > 0)) return 'n/a';
  const e = Math.round(((actual - estimated) / estimated) * 100);
  return e > 0 ? `+${e}%` : e < 0 ? `−${-e}%` : '±0%';
}

const gb = (gib: number): string => gib.toFixed(1);
const tps = (x: number): string => Math.round(x).toLocaleString('en-US');

/** The Runs view's lines for a finished run: estimated vs actual VRAM, time and cost, then what was measured. */
export function estimateVsActualLines(r: RunRecord): string[] {
  const e = r.estimated;
  const a = actualsOf(r);
  const lines: string[] = [];
  const pair = (what: string, est: number | undefined, act: number | undefined, fmt: (x: number) => string): void => {
    if (act === undefined) return;
    lines.push(est !== undefined ? `${what}: estimated ${fmt(est)}, actual ${fmt(act)} (${errorPct(est, act)})` : `${what}: actual ${fmt(act)} (no estimate)`);
  };
  pair('VRAM', e?.vramGib, a.vramGib, (x) => `${gb(x)} GB`);
  pair('Training time', e?.hours, a.hours, (x) => formatDuration(x * 3_600_000));
  pair('Cost', e?.costUsd, a.costUsd, (x) => `$${x.toFixed(2)}`);
  pair('Throughput', e?.tokensPerSecond, a.tokensPerSecond, (x) => `${tps(x)} tokens/s`);
  const measured = [
    ...(a.smiGib !== undefined ? [`nvidia-smi peak ${gb(a.smiGib)} GB`] : []),
    ...(a.firstStepS !== undefined ? [`first step after ${formatDuration(a.firstStepS * 1000)}`] : []),
    ...(a.provisioningS !== undefined ? [`provisioning wait ${formatDuration(a.provisioningS * 1000)}`] : []),
    ...(a.billedS !== undefined ? [`billed ${formatDuration(a.billedS * 1000)}`] : []),
  ];
  if (measured.length) lines.push(`Measured: ${measured.join(', ')}`);
  // Several GPUs: each one's peaks (an uneven split, ZeRO's rank 0 or a pipeline stage, shows here).
  const gpus = r.measured?.gpus ?? [];
  if (gpus.length > 1)
    for (const g of gpus) {
      const torch = g.torchPeakReservedMib ?? g.torchPeakAllocatedMib;
      const parts = [
        ...(torch !== undefined ? [`torch ${gb(torch / MIB_PER_GIB)} GB`] : []),
        ...(g.smiPeakMib !== undefined ? [`nvidia-smi ${gb(g.smiPeakMib / MIB_PER_GIB)} GB`] : []),
      ];
      if (parts.length) lines.push(`GPU ${g.index}: ${parts.join(', ')}`);
    }
  return lines;
}

export type EstimateCase = Pick<RunEstimated, 'model' | 'gpu' | 'gpuCount' | 'method' | 'seqLen' | 'batch'>;

export interface MeasuredMatch {
  readonly record: RunRecord;
  readonly vramGib?: number;
  readonly tokensPerSecond?: number;
  /** "measured on run X: 31.2 GB, 2,340 tokens/s" */
  readonly text: string;
}

/** Close enough that the measurement says more than the model: sequence within ±25%, batch within 2×. */
function close(a: EstimateCase, b: EstimateCase): boolean {
  return (
    a.model === b.model &&
    a.gpu === b.gpu &&
    a.gpuCount === b.gpuCount &&
    a.method === b.method &&
    Math.abs(a.seqLen - b.seqLen) <= 0.25 * b.seqLen &&
    a.batch <= 2 * b.batch &&
    b.batch <= 2 * a.batch
  );
}

/** The newest of the user's runs that measured this case, if any. */
export function measuredMatch(records: readonly RunRecord[], c: EstimateCase): MeasuredMatch | undefined {
  const hits = records
    .filter((r) => r.estimated && r.measured && close(r.estimated, c))
    .map((r) => ({ r, a: actualsOf(r) }))
    .filter(({ a }) => a.vramGib !== undefined || a.tokensPerSecond !== undefined)
    .sort((x, y) => (y.r.finishedAt ?? y.r.updatedAt).localeCompare(x.r.finishedAt ?? x.r.updatedAt));
  const hit = hits[0];
  if (!hit) return undefined;
  const { r, a } = hit;
  const figures = [
    ...(a.vramGib !== undefined ? [`${gb(a.vramGib)} GB`] : []),
    ...(a.tokensPerSecond !== undefined ? [`${tps(a.tokensPerSecond)} tokens/s`] : []),
  ];
  const name = r.name === r.id ? r.id : `${r.name} (${r.id})`;
  const differs =
    r.estimated!.seqLen !== c.seqLen || r.estimated!.batch !== c.batch ? `, at sequence ${r.estimated!.seqLen} and batch ${r.estimated!.batch}` : '';
  return {
    record: r,
    ...(a.vramGib !== undefined ? { vramGib: a.vramGib } : {}),
    ...(a.tokensPerSecond !== undefined ? { tokensPerSecond: a.tokensPerSecond } : {}),
    text: `measured on run ${name}${differs}: ${figures.join(', ')}`,
  };
}

/** The run's length at the throughput the user's own run measured, saying so; unchanged without one. */
export function withMeasuredThroughput(length: RunLength, match: MeasuredMatch | undefined): RunLength {
  if (!length.known || !match?.tokensPerSecond) return length;
  const hours = (length.steps * length.tokensPerStep) / match.tokensPerSecond / 3600;
  // One measured run has no band of its own: the low and high ends are the measurement.
  return {
    ...length,
    hours,
    hoursLow: hours,
    hoursHigh: hours,
    tokensPerSecond: match.tokensPerSecond,
    basis: `${length.steps} steps × ${length.tokensPerStep} tokens at ${tps(match.tokensPerSecond)} tokens/s, ${match.text}`,
  };
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : undefined;
}

/** The case a spec describes on a GPU (unset fields at the runner's defaults); none for an own command. */
export function estimateCaseOf(
  spec: LooseRunSpec,
  gpu: string,
  gpuCount: number,
  defaults: {
    readonly method: string;
    readonly perDeviceBatch: number;
    readonly gradientAccumulation: number;
    readonly maxSeqLength: number;
  },
): EstimateCase | undefined {
  const model = spec.model?.id;
  if (typeof spec.command === 'string' || typeof model !== 'string') return undefined;
  const { trainer = {}, data = {} } = spec;
  return {
    model,
    gpu,
    gpuCount: Math.max(1, Math.floor(gpuCount)),
    method: spec.method ?? defaults.method,
    seqLen: Math.floor(num(data.max_seq_length) ?? defaults.maxSeqLength),
    batch: Math.floor((num(trainer.per_device_batch_size) ?? defaults.perDeviceBatch) * (num(trainer.gradient_accumulation) ?? defaults.gradientAccumulation)),
  };
}

/** The newest measured run of the case a spec describes on a GPU, for the editor's estimate. */
export function measuredForSpec(spec: LooseRunSpec, gpu: string, records: readonly RunRecord[]): MeasuredMatch | undefined {
  const c = estimateCaseOf(spec, gpu, spec.target?.gpu_count ?? 1, RUNNER_DEFAULTS);
  return c ? measuredMatch(records, c) : undefined;
}

/** The VRAM CodeLens: the user's own measurement first when there is one, then the model's estimate. */
export function estimateLensTitle(modelLabel: string, match: MeasuredMatch | undefined): string {
  return match?.vramGib !== undefined ? `${match.text} · model: ${modelLabel}` : modelLabel;
}
