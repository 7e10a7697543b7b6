// Which training state each GPU holds under DDP, DeepSpeed ZeRO-1/2/3 (with CPU/NVMe offload) and FSDP, and how
// many bytes that is. The byte counts of a full fine-tune in mixed precision are DeepSpeed's own estimators,
// ported term for term: estimate_zero2_model_states_mem_needs (deepspeed/runtime/zero/stage_1_and_2.py) and
// estimate_zero3_model_states_mem_needs (stage3.py), held equal to the installed package by
// test/unit/gpu/shardingOracle.test.ts.
import type { ModelShape } from './models';

export type Engine = 'ddp' | 'deepspeed' | 'fsdp';
export type ZeroStage = 0 | 1 | 2 | 3;

export interface Sharding {
  readonly engine: Engine;
  /** The ZeRO stage, or FSDP's equivalent: FULL_SHARD 3, SHARD_GRAD_OP 2, NO_SHARD 0. */
  readonly stage: ZeroStage;
  /** Optimizer states (and their fp32 gradients and master weights) live in CPU memory or on NVMe. */
  readonly offloadOptimizer: boolean;
  /** Parameters live in CPU memory or on NVMe between uses (ZeRO-3 / FSDP only). */
  readonly offloadParams: boolean;
  readonly gpusPerNode: number;
  readonly nodes: number;
  /** FSDP HYBRID_SHARD: shard inside each node and replicate across nodes. */
  readonly withinNode: boolean;
  /** deepspeed.zero.Init (zero3_init_flag): the model is built already partitioned, so no rank holds it whole in CPU memory. */
  readonly zeroInit: boolean;
  /** Where these settings were read, for the breakdown. */
  readonly source: string;
}

export const SINGLE_GPU: Sharding = {
  engine: 'ddp',
  stage: 0,
  offloadOptimizer: false,
  offloadParams: false,
  gpusPerNode: 1,
  nodes: 1,
  withinNode: false,
  zeroInit: false,
  source: 'one process',
};

export function worldSize(s: Sharding): number {
  return Math.max(1, s.gpusPerNode) * Math.max(1, s.nodes);
}

/** GPUs one copy of the sharded state is spread over. */
export function shardCount(s: Sharding): number {
  return s.withinNode ? Math.max(1, s.gpusPerNode) : worldSize(s);
}

/**
 * Parameters gathered whole on a GPU at once under ZeRO-3/FSDP. DeepSpeed's model_to_params takes the module with
 * the most parameters of its own (for a Llama that is the embedding or the untied head: vocab × hidden). FSDP gathers
 * a whole wrapped unit: with TRANSFORMER_BASED_WRAP (accelerate's default for transformers models) a decoder layer,
 * or the root unit that keeps the embeddings and head.
 */
export function largestLayerParams(m: ModelShape, engine: Engine): number {
  const layer = 2 * m.hidden * m.hidden + 2 * m.hidden * m.kvDim + 3 * m.hidden * m.intermediate + 2 * m.hidden;
  const embed = m.vocab * m.hidden;
  if (engine === 'fsdp') return Math.max(layer, Math.max(embed, m.params - m.layers * layer));
  return Math.max(embed, m.hidden * m.intermediate);
}

export interface StatePart {
  readonly name: string;
  readonly bytes: number;
  readonly source: string;
}

export interface ModelStates {
  /** Per GPU: weights, gradients and optimizer states (no activations). */
  readonly gpuBytes: number;
  /** Per node (DeepSpeed's "per CPU"): what the offloaded states and the loading of the model need in host memory. */
  readonly cpuBytes: number;
  readonly parts: readonly StatePart[];
}

// DeepSpeed's estimators pad host memory by this factor (their additional_buffer_factor default).
const BUFFER = 1.5;

/**
 * Model states of a full fine-tune per GPU and per node. `momentBytes` is the optimizer's state per parameter in
 * fp32 (8 for AdamW, DeepSpeed's assumption); `lowBytes` the training dtype (2 for bf16/fp16, 4 for fp32).
 * DeepSpeed's "18" per sharded parameter: at stages 1-2 a 16-bit gradient (2), its fp32 copy (4), the fp32 master
 * weight (4) and AdamW's moments (8); at stage 3 the 16-bit weight (2) takes the place of the 16-bit gradient, which
 * is reduced straight into the fp32 partition.
 */
export function fullModelStates(totalParams: number, largestLayer: number, s: Sharding, momentBytes = 8, lowBytes = 2): ModelStates {
  const P = totalParams;
  const n = shardCount(s);
  const perNode = Math.max(1, s.gpusPerNode);
  // Nodes the sharded state is spread over: a HYBRID_SHARD run keeps one whole copy per node.
  const nodes = s.withinNode ? 1 : Math.max(1, s.nodes);
  const total = worldSize(s);
  // Under mixed precision the optimizer works on an fp32 copy with fp32 gradients; in fp32 training the weights and
  // gradients are that copy already.
  const mixed = lowBytes < 4;
  const lowGrad = mixed ? lowBytes : 0;
  const fp32Grad = 4;
  const optimizer = (mixed ? 4 : 0) + momentBytes;
  const lowName = mixed ? '16-bit' : 'fp32';
  const optName = mixed ? 'optimizer (fp32 master + moments)' : 'optimizer moments';
  const gradName = mixed ? 'gradients (16-bit + fp32)' : 'gradients (fp32)';
  const where = (k: number): string => (k > 1 ? `, sharded over ${k} GPUs` : ', replicated');
  const parts: StatePart[] = [];
  const part = (name: string, bytes: number, source: string): void => {
    parts.push({ name, bytes, source });
  };

  if (s.engine === 'ddp' || s.stage === 0) {
    // Nothing sharded. DeepSpeed at stage 0 still keeps its fp32 optimizer copy; DDP's own accounting (no master
    // copy) lives in estimate.ts, which never calls this for DDP.
    part(`weights (${lowName})`, P * lowBytes, `${lowBytes} B/param, replicated`);
    part(gradName, P * (lowGrad + fp32Grad), `${lowGrad + fp32Grad} B/param, replicated`);
    part(optName, P * optimizer, `${optimizer} B/param, replicated`);
    return { gpuBytes: P * (lowBytes + lowGrad + fp32Grad + optimizer), cpuBytes: P * 4 * perNode * BUFFER, parts };
  }

  if (s.stage < 3) {
    // stage_1_and_2.py estimate_zero2_model_states_mem_needs. Stage 1 (which DeepSpeed does not estimate) keeps the
    // 16-bit gradients whole on every GPU and shards the rest (ZeRO paper §5.1, P_os).
    if (s.offloadOptimizer) {
      // Gradients go to the CPU partition as they are reduced; the GPU keeps the 16-bit weights.
      part(`weights (${lowName})`, P * lowBytes, `${lowBytes} B/param, replicated`);
      part(`gradients and ${optName} on the CPU`, 0, 'offload_optimizer: in host memory');
      return { gpuBytes: lowBytes * P, cpuBytes: P * Math.max(4 * total, 16) * BUFFER, parts };
    }
    const sharded = s.stage === 2 ? lowGrad + fp32Grad + optimizer : fp32Grad + optimizer;
    const replicated = s.stage === 2 ? lowBytes : lowBytes + lowGrad;
    part(`weights (${lowName})`, P * lowBytes, `${lowBytes} B/param, replicated`);
    if (s.stage === 2) part(gradName, ((lowGrad + fp32Grad) * P) / n, `${lowGrad + fp32Grad} B/param${where(n)}`);
    else part(gradName, lowGrad * P + (fp32Grad * P) / n, `${lowGrad} B/param replicated + ${fp32Grad} B/param${where(n)}`);
    part(optName, (optimizer * P) / n, `${optimizer} B/param${where(n)}`);
    return { gpuBytes: replicated * P + Math.trunc((sharded * P) / n), cpuBytes: P * 4 * perNode * BUFFER, parts };
  }

  // stage3.py estimate_zero3_model_states_mem_needs: every GPU also holds the largest layer gathered, its 16-bit
  // weights and gradients (4 B per parameter of it).
  const gathered = 4 * largestLayer;
  const gpusFactor = 1 / nodes;
  part(
    'largest layer gathered (weights + gradients)',
    gathered,
    `4 B × ${Math.round(largestLayer / 1e6)}M params of the largest ${s.engine === 'fsdp' ? 'FSDP unit' : 'layer'}`,
  );
  if (s.offloadOptimizer && s.offloadParams) {
    part(`weights, gradients, ${optName} on the CPU`, 0, 'offload_param and offload_optimizer: in host memory');
    const cpu = s.zeroInit ? P * 18 * gpusFactor * BUFFER : P * Math.max(4 * perNode, 18 * gpusFactor) * BUFFER;
    return { gpuBytes: gathered, cpuBytes: cpu, parts };
  }
  if (s.offloadOptimizer) {
    part(`weights (${lowName})`, (lowBytes * P) / n, `${lowBytes} B/param${where(n)}`);
    part(`gradients and ${optName} on the CPU`, 0, 'offload_optimizer: in host memory');
    const cpu = s.zeroInit ? P * 16 * gpusFactor * BUFFER : P * Math.max(4 * perNode, 16 * gpusFactor) * BUFFER;
    return { gpuBytes: gathered + Math.trunc((lowBytes * P) / n), cpuBytes: cpu, parts };
  }
  const sharded = lowBytes + fp32Grad + optimizer;
  if (s.offloadParams) {
    // DeepSpeed's estimator has no row for parameters offloaded with the optimizer kept on the GPU: the 16-bit
    // weights leave, the rest stays sharded.
    part(`weights (${lowName}) on the CPU`, 0, 'offload_param: in host memory');
    part('gradients (fp32)', (fp32Grad * P) / n, `${fp32Grad} B/param${where(n)}`);
    part(optName, (optimizer * P) / n, `${optimizer} B/param${where(n)}`);
    const cpu = P * Math.max(4 * perNode, lowBytes * gpusFactor) * BUFFER;
    return { gpuBytes: gathered + Math.trunc(((sharded - lowBytes) * P) / n), cpuBytes: cpu, parts };
  }
  part(`weights (${lowName})`, (lowBytes * P) / n, `${lowBytes} B/param${where(n)}`);
  part('gradients (fp32)', (fp32Grad * P) / n, `${fp32Grad} B/param${where(n)}`);
  part(optName, (optimizer * P) / n, `${optimizer} B/param${where(n)}`);
  const cpu = s.zeroInit ? largestLayer * 4 * perNode * BUFFER : P * 4 * perNode * BUFFER;
  return { gpuBytes: gathered + Math.trunc((sharded * P) / n), cpuBytes: cpu, parts };
}
