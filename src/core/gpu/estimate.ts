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

function optimizerBytes(opt: string): number {
  // AdamW keeps two fp32 moments (8 B/param); bitsandbytes 8-bit optimizers keep two 8-bit moments
  // (2 B/param, Dettmers et al. 2022 "8-bit Optimizers via Block-wise Quantization"); paged variants
  // hold the same on the GPU and page to CPU only under pressure. Adafactor's factored moments are ~4 B.
  if (/8bit/.test(opt)) return 2;
  if (/adafactor/.test(opt)) return 4;
  if (/^sgd/.test(opt)) return 4;
  return 8;
}

export function estimateMemory(x: EstimateInput): Estimate {
  const m = x.model;
  const parts: EstimatePart[] = [];
  const shard = (stageNeeded: number): number => (x.zeroStage >= stageNeeded ? Math.max(1, x.gpuCount) : 1);

  // Weights. QLoRA stores NF4 at 4 bits plus one fp32 absmax per 64-weight block (0.5 bit), or with
  // double quantization 8-bit constants per 64 plus fp32 per 256 of those (0.127 bit) (Dettmers et al.
  // 2023, QLoRA §3). Embeddings and the output head stay 16-bit.
  const headParams = m.vocab * m.hidden * 2;
  let weightBytes: number;
  if (x.method === 'qlora') {
    const bits = 4 + (x.doubleQuant ? 0.127 : 0.5);
    weightBytes = (m.params - headParams) * (bits / 8) + headParams * 2;
  } else {
    weightBytes = m.params * x.weightBytes;
  }
  parts.push({
    name: x.method === 'qlora' ? 'weights (4-bit)' : `weights (${x.weightBytes === 4 ? 'fp32' : '16-bit'})`,
    gib: weightBytes / shard(3) / GIB,
    source: x.method === 'qlora' ? 'QLoRA §3: 4 bits + quantization constants; head/embeddings 16-bit' : `${x.weightBytes} bytes/param`,
  });

  const trainable = x.method === 'full' ? m.params : loraParams(m, x.loraR, x.loraTargets);
  if (x.method !== 'full') {
    // peft keeps adapter weights in fp32 (autocast_adapter_dtype).
    parts.push({ name: `LoRA adapters (r=${x.loraR})`, gib: (trainable * 4) / GIB, source: 'Hu et al. 2021: r·(d_in+d_out) per adapted layer, fp32' });
  }
  // Gradients and optimizer states exist for trainable parameters only. Full fine-tuning in mixed
  // precision also keeps an fp32 master copy: 16 B/param with AdamW (ZeRO paper, Rajbhandari et al. 2020, §3.1).
  const gradBytes = x.method === 'full' ? 2 : 4;
  parts.push({
    name: 'gradients',
    gib: (trainable * gradBytes) / shard(2) / GIB,
    source: x.method === 'full' ? 'ZeRO §3.1: 2 B/param (16-bit)' : 'fp32 adapter gradients, 4 B/param',
  });
  const master = x.method === 'full' && x.weightBytes === 2 ? 4 : 0;
  parts.push({
    name: `optimizer (${x.optimizer})`,
    gib: (trainable * (optimizerBytes(x.optimizer) + master)) / shard(1) / GIB,
    source: 'AdamW 8 B/param, 8-bit 2 B/param (Dettmers et al. 2022); + fp32 master 4 B for full (ZeRO §3.1)',
  });

  // Activations per layer, 16-bit: s·b·h·(34 + 5·a·s/h) bytes (Korthikanti et al. 2022, "Reducing
  // Activation Recomputation in Large Transformer Models", eq. 1); FlashAttention/SDPA drop the
  // 5·a·s/h score term. With full activation checkpointing only each layer's input (2·s·b·h) is kept,
  // plus one layer recomputed at a time.
  const sbh = x.seqLen * x.batch * m.hidden;
  const perLayer = sbh * (34 + (x.attention === 'eager' ? (5 * m.heads * x.seqLen) / m.hidden : 0));
  const act = x.gradientCheckpointing ? 2 * sbh * m.layers + perLayer : perLayer * m.layers;
  parts.push({
    name: `activations (batch ${x.batch} × seq ${x.seqLen}${x.gradientCheckpointing ? ', checkpointed' : ''})`,
    gib: act / GIB,
    source: 'Korthikanti et al. 2022 eq. 1; checkpointing keeps 2·s·b·h per layer',
  });
  // The loss upcasts logits to fp32 and keeps their gradient: 2 × b·s·vocab × 4 bytes.
  parts.push({
    name: 'logits (fp32) and their gradient',
    gib: (2 * x.batch * x.seqLen * m.vocab * 4) / GIB,
    source: 'transformers upcasts logits to fp32 for the cross-entropy loss',
  });
  // CUDA context, cuBLAS/cuDNN workspaces and allocator fragmentation: ~0.8 GiB measured under
  // PyTorch 2.x on A100/H100, plus ~5% of the rest for the caching allocator's fragmentation.
  const subtotal = parts.reduce((s, p) => s + p.gib, 0);
  parts.push({
    name: 'CUDA context, workspaces, fragmentation',
    gib: 0.8 + 0.05 * subtotal,
    source: 'PyTorch CUDA context ~0.8 GiB + 5% allocator fragmentation',
  });
  const totalGib = parts.reduce((s, p) => s + p.gib, 0);
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
  for (let b = Math.floor(x.batch / 2); b >= 1; b = Math.floor(b / 2)) {
    const e = estimateMemory({ ...x, batch: b, gradientCheckpointing: x.gradientCheckpointing || out.length > 0 ? x.gradientCheckpointing : false });
    if (fits(e)) {
      const acc = Math.max(1, Math.round((accumulation * x.batch) / b));
      out.push({
        title: `batch ${b} with gradient accumulation ${acc} (same effective batch)`,
        totalGib: e.totalGib,
        change: 'batch',
        batch: b,
        accumulation: acc,
      });
      break;
    }
    if (b === 1) break;
  }
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
