// Training throughput (tokens per second) of a GPU class, for the run length and cost shown before launch.
// The model (throughputModel.ts) is compute at a fitted MFU ceiling plus a fitted per-kernel and per-micro-batch
// overhead that dominates small models and small batches, and QLoRA's dequantisation at the memory bandwidth; its
// coefficients and its errors come from the measured cases in bench/gpu/vram-*.json (our H200 runs) and the
// published ones in bench/gpu/published-*.json (QwenLM/Qwen's README table of LoRA seconds per step on an
// A100-SXM4-80G), fitted by scripts/gpu-accuracy.ts into
// estimateAccuracy.json (a unit test fits again and fails when the committed file is stale). Every figure carries
// its band (the largest leave-one-model-out error of its GPU class) and its basis. Not fitted: Unsloth's benchmark
// pages (ratios to Hugging Face, no tokens/s), and LLaMA-Factory's wiki "Performance comparison"
// (https://github.com/hiyouga/LLaMA-Factory/wiki/Performance-comparison): its only table with a GPU (LLaMA2-7B 4-bit
// LoRA on one A100 40GB, tokens per GPU per second at 1,024-32,768 tokens) does not say whether checkpointing was on
// or whether sequences filled the length, and the fit would have to guess both.
// Assumptions not measured anywhere, said in the basis when they apply:
//  - other GPUs: the compute term scales with NVIDIA's datasheet dense FP16/BF16 tensor peak (without sparsity);
//    the overhead terms are host-side (kernel launches, the Trainer's step) and are kept as measured; QLoRA's
//    dequantisation scales with the GPU's datasheet memory bandwidth;
//  - fp32 runs at about a quarter of the 16-bit tensor rate (TF32 on Ampere and newer is half, plain FP32 an
//    eighth on older parts);
//  - several GPUs (data parallel) add 90% each: gradient all-reduce is not free.
import type { GpuId } from './catalog';
import { GPU_CATALOG } from './catalog';
import { shapeFromName } from './models';
import type { ThroughputCoefficients, TrainMethod } from './throughputModel';
import { LLAMA_LINEAR_MODULES, flopsPerToken, predictTokensPerSecond } from './throughputModel';
import accuracy from './estimateAccuracy.json';

export const PEAK_DENSE_16BIT_TFLOPS: Readonly<Record<GpuId, number>> = {
  T4: 65,
  V100: 125,
  // The A10G is AWS's A10 (NVIDIA A10 datasheet: 125 TFLOPS BF16/FP16 dense).
  A10G: 125,
  L4: 121,
  // GeForce cards: FP16 with FP32 accumulate, which mixed-precision training uses.
  RTX3090: 71,
  RTX4090: 165,
  'A100-40GB': 312,
  'A100-80GB': 312,
  H100: 989,
  H200: 989,
};

// Memory bandwidth, TB/s, from NVIDIA's datasheets (SXM parts where there are two; A10G as the A10).
export const MEMORY_TBPS: Readonly<Record<GpuId, number>> = {
  T4: 0.32,
  V100: 0.9,
  A10G: 0.6,
  L4: 0.3,
  RTX3090: 0.936,
  RTX4090: 1.008,
  'A100-40GB': 1.555,
  'A100-80GB': 2.039,
  H100: 3.35,
  H200: 4.8,
};

export const FP32_FACTOR = 0.25;
export const MULTI_GPU_EFFICIENCY = 0.9;

export function precisionFactor(p: 'bf16' | 'fp16' | 'fp32'): number {
  return p === 'fp32' ? FP32_FACTOR : 1;
}

/** One GPU class's fitted throughput coefficients and how well they predict (written by scripts/gpu-accuracy.ts). */
export interface GpuFit {
  readonly basis: 'measured' | 'published';
  readonly sources: readonly string[];
  readonly cases: number;
  readonly models: number;
  readonly mfuCeiling: number;
  readonly secondsPerKernel: number;
  readonly secondsPerMicroBatch: number;
  readonly inSampleMaxAbs: number;
  readonly heldOutMaxAbs: number;
}

/** The committed fit (estimateAccuracy.json): per GPU class with data, and the shared checkpointing passes. */
export const THROUGHPUT_FIT: { readonly checkpointPasses: number; readonly gpus: Readonly<Partial<Record<GpuId, GpuFit>>> } = accuracy.throughput as {
  checkpointPasses: number;
  gpus: Partial<Record<GpuId, GpuFit>>;
};

const COEFFICIENTS: ThroughputCoefficients = {
  checkpointPasses: THROUGHPUT_FIT.checkpointPasses,
  gpus: Object.fromEntries(
    Object.entries(THROUGHPUT_FIT.gpus).map(([g, f]) => [
      g,
      { mfuCeiling: f.mfuCeiling, secondsPerKernel: f.secondsPerKernel, secondsPerMicroBatch: f.secondsPerMicroBatch },
    ]),
  ),
};

// A GPU without data of its own borrows the coefficients of the nearest class that has some: Hopper from the H200,
// the rest (Ampere, Ada, Turing, Volta) from the A100, its compute scaled by its own datasheet peak.
const HOPPER: readonly GpuId[] = ['H100', 'H200'];
const A100: readonly GpuId[] = ['A100-80GB', 'A100-40GB'];

/** The GPU class whose fitted coefficients a GPU uses, or undefined when there is no fit at all. */
export function fitClassOf(gpu: GpuId): GpuId | undefined {
  const has = (g: GpuId): boolean => THROUGHPUT_FIT.gpus[g] !== undefined;
  if (has(gpu)) return gpu;
  const order = HOPPER.includes(gpu) ? [...HOPPER, ...A100] : [...A100, ...HOPPER];
  return order.find(has) ?? (Object.keys(THROUGHPUT_FIT.gpus)[0] as GpuId | undefined);
}

export interface ThroughputInput {
  readonly gpu: GpuId;
  readonly gpuCount: number;
  /** Parameters of the base model. */
  readonly params: number;
  /** Decoder layers; when unknown, a Llama-like shape of this size is assumed. */
  readonly layers?: number;
  /** Hidden size; when unknown, from params and layers (P ≈ 12·L·h², Kaplan et al. 2020). */
  readonly hidden?: number;
  readonly method: TrainMethod;
  readonly gradientCheckpointing: boolean;
  readonly precision: 'bf16' | 'fp16' | 'fp32';
  /** Per-device batch × sequence length: the tokens of one forward/backward on one GPU. */
  readonly tokensPerMicroBatch: number;
  /** Sequence length (attention FLOPs); when unknown, the micro-batch is taken as one sequence. */
  readonly seqLen?: number;
}

export interface Throughput {
  /** All GPUs together. */
  readonly tokensPerSecond: number;
  /** The band: tokensPerSecond × (1 ± band). */
  readonly band: number;
  readonly low: number;
  readonly high: number;
  readonly flopsPerToken: number;
  /** What the figure rests on, for the text beside it. */
  readonly basis: string;
}

const pct = (x: number): number => Math.ceil(x * 100);

/** "fitted on 10 measured H200 cases (3 models), held-out error ≤ 20% (in-sample ≤ 15%)", and for a GPU without data its class. */
export function throughputBasis(gpu: GpuId): string {
  const cls = fitClassOf(gpu);
  const f = cls ? THROUGHPUT_FIT.gpus[cls] : undefined;
  if (!cls || !f) return 'no throughput data: FLOPs at an assumed 35% of the peak';
  const what = f.basis === 'measured' ? `${f.cases} measured ${cls} cases` : `${f.cases} published ${cls} figures (${f.sources.join(', ')})`;
  const scaled = cls === gpu ? '' : `; ${gpu} scaled from ${cls} by its datasheet peak, not measured on it`;
  return `fitted on ${what} (${f.models} models), held-out error ≤ ${pct(f.heldOutMaxAbs)}% (in-sample ≤ ${pct(f.inSampleMaxAbs)}%)${scaled}`;
}

export function trainingThroughput(x: ThroughputInput): Throughput {
  const layers = x.layers ?? shapeFromName(`${x.params / 1e9}B`)?.layers ?? 32;
  const hidden = x.hidden ?? Math.round(Math.sqrt(x.params / (12 * layers)));
  const tokens = Math.max(1, x.tokensPerMicroBatch);
  const c = {
    params: x.params,
    layers,
    hidden,
    linearModules: LLAMA_LINEAR_MODULES,
    method: x.method,
    gradientCheckpointing: x.gradientCheckpointing,
    seqLen: x.seqLen ?? tokens,
    tokensPerMicroBatch: tokens,
    peakTflops: PEAK_DENSE_16BIT_TFLOPS[x.gpu] * precisionFactor(x.precision),
    memoryTBps: MEMORY_TBPS[x.gpu],
  };
  const cls = fitClassOf(x.gpu);
  const flops = flopsPerToken(c);
  // With no fit at all (no data file), the old first-principles figure: FLOPs at 35% of the peak.
  const perGpu = cls ? predictTokensPerSecond(c, COEFFICIENTS, cls) : (c.peakTflops * 1e12 * 0.35) / flops;
  const gpus = Math.max(1, x.gpuCount);
  const tokensPerSecond = perGpu * (gpus === 1 ? 1 : gpus * MULTI_GPU_EFFICIENCY);
  const band = (cls && THROUGHPUT_FIT.gpus[cls]?.heldOutMaxAbs) || 0.5;
  const notes = [
    x.precision === 'fp32' ? 'fp32 at ¼ of the 16-bit rate (assumed)' : '',
    gpus > 1 ? `${gpus} GPUs at 90% each (assumed)` : '',
    x.layers === undefined ? `${layers} layers assumed for ${(x.params / 1e9).toFixed(1)}B` : '',
  ].filter(Boolean);
  const basis = `${GPU_CATALOG[x.gpu].id}, ${x.method}, ${tokens} tokens per micro-batch: ${throughputBasis(x.gpu)}${notes.length ? `; ${notes.join('; ')}` : ''}`;
  return { tokensPerSecond, band, low: tokensPerSecond * (1 - band), high: tokensPerSecond * (1 + band), flopsPerToken: flops, basis };
}
