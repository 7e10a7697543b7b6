// How long a run will train, for the cost shown before launch: optimizer steps (trainer.max_steps, or epochs
// over the local training file's examples) × tokens per step ÷ the GPU class's training throughput
// (gpu/throughput.ts, with its band and basis), with the model's size from the VRAM estimator. Unset fields take
// python-runner's defaults (config/runnerDefaults.ts over RUN_SPEC_DEFAULTS, which the runner reads from its
// generated spec_defaults.py), since that is what the host will run. When the length cannot be known (an own
// command, a Hub dataset without max_steps, no model size) it says why instead of guessing.
import { preferenceBase, preferenceComputeFactor } from '../../config/preferenceMethod';
import { isAbsolute, join } from 'node:path';
import { isGpuId } from '../../gpu/catalog';
import { trainingThroughput } from '../../gpu/throughput';
import { RUNNER_DEFAULTS } from '../../config/runnerDefaults';
import type { LooseRunSpec } from '../../config/runSpecDefaults';

export { RUNNER_DEFAULTS };

export interface RunLengthInput {
  /** The fields of the spec the schema accepts (the editor's spec may be half-written). */
  readonly spec: LooseRunSpec;
  /** The spec's folder: relative data paths resolve there. */
  readonly specDir: string;
  readonly gpu: string;
  readonly gpuCount: number;
  /** Base model parameters (the VRAM estimator's model shape), when known. */
  readonly params?: number;
  /** Decoder layers of that shape, when known (the throughput model's overhead term counts them). */
  readonly layers?: number;
  readonly countExamples: (absPath: string) => number | undefined;
}

export type RunLength =
  | {
      readonly known: true;
      readonly hours: number;
      /** The band on hours, from the throughput's: hours at its high and at its low tokens/s. */
      readonly hoursLow: number;
      readonly hoursHigh: number;
      readonly steps: number;
      readonly tokensPerStep: number;
      readonly tokensPerSecond: number;
      readonly basis: string;
    }
  | { readonly known: false; readonly reason: string };

function positive(v: unknown, fallback: number): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : fallback;
}

export function runLength(x: RunLengthInput): RunLength {
  if (typeof x.spec.command === 'string') return { known: false, reason: 'your own command sets its own length' };
  if (!isGpuId(x.gpu)) return { known: false, reason: `no throughput figure for ${x.gpu}` };
  if (!x.params) return { known: false, reason: 'the model size is unknown (set model.config_path or model.params_b)' };
  const { trainer = {}, data = {} } = x.spec;
  const m = x.spec.method;
  const method = preferenceBase(m, x.spec.preference?.base_method) ?? (m === 'full' || m === 'lora-bf16' || m === 'qlora' ? m : RUNNER_DEFAULTS.method);
  // dpo/orpo: two sequences per example, and DPO's reference pass (preferenceMethod.ts).
  const compute = preferenceComputeFactor(m);
  const batch = positive(trainer.per_device_batch_size, RUNNER_DEFAULTS.perDeviceBatch);
  const accum = positive(trainer.gradient_accumulation, RUNNER_DEFAULTS.gradientAccumulation);
  const seq = positive(data.max_seq_length, RUNNER_DEFAULTS.maxSeqLength);
  const gpus = Math.max(1, x.gpuCount);
  const maxSteps = trainer.max_steps;
  let steps: number;
  let stepsBasis: string;
  if (typeof maxSteps === 'number' && maxSteps > 0) {
    steps = maxSteps;
    stepsBasis = `trainer.max_steps ${maxSteps}`;
  } else {
    const train = data.train;
    if (typeof train !== 'string') return { known: false, reason: 'no data.train to count' };
    const path = isAbsolute(train) ? train : join(x.specDir, train);
    const examples = x.countExamples(path);
    if (examples === undefined)
      return { known: false, reason: `the size of ${train} is not known here (a Hub dataset or a format not counted): set trainer.max_steps for an estimate` };
    const epochs = positive(trainer.epochs, RUNNER_DEFAULTS.epochs);
    // HF Trainer: batches per epoch on each process, then optimizer steps per epoch after accumulation.
    const perEpoch = Math.ceil(Math.ceil(examples / (batch * gpus)) / accum);
    steps = Math.ceil(perEpoch * epochs);
    stepsBasis = `${examples} examples × ${epochs} epochs ÷ (${batch} × ${accum} × ${gpus})`;
  }
  const tokensPerStep = batch * accum * gpus * seq;
  const ckpt = trainer.gradient_checkpointing;
  const prec = trainer.precision;
  const t = trainingThroughput({
    gpu: x.gpu,
    gpuCount: gpus,
    params: x.params,
    ...(x.layers ? { layers: x.layers } : {}),
    tokensPerMicroBatch: batch * seq,
    seqLen: seq,
    method,
    gradientCheckpointing: typeof ckpt === 'boolean' ? ckpt : RUNNER_DEFAULTS.gradientCheckpointing,
    precision: prec === 'fp16' || prec === 'fp32' || prec === 'bf16' ? prec : RUNNER_DEFAULTS.precision,
  });
  const hours = (compute * steps * tokensPerStep) / t.tokensPerSecond / 3600;
  return {
    known: true,
    hours,
    hoursLow: (compute * steps * tokensPerStep) / t.high / 3600,
    hoursHigh: (compute * steps * tokensPerStep) / t.low / 3600,
    steps,
    tokensPerStep,
    tokensPerSecond: t.tokensPerSecond,
    basis: `${steps} steps (${stepsBasis}) × ${tokensPerStep} tokens${compute !== 1 ? ` × ${compute.toFixed(2)} (${String(m)}: chosen and rejected${m === 'dpo' ? ', reference pass' : ''})` : ''} at ~${Math.round(t.tokensPerSecond)} tokens/s (${Math.round(t.low)}–${Math.round(t.high)}, ±${Math.ceil(t.band * 100)}%; ${t.basis})`,
  };
}
