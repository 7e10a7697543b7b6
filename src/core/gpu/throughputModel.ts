// The training-throughput model and its fit. One micro-batch (batch × sequence tokens on one GPU) takes
//   compute: tokens × FLOPs per token ÷ (the GPU's dense 16-bit peak × an MFU ceiling), plus
//   kernel overhead: decoder layers × kernels per layer × passes × seconds per kernel, plus
//   step overhead: a fixed time per micro-batch whatever the model, plus
//   dequantisation (QLoRA): the 4-bit weights read and their bf16 copy written at the GPU's memory bandwidth,
// so the MFU a run reaches grows with its tokens per step and with the model's width (FLOPs per layer), and a
// small model or a small batch is overhead-bound. Why each part:
//  - FLOPs per token: 2·N forward; backward 4·N when weight gradients are computed (full fine-tuning), 2·N when only
//    activation gradients are (LoRA/QLoRA: the base weights are frozen); checkpointing recomputes the forward, +2·N
//    (Kaplan et al. 2020, §2.1). Causal attention adds 2·L·h·s per token forward (QKᵀ and AV over s/2 keys on
//    average), twice that backward, once more when checkpointed (the same count: Kaplan et al. 2020, Table 1).
//  - Kernel overhead: the measured H200 steps (bench/gpu/vram-nvidia-h200-2026-11-26.json) of a 1B model with 2,048
//    tokens take 0.18-0.29 s where their FLOPs take 0.02 s at the peak: the time goes to launching small kernels (the
//    LoRA adapter's dropout, A, B, scale and add beside each linear layer, bitsandbytes' dequantisation under QLoRA),
//    which costs the same whatever the tokens. Kernels per decoder layer are counted, not fitted: about 20 besides
//    the linear layers (2 RMSNorms of ~4 kernels, RoPE ~6, attention, SiLU and product, 2 residual adds) plus one per
//    linear layer (7 in a Llama layer), 4 more per linear layer under LoRA (on all of them, the runner's default),
//    2 more under QLoRA (dequantisation). A forward is one pass, a backward about two; checkpointing's recompute and
//    its hooks add `checkpointPasses`, fitted.
//  - Step overhead: what a micro-batch costs outside the decoder layers and independent of their count: the Trainer's
//    Python per step (collation, moving the batch, autocast, the loss), the embedding and loss kernels, a share of the
//    optimizer step. QwenLM/Qwen's published A100 table (bench/gpu/published-throughput.json) shows it: an iteration of
//    8 micro-batches takes 1.0 s for Qwen-1.8B at both 256 and 512 tokens, and the 7B and 14B rows extrapolate to
//    0.9 s and 0.8 s at zero tokens, far more than their per-layer kernels.
//  - Dequantisation under QLoRA: bitsandbytes' 4-bit matmul dequantises the whole weight to bf16 before each use
//    (bitsandbytes MatMul4Bit: once forward, once backward for the input gradient, once more in checkpointing's
//    recompute), reading 0.5 B and writing 2 B per parameter; at the datasheet memory bandwidth, not fitted. All
//    parameters are counted (the unquantised embeddings too: a 5-15% overcount of this term).
//  - Each GPU class with data has its own MFU ceiling, seconds per kernel and seconds per micro-batch (the host, the
//    software stack and the GPU set all three); `checkpointPasses` is shared. Coefficients are fitted by least
//    squares on log tokens/s, so a 20% miss on a small case weighs what it does on a large one.
import type { GpuId } from './catalog';
import { leaveOneModelOut } from './leaveOneModelOut';
import { minimize } from './nelderMead';

export type TrainMethod = 'qlora' | 'lora-bf16' | 'full';

/** Kernels per decoder layer in one pass (see above: counted, not fitted). */
export function kernelsPerLayer(method: TrainMethod, linearModules: number): number {
  return 20 + linearModules + (method === 'full' ? 0 : 4 * linearModules) + (method === 'qlora' ? 2 * linearModules : 0);
}
/** A forward pass and a backward of about twice its kernels. */
export const BASE_PASSES = 3;
/** Linear layers in a Llama-style decoder layer (q, k, v, o, gate, up, down). */
export const LLAMA_LINEAR_MODULES = 7;

export interface GpuCoefficients {
  /** Fraction of the dense 16-bit peak the matmuls reach when overhead is negligible. */
  readonly mfuCeiling: number;
  /** Host/launch time per kernel. */
  readonly secondsPerKernel: number;
  /** Fixed time per micro-batch outside the decoder layers (the Trainer's step, embedding, loss). */
  readonly secondsPerMicroBatch: number;
}

export interface ThroughputCoefficients {
  /** Per GPU class that has data, by catalog id. */
  readonly gpus: Readonly<Partial<Record<GpuId, GpuCoefficients>>>;
  /** Extra overhead passes with gradient checkpointing (the recomputed forward and its hooks). */
  readonly checkpointPasses: number;
}

export interface ThroughputCase {
  /** Base-model parameters. */
  readonly params: number;
  /** Decoder layers. */
  readonly layers: number;
  /** Hidden size (attention FLOPs). */
  readonly hidden: number;
  /** Linear layers per decoder layer (LoRA adapts all of them; 7 in Llama-style models). */
  readonly linearModules: number;
  readonly method: TrainMethod;
  readonly gradientCheckpointing: boolean;
  readonly seqLen: number;
  /** Tokens one GPU processes per forward/backward: per-device batch × sequence length. */
  readonly tokensPerMicroBatch: number;
  /** Dense 16-bit tensor peak of the GPU, TFLOPS (throughput.ts PEAK_DENSE_16BIT_TFLOPS), after any precision factor. */
  readonly peakTflops: number;
  /** Memory bandwidth of the GPU, TB/s (throughput.ts MEMORY_TBPS): QLoRA's dequantisation. */
  readonly memoryTBps: number;
}

export function flopsPerToken(c: Pick<ThroughputCase, 'params' | 'method' | 'gradientCheckpointing' | 'layers' | 'hidden' | 'seqLen'>): number {
  const dense = (2 + (c.method === 'full' ? 4 : 2) + (c.gradientCheckpointing ? 2 : 0)) * c.params;
  const attention = 2 * c.layers * c.hidden * c.seqLen * (3 + (c.gradientCheckpointing ? 1 : 0));
  return dense + attention;
}

/** Seconds QLoRA spends dequantising its weights in one micro-batch (0 for other methods). */
export function dequantSeconds(c: Pick<ThroughputCase, 'params' | 'method' | 'gradientCheckpointing' | 'memoryTBps'>): number {
  if (c.method !== 'qlora') return 0;
  const uses = 2 + (c.gradientCheckpointing ? 1 : 0);
  return (uses * c.params * (0.5 + 2)) / (c.memoryTBps * 1e12);
}

/** Seconds of one micro-batch: compute, per-kernel overhead, the fixed step overhead and QLoRA's dequantisation. */
export function microBatchSeconds(c: ThroughputCase, g: GpuCoefficients, checkpointPasses: number): number {
  const compute = (c.tokensPerMicroBatch * flopsPerToken(c)) / (c.peakTflops * 1e12 * g.mfuCeiling);
  const passes = BASE_PASSES + (c.gradientCheckpointing ? checkpointPasses : 0);
  const overhead = c.layers * kernelsPerLayer(c.method, c.linearModules) * passes * g.secondsPerKernel;
  return compute + overhead + g.secondsPerMicroBatch + dequantSeconds(c);
}

/** Tokens per second of one GPU, with the coefficients of the GPU class `fit` (which must be in k.gpus). */
export function predictTokensPerSecond(c: ThroughputCase, k: ThroughputCoefficients, fit: GpuId): number {
  const g = k.gpus[fit];
  if (!g) throw new Error(`no throughput coefficients for ${fit}`);
  return c.tokensPerMicroBatch / microBatchSeconds(c, g, k.checkpointPasses);
}

export interface MeasuredCase {
  readonly case: string;
  /** The model the case trained: leave-one-model-out holds out every case of one model together. */
  readonly model: string;
  /** The GPU it ran on: its coefficients are fitted on its cases. */
  readonly gpu: GpuId;
  /** Where the figure comes from (a measurement file, a published table). */
  readonly source: string;
  readonly input: ThroughputCase;
  readonly tokensPerSecond: number;
}

// Coefficients are fitted in log space (all positive) by nelderMead.ts's deterministic minimize, so the committed fit
// (estimateAccuracy.json) can be checked by fitting again.
const gpusOf = (cases: readonly MeasuredCase[]): GpuId[] => [...new Set(cases.map((c) => c.gpu))].sort();
function fromLog(p: readonly number[], gpus: readonly GpuId[]): ThroughputCoefficients {
  const out: Partial<Record<GpuId, GpuCoefficients>> = {};
  gpus.forEach(
    (g, i) =>
      (out[g] = { mfuCeiling: Math.min(1, Math.exp(p[3 * i]!)), secondsPerKernel: Math.exp(p[3 * i + 1]!), secondsPerMicroBatch: Math.exp(p[3 * i + 2]!) }),
  );
  return { gpus: out, checkpointPasses: Math.exp(p[3 * gpus.length]!) };
}

/** Sum of squared log errors of the predictions. */
export function logLoss(cases: readonly MeasuredCase[], k: ThroughputCoefficients): number {
  return cases.reduce((s, c) => s + Math.log(predictTokensPerSecond(c.input, k, c.gpu) / c.tokensPerSecond) ** 2, 0);
}

export function fitCoefficients(cases: readonly MeasuredCase[]): ThroughputCoefficients {
  const gpus = gpusOf(cases);
  for (const g of gpus) {
    if (cases.filter((c) => c.gpu === g).length < 3) throw new Error(`${g}: three coefficients need at least 3 cases`);
  }
  const loss = (p: readonly number[]): number => logLoss(cases, fromLog(p, gpus));
  return fromLog(minimize(loss, [...gpus.flatMap(() => [Math.log(0.4), Math.log(20e-6), Math.log(0.02)]), Math.log(2)]), gpus);
}

export interface CaseError {
  readonly case: string;
  readonly model: string;
  readonly gpu: GpuId;
  readonly source: string;
  readonly measured: number;
  /** Predicted by the fit on every case (in sample). */
  readonly inSample: number;
  /** Predicted by the fit on the other models' cases only (leave-one-model-out). */
  readonly heldOut: number;
}

/** In-sample and leave-one-model-out predictions of every case. */
export function crossValidate(cases: readonly MeasuredCase[]): { readonly coefficients: ThroughputCoefficients; readonly cases: CaseError[] } {
  const folds = leaveOneModelOut(cases, fitCoefficients);
  const coefficients = folds.all;
  return {
    coefficients,
    cases: cases.map((c) => ({
      case: c.case,
      model: c.model,
      gpu: c.gpu,
      source: c.source,
      measured: c.tokensPerSecond,
      inSample: predictTokensPerSecond(c.input, coefficients, c.gpu),
      heldOut: predictTokensPerSecond(c.input, folds.without(c.model), c.gpu),
    })),
  };
}
