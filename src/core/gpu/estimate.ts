// Peak training memory of one GPU, part by part. Each formula names its source.
import type { ModelShape } from './models';
import type { GpuInfo } from './catalog';
import { gpusWithAtLeast } from './catalog';
import type { Sharding, ZeroStage } from './sharding';
import { SINGLE_GPU, fullModelStates, largestLayerParams, shardCount, worldSize } from './sharding';

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
  /** The launcher's full picture (engine, offload, nodes); when given it wins over gpuCount and zeroStage. */
  readonly sharding?: Sharding;
  /** Bytes per LoRA adapter parameter, and so per gradient: 4 as peft makes them (the runner), 2 where a trainer casts them to bf16. */
  readonly adapterBytes?: 2 | 4;
  /** The loss from log-probabilities computed in tiles, never the full logits (TRL's SFTTrainer); else transformers' ForCausalLMLoss. */
  readonly fusedLmHead?: boolean;
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
  /** Host memory per node that the offloaded states and the loading of the model need (DeepSpeed's "per CPU"). */
  readonly cpuGib?: number;
}

const GIB = 1024 ** 3;
const num = (x: number): string => String(Number(x.toPrecision(3)));
const pctOf = (x: number): string => `${num(x * 100)}%`;

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

/** The sharding an input describes: its own, or DeepSpeed at zeroStage over gpuCount GPUs of one node. */
export function shardingOf(x: EstimateInput): Sharding {
  if (x.sharding) return x.sharding;
  const stage = Math.min(3, Math.max(0, Math.round(x.zeroStage))) as ZeroStage;
  return { ...SINGLE_GPU, engine: stage > 0 ? 'deepspeed' : 'ddp', stage, gpusPerNode: Math.max(1, x.gpuCount), source: `ZeRO-${stage}` };
}

/**
 * The estimate's calibrated coefficients: the bytes per token a decoder layer keeps for backward and the caching
 * allocator's overhead. Counted from first principles where possible (see estimateMemory), then calibrated on the
 * measured cases; vramFit.ts is the procedure that fits them and the source of their held-out error.
 */
export interface VramCoefficients {
  /** Bytes per token per unit of the MLP's intermediate width (gate, up, activation, product: four bf16 tensors). */
  readonly mlpBytesPerIntermediate: number;
  /** Bytes per token per unit of hidden width for attention and the RMSNorms (QLoRA's too: its residual stream is bf16). */
  readonly attentionBytesPerHidden: number;
  /** The allocator's cache as a fraction of activations and logits, with and without checkpointing. */
  readonly cacheCheckpointed: number;
  readonly cacheUncheckpointed: number;
  /** Block rounding as a fraction of the long-lived tensors (weights, gradients, optimizer states). */
  readonly cacheLongLived: number;
}

/**
 * The coefficients the estimator ships, calibrated on the H200 cases of bench/gpu/vram-nvidia-h200-2026-11-26.json. Only
 * the cases of today's runner hold them to account (its QLoRA cases ran the fp32 upcast: bench/gpu/vramCheck.ts), and
 * the benchmark's TRL SFT case checks the QLoRA path held out (bench/gpu/anchorHeldOut.ts).
 */
export const VRAM_COEFFICIENTS: VramCoefficients = {
  mlpBytesPerIntermediate: 8,
  attentionBytesPerHidden: 32,
  cacheCheckpointed: 0.2,
  cacheUncheckpointed: 0.05,
  cacheLongLived: 0.05,
};

export function estimateMemory(x: EstimateInput, k: VramCoefficients = VRAM_COEFFICIENTS): Estimate {
  const m = x.model;
  const parts: EstimatePart[] = [];
  const s = shardingOf(x);
  const shard = (stageNeeded: number): number => (s.stage >= stageNeeded ? shardCount(s) : 1);
  // A full fine-tune under ZeRO or FSDP keeps what DeepSpeed's estimators count (sharding.ts); DDP and adapters
  // keep the plain Trainer's accounting below.
  const zeroFull = x.method === 'full' && (s.engine === 'deepspeed' || (s.engine === 'fsdp' && s.stage > 0));
  let cpuGib: number | undefined;

  const trainable = x.method === 'full' ? m.params : loraParams(m, x.loraR, x.loraTargets);
  if (zeroFull) {
    const states = fullModelStates(m.params, largestLayerParams(m, s.engine), s, optimizerBytes(x.optimizer, 4), x.weightBytes);
    for (const p of states.parts) parts.push({ name: p.name, gib: p.bytes / GIB, source: `${p.source} (DeepSpeed's estimator, ${s.source})` });
    cpuGib = states.cpuBytes / GIB;
  } else {
    pushPlainStates(x, s, shard, trainable, parts);
  }

  // Activations a Llama-style decoder layer keeps for backward, per token, in bytes. The MLP keeps its gate and
  // up projections, the activation and their product: four bf16 tensors of the intermediate width, 8·i. The
  // attention block and the two RMSNorms keep about 32·h in bf16 (norm inputs upcast to fp32, q/k/v after RoPE,
  // SDPA's output and log-sum-exp). QLoRA's layer is the same: the runner keeps the embeddings and norms in the
  // dtype they were loaded in (python-runner/remote_finetune/quantized_base.py), so its residual stream is bf16
  // like LoRA's. Korthikanti et al. 2022 (eq. 1) give 34·h for a GPT layer with a 4h GELU MLP; the coefficients
  // here are that count for the Llama layer, fitted to the H200 measurements (vramFit.ts). Eager attention adds the
  // 5·a·s score term of the same equation; SDPA and FlashAttention keep none.
  const tokens = x.seqLen * x.batch;
  const perTokenLayer =
    k.mlpBytesPerIntermediate * m.intermediate + k.attentionBytesPerHidden * m.hidden + (x.attention === 'eager' ? 5 * m.heads * x.seqLen : 0);
  // With checkpointing transformers keeps each decoder layer's input (the bf16 residual stream, 2 B) and recomputes
  // one layer at a time in backward.
  const act = x.gradientCheckpointing ? tokens * (m.layers * 2 * m.hidden + perTokenLayer) : tokens * m.layers * perTokenLayer;
  // Everything so far lives for the whole run (weights, adapters, gradients, optimizer state).
  const longLived = parts.reduce((sum, p) => sum + p.gib, 0);
  // TRL's SFTTrainer (1.x: trl/trainer/utils.py add_fused_lm_head) projects through the head in tiles of 4,096
  // tokens and keeps per-token log-probabilities only: no term that grows with the vocabulary.
  const logits = x.fusedLmHead ? 0 : (tokens * m.vocab * 12) / GIB;
  parts.push({
    name: `activations (batch ${x.batch} × seq ${x.seqLen}${x.gradientCheckpointing ? ', checkpointed' : ''})`,
    gib: act / GIB,
    source: `Llama decoder layer: ${num(k.mlpBytesPerIntermediate)}·i + ${num(k.attentionBytesPerHidden)}·h bytes per token; checkpointing keeps each layer input`,
  });
  // The loss: the bf16 logits (2 B), their fp32 upcast (4), log-softmax in fp32 (4) and the bf16 gradient (2)
  // back through the head: 12 B per token per vocabulary entry (transformers' ForCausalLMLoss upcasts to fp32).
  parts.push({
    name: x.fusedLmHead ? 'loss from tiled log-probabilities' : 'logits, their fp32 loss and gradient',
    gib: logits,
    source: x.fusedLmHead
      ? "TRL's fused LM head: the logits are never materialized"
      : "transformers' ForCausalLMLoss: logits.float(), cross-entropy in fp32; 12 B per token per vocab entry",
  });
  // The caching allocator's reserved peak exceeds the peak of live tensors (reserved/allocated 1.03-1.28 in the
  // H200 measurements). Its cache grows with the churn of short-lived tensors (activations, logits), most with
  // checkpointing, whose recomputation allocates and frees one layer's activations at a time: 20% of those, 5%
  // without checkpointing; block rounding adds about 5% of the long-lived ones (weights, gradients, optimizer).
  const shortLived = act / GIB + logits;
  parts.push({
    name: 'allocator cache and fragmentation',
    gib: shortLived * (x.gradientCheckpointing ? k.cacheCheckpointed : k.cacheUncheckpointed) + longLived * k.cacheLongLived,
    source: `torch caching allocator, fitted to the H200 measurements: ${pctOf(k.cacheCheckpointed)} of activations and logits with checkpointing (${pctOf(k.cacheUncheckpointed)} without) + ${pctOf(k.cacheLongLived)} of the rest`,
  });
  parts.push({ name: CUDA_CONTEXT_PART, gib: CUDA_CONTEXT_GIB, source: 'measured on an H200: nvidia-smi per-process memory less torch reserved' });
  const totalGib = parts.reduce((sum, p) => sum + p.gib, 0);
  return { totalGib, parts, trainableParams: trainable, ...(cpuGib !== undefined ? { cpuGib } : {}) };
}

/** Weights, adapters, gradients and optimizer states outside ZeRO's full fine-tune: DDP, one GPU, or adapters under any sharding. */
function pushPlainStates(x: EstimateInput, s: Sharding, shard: (stage: number) => number, trainable: number, parts: EstimatePart[]): void {
  const m = x.model;
  const qlora = x.method === 'qlora';
  // Weights. QLoRA stores NF4 at 4 bits plus one fp32 absmax per 64-weight block (0.5 bit), or with double
  // quantization 8-bit constants per 64 plus fp32 per 256 of those (0.127 bit) (Dettmers et al. 2023, QLoRA §3).
  // Embeddings and the output head are not quantized and stay in the compute dtype they were loaded in (2 B):
  // the runner freezes the 4-bit base without casting it (python-runner/remote_finetune/quantized_base.py), as
  // TRL 1.x does, where peft's prepare_model_for_kbit_training would make them fp32.
  const embed = embeddingParams(m);
  let weightBytes: number;
  if (qlora) {
    const bits = 4 + (x.doubleQuant ? 0.127 : 0.5);
    weightBytes = (m.params - embed) * (bits / 8) + embed * 2;
  } else {
    weightBytes = m.params * x.weightBytes;
  }
  // Offloaded ZeRO-3 parameters come to the GPU one layer at a time.
  const paramsAway = s.stage === 3 && s.offloadParams;
  const perParam = weightBytes / m.params;
  parts.push({
    name: qlora ? 'weights (4-bit; embeddings and head 16-bit)' : `weights (${x.weightBytes === 4 ? 'fp32' : '16-bit'})`,
    gib: (paramsAway ? largestLayerParams(m, s.engine) * perParam : weightBytes / shard(3)) / GIB,
    source: `${qlora ? 'QLoRA §3: 4 bits + quantization constants; the rest in its loaded 16-bit dtype (quantized_base.py)' : `${x.weightBytes} bytes/param`}${paramsAway ? '; offloaded, the largest layer gathered' : shard(3) > 1 ? `, sharded over ${shard(3)} GPUs` : ''}`,
  });

  // peft keeps adapter weights in fp32 (autocast_adapter_dtype), and the runner leaves them so.
  const adapterBytes = x.adapterBytes ?? 4;
  if (x.method !== 'full') {
    parts.push({
      name: `LoRA adapters (r=${x.loraR})`,
      gib: (trainable * adapterBytes) / GIB,
      source: `Hu et al. 2021: r·(d_in+d_out) per adapted layer, ${adapterBytes === 4 ? 'fp32' : 'bf16'}`,
    });
  }
  // Gradients and optimizer states exist for trainable parameters only, in the parameters' dtype. A full
  // fine-tune under a plain Trainer (DDP) trains the bf16 weights it loaded: no master copy. ZeRO's optimizer
  // offload moves the adapters' gradients and states to the CPU with the rest.
  const stateBytes = x.method === 'full' ? x.weightBytes : adapterBytes;
  const gradBytes = x.method === 'full' ? x.weightBytes : adapterBytes;
  const away = s.engine !== 'ddp' && s.offloadOptimizer ? 0 : 1;
  parts.push({
    name: 'gradients',
    gib: (away * (trainable * gradBytes)) / shard(2) / GIB,
    source: `${x.method === 'full' ? `${gradBytes} B/param, the weights' dtype` : `adapter gradients, ${gradBytes} B/param`}${away ? '' : '; offloaded to the CPU'}`,
  });
  parts.push({
    name: `optimizer (${x.optimizer})`,
    gib: (away * (trainable * optimizerBytes(x.optimizer, stateBytes))) / shard(1) / GIB,
    source: `AdamW: two moments in the parameters' dtype; 8-bit: 2 B/param${away ? '' : '; offloaded to the CPU'}`,
  });
}

export interface FitAdvice {
  readonly title: string;
  readonly totalGib: number;
  readonly change: 'gradient_checkpointing' | 'batch' | 'qlora' | 'gpu' | 'sharding' | 'gpus';
  readonly batch?: number;
  readonly accumulation?: number;
  readonly gpu?: GpuInfo;
  /** change 'sharding' and 'gpus': the launcher settings that make it fit. */
  readonly sharding?: Sharding;
  /** Host memory per node the proposal needs (offload keeps the optimizer there). */
  readonly cpuGib?: number;
}

/** USD per GPU-hour of this GPU in a machine of `perNode` of them, or undefined where none is sold (a provider's catalog). */
export type GpuPrice = (gpu: GpuInfo, perNode: number) => number | undefined;

/** Without a provider: the catalog's indicative list price, any count. */
const listPrice: GpuPrice = (gpu) => gpu.pricePerHourUsd;

// A machine of more GPUs than this is rare to rent; 8 is the usual largest node (p4d/p5, a2-highgpu-8g, 8× H100).
const MAX_GPUS_PER_NODE = 8;

/**
 * Changes that make the run fit, cheapest first: checkpointing, a smaller batch with more accumulation, sharding the
 * GPUs the run already has (ZeRO-3, then offload to the CPU, which costs speed but no money), QLoRA (a different
 * method), then more GPUs or a larger GPU, whichever costs less per hour.
 */
export function fitAdvice(x: EstimateInput, gpu: GpuInfo, accumulation: number, price: GpuPrice = listPrice): FitAdvice[] {
  const out: FitAdvice[] = [];
  const fits = (e: Estimate): boolean => e.totalGib <= gpu.vramGb;
  const s = shardingOf(x);
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

  // ZeRO-3 cannot partition 4-bit weights (RFT803), so sharding is proposed for 16-bit runs only.
  const shardable = x.method !== 'qlora';
  const engine = s.engine === 'fsdp' ? 'fsdp' : 'deepspeed';
  const withSharding = (t: Sharding): Estimate => estimateMemory({ ...x, sharding: t, gpuCount: t.gpusPerNode, zeroStage: t.stage });
  const zero3 = (t: Partial<Sharding>): Sharding => ({ ...s, engine, stage: 3, withinNode: false, zeroInit: true, ...t });
  const world = worldSize(s);
  const name = engine === 'fsdp' ? 'FSDP FULL_SHARD' : 'ZeRO-3';
  if (shardable && world > 1 && (s.stage < 3 || s.withinNode) && !s.offloadOptimizer && !s.offloadParams) {
    const t = zero3({ offloadOptimizer: false, offloadParams: false, source: `${name} over ${world} GPUs` });
    const e = withSharding(t);
    if (fits(e)) out.push({ title: `${name} across the ${world} GPUs`, totalGib: e.totalGib, change: 'sharding', sharding: t });
  }
  if (shardable && !out.some((a) => a.change === 'sharding') && !(s.offloadOptimizer && s.offloadParams)) {
    // Offload trades speed (PCIe transfers, the optimizer step on the CPU) for GPU memory: the optimizer first, then
    // the parameters too, whichever is the least that fits.
    for (const offloadParams of s.offloadOptimizer ? [true] : [false, true]) {
      const t = zero3({ offloadOptimizer: true, offloadParams, source: `${name} over ${world} GPU${world > 1 ? 's' : ''}, offload` });
      const e = withSharding(t);
      if (!fits(e)) continue;
      const ram = e.cpuGib !== undefined ? `; needs ≈ ${Math.ceil(e.cpuGib)} GB of CPU memory per node` : '';
      const what = offloadParams ? 'the optimizer and the parameters' : 'the optimizer';
      out.push({
        title: `${name} with ${what} offloaded to the CPU (slower)${ram}`,
        totalGib: e.totalGib,
        change: 'sharding',
        sharding: t,
        ...(e.cpuGib !== undefined ? { cpuGib: e.cpuGib } : {}),
      });
      break;
    }
  }
  if (x.method !== 'qlora') {
    const q = s.stage === 3 ? { ...s, stage: 2 as const, offloadParams: false } : s;
    const e = estimateMemory({ ...x, method: 'qlora', doubleQuant: true, gradientCheckpointing: true, sharding: q, zeroStage: q.stage });
    if (fits(e)) out.push({ title: 'QLoRA (4-bit base weights) with gradient checkpointing', totalGib: e.totalGib, change: 'qlora' });
  }

  // Money: more GPUs of this kind sharded with ZeRO-3, or the same count of a larger kind, by price per hour.
  const paid: Array<FitAdvice & { readonly perHour: number }> = [];
  if (shardable) {
    for (let n = s.gpusPerNode * 2; n <= MAX_GPUS_PER_NODE; n *= 2) {
      const t = zero3({ gpusPerNode: n, source: `${name} over ${n * s.nodes} GPUs` });
      const e = withSharding(t);
      if (!fits(e)) continue;
      const each = price(gpu, n);
      // The provider sells no machine of n of this GPU: no offer would match.
      if (each === undefined) continue;
      const perHour = n * s.nodes * each;
      const nodes = s.nodes > 1 ? ` on each of ${s.nodes} nodes` : '';
      paid.push({ title: `${n} × ${gpu.id}${nodes} with ${name} (~$${perHour.toFixed(2)}/h)`, totalGib: e.totalGib, change: 'gpus', sharding: t, perHour });
      break;
    }
  }
  const need = estimateMemory(x).totalGib;
  const bigger = gpusWithAtLeast(need)
    .filter((g) => g.vramGb > gpu.vramGb)
    .map((g) => ({ g, each: price(g, s.gpusPerNode) }))
    .filter((c): c is { g: GpuInfo; each: number } => c.each !== undefined)
    .sort((a, b) => a.each - b.each)[0];
  if (bigger)
    paid.push({
      title: `a larger GPU: ${bigger.g.id} (${bigger.g.vramGb} GB, ~$${bigger.each.toFixed(2)}/h${world > 1 ? ' each' : ''})`,
      totalGib: need,
      change: 'gpu',
      gpu: bigger.g,
      perHour: bigger.each * world,
    });
  paid.sort((a, b) => a.perHour - b.perHour);
  for (const { perHour: _perHour, ...a } of paid) out.push(a);
  return out;
}
