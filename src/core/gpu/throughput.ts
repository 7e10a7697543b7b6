// Training throughput (tokens per second) of a GPU class, for the run-length estimate behind the cost shown
// before launch. From first principles, with the assumptions written down:
//  - a transformer costs about 2·N FLOPs per token forward and 4·N backward (Kaplan et al. 2020, §2.1), so full
//    fine-tuning is 6·N per token; LoRA and QLoRA leave the base weights without gradients, so their backward is
//    the activation gradients only (2·N): 4·N; gradient checkpointing runs the forward twice (+2·N);
//  - a GPU sustains a fraction of its dense 16-bit tensor peak (model-FLOPs utilisation): 35% is the middle of
//    what fine-tuning reaches with HF Trainer (attention, optimizer and data loading cost the rest);
//  - QLoRA dequantises every 4-bit weight on each use: about 0.7× LoRA's speed (the QLoRA paper reports
//    training slower than 16-bit LoRA; 0.7 is the usual measured ratio);
//  - fp32 runs at about a quarter of the 16-bit tensor rate (TF32 on Ampere and newer is half, plain FP32 an
//    eighth on older parts);
//  - several GPUs (data parallel) add 90% each: gradient all-reduce is not free.
// Peaks are NVIDIA's datasheet figures for dense FP16/BF16 tensor math (without sparsity). Attention's own
// FLOPs are left out: below 4k tokens they are a few percent of 6·N for these model sizes.
import type { GpuId } from './catalog';

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

export const MFU = 0.35;
export const QLORA_FACTOR = 0.7;
export const FP32_FACTOR = 0.25;
export const MULTI_GPU_EFFICIENCY = 0.9;

export interface ThroughputInput {
  readonly gpu: GpuId;
  readonly gpuCount: number;
  /** Parameters of the base model. */
  readonly params: number;
  readonly method: 'qlora' | 'lora-bf16' | 'full';
  readonly gradientCheckpointing: boolean;
  readonly precision: 'bf16' | 'fp16' | 'fp32';
}

export interface Throughput {
  /** All GPUs together. */
  readonly tokensPerSecond: number;
  readonly flopsPerToken: number;
  readonly basis: string;
}

export function trainingThroughput(x: ThroughputInput): Throughput {
  const n = x.params;
  const flopsPerToken = (x.method === 'full' ? 6 : 4) * n + (x.gradientCheckpointing ? 2 * n : 0);
  const peak = PEAK_DENSE_16BIT_TFLOPS[x.gpu] * 1e12 * (x.precision === 'fp32' ? FP32_FACTOR : 1);
  const perGpu = (peak * MFU * (x.method === 'qlora' ? QLORA_FACTOR : 1)) / flopsPerToken;
  const gpus = Math.max(1, x.gpuCount);
  const tokensPerSecond = perGpu * (gpus === 1 ? 1 : gpus * MULTI_GPU_EFFICIENCY);
  const basis = `${(flopsPerToken / n).toFixed(0)}·N FLOPs/token at ${Math.round(MFU * 100)}% of ${PEAK_DENSE_16BIT_TFLOPS[x.gpu]} TFLOPS${x.method === 'qlora' ? ' ×0.7 (4-bit)' : ''}${x.precision === 'fp32' ? ' ×¼ (fp32)' : ''}${gpus > 1 ? ` × ${gpus} GPUs at 90%` : ''}`;
  return { tokensPerSecond, flopsPerToken, basis };
}
