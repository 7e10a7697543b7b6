// The training-throughput model and its fit. One micro-batch (batch × sequence tokens on one GPU) takes
//   compute: tokens × FLOPs per token ÷ (the GPU's dense 16-bit peak × an MFU ceiling), plus
//   overhead: decoder layers × kernels per layer × passes × seconds per kernel,
// so the MFU a run reaches grows with its tokens per step and with the model's width (FLOPs per layer), and a
// small model or a small batch is overhead-bound. Why each part:
//  - FLOPs per token: 2·N forward; backward 4·N when weight gradients are computed (full fine-tuning), 2·N when only
//    activation gradients are (LoRA/QLoRA: the base weights are frozen); checkpointing recomputes the forward, +2·N
//    (Kaplan et al. 2020, §2.1). Attention's own FLOPs are left out (a few percent below 4k tokens).
//  - Overhead: the measured H200 steps (bench/gpu/vram-nvidia-h200-2026-11-26.json) of a 1B model with 2,048 tokens
//    take 0.18-0.29 s where their FLOPs take 0.02 s at the peak: the time goes to launching small kernels (the LoRA
//    adapter's dropout, A, B, scale and add beside each linear layer, bitsandbytes' dequantisation under QLoRA),
//    which costs the same whatever the tokens. Kernels per decoder layer are counted, not fitted: about 27 for the
//    plain layer (7 linear layers, 2 RMSNorms of ~4 kernels, RoPE ~6, attention, SiLU and product, 2 residual adds),
//    +28 for LoRA on all 7 linear layers (4 more each), +14 for QLoRA's dequantisation (2 each). A forward is one
//    pass, a backward about two; checkpointing's recompute and its hooks add `checkpointPasses`, fitted.
//  - Three coefficients are fitted (mfuCeiling, secondsPerKernel, checkpointPasses) by least squares on log
//    tokens/s, so a 20% miss on a small case weighs what it does on a large one.
// Other GPUs scale the compute term by their datasheet peak; the overhead term (host-side launches) is kept as
// measured. Neither scaling is measured on any GPU but the H200: the basis text says so.
import type { GpuId } from './catalog';

export type TrainMethod = 'qlora' | 'lora-bf16' | 'full';

/** Kernels per decoder layer in one pass (see above: counted from the Llama layer, not fitted). */
export const KERNELS_PER_LAYER: Readonly<Record<TrainMethod, number>> = { full: 27, 'lora-bf16': 55, qlora: 69 };
/** A forward pass and a backward of about twice its kernels. */
export const BASE_PASSES = 3;

export interface ThroughputCoefficients {
  /** Fraction of the dense 16-bit peak the matmuls reach when overhead is negligible. */
  readonly mfuCeiling: number;
  /** Host/launch time per kernel. */
  readonly secondsPerKernel: number;
  /** Extra overhead passes with gradient checkpointing (the recomputed forward and its hooks). */
  readonly checkpointPasses: number;
}

export interface ThroughputCase {
  /** Base-model parameters. */
  readonly params: number;
  /** Decoder layers. */
  readonly layers: number;
  readonly method: TrainMethod;
  readonly gradientCheckpointing: boolean;
  /** Tokens one GPU processes per forward/backward: per-device batch × sequence length. */
  readonly tokensPerMicroBatch: number;
  /** Dense 16-bit tensor peak of the GPU, TFLOPS (throughput.ts PEAK_DENSE_16BIT_TFLOPS), after any precision factor. */
  readonly peakTflops: number;
}

export function flopsPerToken(c: Pick<ThroughputCase, 'params' | 'method' | 'gradientCheckpointing'>): number {
  return (2 + (c.method === 'full' ? 4 : 2) + (c.gradientCheckpointing ? 2 : 0)) * c.params;
}

/** Seconds of one micro-batch: compute plus per-kernel overhead. */
export function microBatchSeconds(c: ThroughputCase, k: ThroughputCoefficients): number {
  const compute = (c.tokensPerMicroBatch * flopsPerToken(c)) / (c.peakTflops * 1e12 * k.mfuCeiling);
  const passes = BASE_PASSES + (c.gradientCheckpointing ? k.checkpointPasses : 0);
  const overhead = c.layers * KERNELS_PER_LAYER[c.method] * passes * k.secondsPerKernel;
  return compute + overhead;
}

/** Tokens per second of one GPU. */
export function predictTokensPerSecond(c: ThroughputCase, k: ThroughputCoefficients): number {
  return c.tokensPerMicroBatch / microBatchSeconds(c, k);
}

export interface MeasuredCase {
  readonly case: string;
  /** The model the case trained: leave-one-model-out holds out every case of one model together. */
  readonly model: string;
  readonly gpu: GpuId;
  readonly input: ThroughputCase;
  readonly tokensPerSecond: number;
}

// Coefficients are fitted in log space (all positive) by Nelder-Mead from a fixed start: deterministic, so the
// committed fit (throughputFit.json) can be checked by fitting again.
const START: readonly number[] = [Math.log(0.4), Math.log(40e-6), Math.log(2)];
const fromLog = (p: readonly number[]): ThroughputCoefficients => ({
  mfuCeiling: Math.min(1, Math.exp(p[0]!)),
  secondsPerKernel: Math.exp(p[1]!),
  checkpointPasses: Math.exp(p[2]!),
});

/** Sum of squared log errors of the predictions. */
export function logLoss(cases: readonly MeasuredCase[], k: ThroughputCoefficients): number {
  return cases.reduce((s, c) => s + Math.log(predictTokensPerSecond(c.input, k) / c.tokensPerSecond) ** 2, 0);
}

function nelderMead(f: (p: readonly number[]) => number, start: readonly number[], iterations = 4000): number[] {
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

export function fitCoefficients(cases: readonly MeasuredCase[]): ThroughputCoefficients {
  if (cases.length < 3) throw new Error(`three coefficients need at least 3 cases, got ${cases.length}`);
  return fromLog(nelderMead((p) => logLoss(cases, fromLog(p)), START));
}

export interface CaseError {
  readonly case: string;
  readonly model: string;
  readonly measured: number;
  /** Predicted by the fit on every case (in sample). */
  readonly inSample: number;
  /** Predicted by the fit on the other models' cases only (leave-one-model-out). */
  readonly heldOut: number;
}

/** In-sample and leave-one-model-out predictions of every case. */
export function crossValidate(cases: readonly MeasuredCase[]): { readonly coefficients: ThroughputCoefficients; readonly cases: CaseError[] } {
  const coefficients = fitCoefficients(cases);
  const byModel = new Map<string, ThroughputCoefficients>();
  for (const model of new Set(cases.map((c) => c.model))) byModel.set(model, fitCoefficients(cases.filter((c) => c.model !== model)));
  return {
    coefficients,
    cases: cases.map((c) => ({
      case: c.case,
      model: c.model,
      measured: c.tokensPerSecond,
      inSample: predictTokensPerSecond(c.input, coefficients),
      heldOut: predictTokensPerSecond(c.input, byModel.get(c.model)!),
    })),
  };
}
