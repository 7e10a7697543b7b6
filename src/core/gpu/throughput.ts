// Training throughput (tokens per second) of a GPU class, for the run length and cost shown before launch.
// The model (throughputModel.ts) is compute at a fitted MFU ceiling plus a fitted per-kernel overhead that
// dominates small models and small batches; its coefficients and its errors come from the measured cases in
// bench/gpu/vram-*.json, fitted by scripts/gpu-accuracy.ts into estimateAccuracy.json (a unit test fits again
// and fails when the committed file is stale). Every figure carries its band (the largest leave-one-model-out
// error) and its basis. Published tokens/s figures (LLaMA-Factory's, Unsloth's) are not used: the ones found
// could not be checked against their source with their hardware, or give only ratios to another tool.
// Assumptions not measured anywhere, said in the basis when they apply:
//  - other GPUs: the compute term scales with NVIDIA's datasheet dense FP16/BF16 tensor peak (without sparsity);
//    the overhead term is host-side kernel launches and is kept as measured;
//  - fp32 runs at about a quarter of the 16-bit tensor rate (TF32 on Ampere and newer is half, plain FP32 an
//    eighth on older parts);
//  - several GPUs (data parallel) add 90% each: gradient all-reduce is not free.
import type { GpuId } from './catalog';
import { GPU_CATALOG } from './catalog';
import { shapeFromName } from './models';
import type { ThroughputCoefficients, TrainMethod } from './throughputModel';
import { flopsPerToken, predictTokensPerSecond } from './throughputModel';
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

export const FP32_FACTOR = 0.25;
export const MULTI_GPU_EFFICIENCY = 0.9;

export function precisionFactor(p: 'bf16' | 'fp16' | 'fp32'): number {
  return p === 'fp32' ? FP32_FACTOR : 1;
}

/** The committed fit (estimateAccuracy.json). */
export const THROUGHPUT_FIT: {
  readonly coefficients: ThroughputCoefficients;
  readonly gpus: readonly string[];
  readonly cases: number;
  readonly models: number;
  readonly inSampleMaxAbs: number;
  readonly heldOutMaxAbs: number;
  readonly sources: readonly string[];
} = { ...accuracy.throughput, sources: accuracy.sources };

export interface ThroughputInput {
  readonly gpu: GpuId;
  readonly gpuCount: number;
  /** Parameters of the base model. */
  readonly params: number;
  /** Decoder layers; when unknown, a Llama-like shape of this size is assumed. */
  readonly layers?: number;
  readonly method: TrainMethod;
  readonly gradientCheckpointing: boolean;
  readonly precision: 'bf16' | 'fp16' | 'fp32';
  /** Per-device batch × sequence length: the tokens of one forward/backward on one GPU. */
  readonly tokensPerMicroBatch: number;
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

/** "fitted on 10 H200 cases (3 models), held-out error ≤ 20% (in-sample ≤ 15%)". */
export function throughputBasis(gpu?: GpuId): string {
  const f = THROUGHPUT_FIT;
  const measuredOn = f.gpus.join(', ');
  const scaled = gpu && !f.gpus.includes(gpu) ? `; ${gpu} scaled by its datasheet peak, not measured on it` : '';
  return `fitted on ${f.cases} ${measuredOn} cases (${f.models} models), held-out error ≤ ${pct(f.heldOutMaxAbs)}% (in-sample ≤ ${pct(f.inSampleMaxAbs)}%)${scaled}`;
}

export function trainingThroughput(x: ThroughputInput): Throughput {
  const layers = x.layers ?? shapeFromName(`${x.params / 1e9}B`)?.layers ?? 32;
  const perGpu = predictTokensPerSecond(
    {
      params: x.params,
      layers,
      method: x.method,
      gradientCheckpointing: x.gradientCheckpointing,
      tokensPerMicroBatch: Math.max(1, x.tokensPerMicroBatch),
      peakTflops: PEAK_DENSE_16BIT_TFLOPS[x.gpu] * precisionFactor(x.precision),
    },
    THROUGHPUT_FIT.coefficients,
  );
  const gpus = Math.max(1, x.gpuCount);
  const tokensPerSecond = perGpu * (gpus === 1 ? 1 : gpus * MULTI_GPU_EFFICIENCY);
  const band = THROUGHPUT_FIT.heldOutMaxAbs;
  const notes = [
    x.precision === 'fp32' ? 'fp32 at ¼ of the 16-bit rate (assumed)' : '',
    gpus > 1 ? `${gpus} GPUs at 90% each (assumed)` : '',
    x.layers === undefined ? `${layers} layers assumed for ${(x.params / 1e9).toFixed(1)}B` : '',
  ].filter(Boolean);
  const basis = `${GPU_CATALOG[x.gpu].id}, ${x.method}, ${x.tokensPerMicroBatch} tokens per micro-batch: ${throughputBasis(x.gpu)}${notes.length ? `; ${notes.join('; ')}` : ''}`;
  return {
    tokensPerSecond,
    band,
    low: tokensPerSecond * (1 - band),
    high: tokensPerSecond * (1 + band),
    flopsPerToken: flopsPerToken({ params: x.params, method: x.method, gradientCheckpointing: x.gradientCheckpointing }),
    basis,
  };
}
