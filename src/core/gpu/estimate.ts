// Peak training memory of one GPU, part by part. Each formula names its source.
import type { ModelShape } from './models';
import type { GpuInfo } from './catalog';
import { gpusWithAtLeast } from './catalog';

export type Method = 'qlora' | 'lora-bf16' | 'full';

export interface EstimateInput {
  readonly model: ModelShape;
  readonly method: Method;
  readonly doubleQuant: boolean;
  /** Bytes per weight of the base model when not quantized (2 for bf16/fp16, 4 for fp32). */
  readonly weightBytes: number;
  readonly loraR: number;
  /** 'all-linear' or module names. */
  readonly loraTargets: 'all-linear' | readonly string[];
  readonly batch: number;
  readonly seqLen: number;
  readonly gradientCheckpointing: boolean;
  readonly optimizer: string;
  /** flash_attention_2/sdpa avoid the s² attention-score term; eager keeps it. */
  readonly attention: 'flash' | 'eager';
  /** GPUs sharing the work and the ZeRO stage (0 = plain DDP: every GPU holds everything). */
  readonly gpuCount: number;
  readonly zeroStage: number;
}

export interface EstimatePart {
  readonly name: string;
  readonly gib: number;
  readonly source: string;
}

export interface Estimate {
  readonly totalGib: number;
  readonly parts: readonly EstimatePart[];
  readonly trainableParams: number;
}

const GIB = 1024 ** 3;

export function loraParams(m: ModelShape, r: number, targets: 'all-linear' | readonly string[]): number {
  // A LoRA adapter on a d_in × d_out linear layer adds r·(d_in + d_out) parameters (Hu et al. 2021, §4).
  const h = m.hidden;
  const dims: Record<string, number> = {
    q_proj: h + h,
    k_proj: h + m.kvDim,
    v_proj: h + m.kvDim,
    o_proj: h + h,
    gate_proj: h + m.intermediate,
    up_proj: h + m.intermediate,
    down_proj: m.intermediate + h,
  };
  const names = targets === 'all-linear' ? Object.keys(dims) : targets;
  let perLayer = 0;
  for (const n of names) perLayer += dims[n] ?? 0;
  if (perLayer === 0) perLayer = dims.q_proj! + dims.v_proj!; // unknown names: peft's default for Llama-style models
  return r * perLayer * m.layers;
}

function optimizerBytes(opt: string, stateBytes: number): number {
  // AdamW keeps two moments the dtype of their parameter (torch.optim.AdamW: zeros_like(param)): 8 B/param for
  // fp32 parameters (LoRA adapters, fp32 runs, DeepSpeed's fp32 master copy), 4 B for a model loaded in bf16.
  // bitsandbytes 8-bit optimizers keep two 8-bit moments (2 B/param, Dettmers et al. 2022 "8-bit Optimizers via
  // Block-wise Quantization"); paged variants hold the same on the GPU and page to CPU only under pressure.
  // Adafactor's factored moments are ~4 B.
  if (/8bit/.test(opt)) return 2;
  if (/adafactor/.test(opt)) return 4;
  if (/^sgd/.test(opt)) return stateBytes;
  return 2 * stateBytes;
}

/** Parameters outside the decoder blocks: the embeddings and, when not tied to them, the output head. */
function embeddingParams(m: ModelShape): number {
  const block = 2 * m.hidden * m.hidden + 2 * m.hidden * m.kvDim + 3 * m.hidden * m.intermediate + 2 * m.hidden;
  return Math.max(m.vocab * m.hidden, m.params - m.layers * block);
}

// Measured on an NVIDIA H200 (bench/gpu/vram-nvidia-h200-2026-11-26.json: torch 2.11, transformers 5.17, peft
// 0.21, bitsandbytes 0.50): the training process's memory.used in nvidia-smi less torch's peak reserved memory
// (7229 − 6462 MiB for the same Llama-3.2-1B run). The CUDA context, cuBLAS workspaces and kernels live there,
// outside the caching allocator.
export const CUDA_CONTEXT_GIB = 0.75;
export const CUDA_CONTEXT_PART = 'CUDA context and kernels';

export function estimateMemory(x: EstimateInput): Estimate {
  const m = x.model;
  const parts: EstimatePart[] = [];
  const shard = (stageNeeded: number): number => (x.zeroStage >= stageNeeded ? Math.max(1, x.gpuCount) : 1);
  const qlora = x.method === 'qlora';

  // Weights. QLoRA stores NF4 at 4 bits plus one fp32 absmax per 64-weight block (0.5 bit), or with double
  // quantization 8-bit constants per 64 plus fp32 per 256 of those (0.127 bit) (Dettmers et al. 2023, QLoRA §3).
  // Embeddings and the output head are not quantized, and peft's prepare_model_for_kbit_training (which the
  // runner calls) casts every parameter that is not 4-bit to fp32: 4 B each.
  const embed = embeddingParams(m);
  let weightBytes: number;
  if (qlora) {
    const bits = 4 + (x.doubleQuant ? 0.127 : 0.5);
    weightBytes = (m.params - embed) * (bits / 8) + embed * 4;
  } else {
    weightBytes = m.params * x.weightBytes;
  }
  parts.push({
    name: qlora ? 'weights (4-bit; embeddings and head fp32)' : `weights (${x.weightBytes === 4 ? 'fp32' : '16-bit'})`,
    gib: weightBytes / shard(3) / GIB,
    source: qlora ? 'QLoRA §3: 4 bits + quantization constants; peft prepare_model_for_kbit_training: the rest fp32' : `${x.weightBytes} bytes/param`,
  });

  const trainable = x.method === 'full' ? m.params : loraParams(m, x.loraR, x.loraTargets);
  if (x.method !== 'full') {
    // peft keeps adapter weights in fp32 (autocast_adapter_dtype).
    parts.push({ name: `LoRA adapters (r=${x.loraR})`, gib: (trainable * 4) / GIB, source: 'Hu et al. 2021: r·(d_in+d_out) per adapted layer, fp32' });
  }
  // Gradients and optimizer states exist for trainable parameters only, in the parameters' dtype. A full
  // fine-tune under a plain Trainer trains the bf16 weights it loaded (no master copy); DeepSpeed ZeRO keeps an
  // fp32 master copy and fp32 moments: 16 B/param with AdamW (ZeRO paper, Rajbhandari et al. 2020, §3.1).
  const deepspeed = x.zeroStage > 0;
  const stateBytes = x.method === 'full' ? (deepspeed ? 4 : x.weightBytes) : 4;
  const gradBytes = x.method === 'full' ? x.weightBytes : 4;
  parts.push({
    name: 'gradients',
    gib: (trainable * gradBytes) / shard(2) / GIB,
    source: x.method === 'full' ? `${gradBytes} B/param, the weights' dtype` : 'fp32 adapter gradients, 4 B/param',
  });
  const master = x.method === 'full' && deepspeed && x.weightBytes === 2 ? 4 : 0;
  parts.push({
    name: `optimizer (${x.optimizer})`,
    gib: (trainable * (optimizerBytes(x.optimizer, stateBytes) + master)) / shard(1) / GIB,
    source:
      deepspeed && x.method === 'full'
        ? 'ZeRO §3.1: fp32 master 4 B + fp32 AdamW moments 8 B'
        : "AdamW: two moments in the parameters' dtype; 8-bit: 2 B/param",
  });

  // Activations a Llama-style decoder layer keeps for backward, per token, in bytes. The MLP keeps its gate and
  // up projections, the activation and their product: four bf16 tensors of the intermediate width, 8·i. The
  // attention block and the two RMSNorms keep about 32·h in bf16 (norm inputs upcast to fp32, q/k/v after RoPE,
  // SDPA's output and log-sum-exp). Under QLoRA the residual stream is fp32 (the embeddings are fp32 after
  // prepare_model_for_kbit_training and bf16 autocast covers only the matmuls), about 52·h. Korthikanti et al.
  // 2022 (eq. 1) give 34·h for a GPT layer with a 4h GELU MLP; the coefficients here are that count for the Llama
  // layer, fitted to the H200 measurements of Llama-3.2-1B and Mistral-7B without checkpointing (±10%). Eager
  // attention adds the 5·a·s score term of the same equation; SDPA and FlashAttention keep none.
  const tokens = x.seqLen * x.batch;
  const perTokenLayer = 8 * m.intermediate + (qlora ? 52 : 32) * m.hidden + (x.attention === 'eager' ? 5 * m.heads * x.seqLen : 0);
  // With checkpointing transformers keeps each decoder layer's input (its residual stream: 4 B in fp32 under
  // QLoRA, else 2) and recomputes one layer at a time in backward.
  const act = x.gradientCheckpointing ? tokens * (m.layers * (qlora ? 4 : 2) * m.hidden + perTokenLayer) : tokens * m.layers * perTokenLayer;
  // Everything so far lives for the whole run (weights, adapters, gradients, optimizer state).
  const longLived = parts.reduce((sum, p) => sum + p.gib, 0);
  const logits = (tokens * m.vocab * 12) / GIB;
  parts.push({
    name: `activations (batch ${x.batch} × seq ${x.seqLen}${x.gradientCheckpointing ? ', checkpointed' : ''})`,
    gib: act / GIB,
    source: 'Llama decoder layer: 8·i + 32·h bytes per token (52·h under QLoRA); checkpointing keeps each layer input',
  });
  // The loss: the bf16 logits (2 B), their fp32 upcast (4), log-softmax in fp32 (4) and the bf16 gradient (2)
  // back through the head: 12 B per token per vocabulary entry (transformers' ForCausalLMLoss upcasts to fp32).
  parts.push({
    name: 'logits, their fp32 loss and gradient',
    gib: logits,
    source: "transformers' ForCausalLMLoss: logits.float(), cross-entropy in fp32; 12 B per token per vocab entry",
  });
  // The caching allocator's reserved peak exceeds the peak of live tensors (reserved/allocated 1.03-1.28 in the
  // H200 measurements). Its cache grows with the churn of short-lived tensors (activations, logits), most with
  // checkpointing, whose recomputation allocates and frees one layer's activations at a time: 20% of those, 5%
  // without checkpointing; block rounding adds about 5% of the long-lived ones (weights, gradients, optimizer).
  const shortLived = act / GIB + logits;
  parts.push({
    name: 'allocator cache and fragmentation',
    gib: shortLived * (x.gradientCheckpointing ? 0.2 : 0.05) + longLived * 0.05,
    source: 'torch caching allocator, fitted to the H200 measurements: 20% of activations and logits with checkpointing (5% without) + 5% of the rest',
  });
  parts.push({ name: CUDA_CONTEXT_PART, gib: CUDA_CONTEXT_GIB, source: 'measured on an H200: nvidia-smi per-process memory less torch reserved' });
  const totalGib = parts.reduce((sum, p) => sum + p.gib, 0);
  return { totalGib, parts, trainableParams: trainable };
}

export interface FitAdvice {
  readonly title: string;
  readonly totalGib: number;
  readonly change: 'gradient_checkpointing' | 'batch' | 'qlora' | 'gpu';
  readonly batch?: number;
  readonly accumulation?: number;
  readonly gpu?: GpuInfo;
}

/** Changes that make the run fit, cheapest first: checkpointing, smaller batch with more accumulation, QLoRA, a larger GPU. */
export function fitAdvice(x: EstimateInput, gpu: GpuInfo, accumulation: number): FitAdvice[] {
  const out: FitAdvice[] = [];
  const fits = (e: Estimate): boolean => e.totalGib <= gpu.vramGb;
  if (!x.gradientCheckpointing) {
    const e = estimateMemory({ ...x, gradientCheckpointing: true });
    if (fits(e)) out.push({ title: 'turn on gradient checkpointing', totalGib: e.totalGib, change: 'gradient_checkpointing' });
  }
  // A smaller batch with more accumulation, with checkpointing as the user has it, else with it turned on too.
  const smaller = (gradientCheckpointing: boolean): FitAdvice | undefined => {
    for (let b = Math.floor(x.batch / 2); b >= 1; b = Math.floor(b / 2)) {
      const e = estimateMemory({ ...x, batch: b, gradientCheckpointing });
      if (!fits(e)) continue;
      const acc = Math.max(1, Math.round((accumulation * x.batch) / b));
      const gc = gradientCheckpointing && !x.gradientCheckpointing ? 'turn on gradient checkpointing and use ' : '';
      return {
        title: `${gc}batch ${b} with gradient accumulation ${acc} (same effective batch)`,
        totalGib: e.totalGib,
        change: 'batch',
        batch: b,
        accumulation: acc,
      };
    }
    return undefined;
  };
  const batchAdvice = smaller(x.gradientCheckpointing) ?? (x.gradientCheckpointing || out.length > 0 ? undefined : smaller(true));
  if (batchAdvice) out.push(batchAdvice);
  if (x.method !== 'qlora') {
    const e = estimateMemory({ ...x, method: 'qlora', doubleQuant: true, gradientCheckpointing: true });
    if (fits(e)) out.push({ title: 'QLoRA (4-bit base weights) with gradient checkpointing', totalGib: e.totalGib, change: 'qlora' });
  }
  const need = estimateMemory(x).totalGib;
  const bigger = gpusWithAtLeast(need).find((g) => g.vramGb > gpu.vramGb);
  if (bigger)
    out.push({
      title: `a larger GPU: ${bigger.id} (${bigger.vramGb} GB, ~$${bigger.pricePerHourUsd.toFixed(2)}/h)`,
      totalGib: need,
      change: 'gpu',
      gpu: bigger,
    });
  return out;
}
