// From a parsed run spec to an estimate: which model shape, which GPU, which training settings.
import type { DocNode } from './ast';
import { nodeAt, scalarAt } from './ast';
import type { FileAccess } from './types';
import { textOf } from './types';
import { dirName, join } from '../pathText';
import type { GpuInfo } from '../gpu/catalog';
import { findGpu } from '../gpu/catalog';
import type { ModelShape } from '../gpu/models';
import { lookupModel, shapeFromConfigJson, shapeFromName } from '../gpu/models';
import type { Estimate, EstimateInput, FitAdvice, Method } from '../gpu/estimate';
import { estimateMemory, fitAdvice } from '../gpu/estimate';

export interface RunSpecEstimate {
  readonly gpu: GpuInfo;
  /** The target.gpu value node: where the CodeLens sits. */
  readonly gpuNode: DocNode | undefined;
  readonly model: ModelShape;
  readonly input: EstimateInput;
  readonly estimate: Estimate;
  readonly accumulation: number;
  readonly advice: readonly FitAdvice[];
  readonly fits: boolean;
}

export type EstimateProblem = { readonly reason: 'no-gpu' | 'no-model' | 'own-command'; readonly message: string };

export function resolveModel(root: DocNode | undefined, fileName: string, files: FileAccess | undefined): ModelShape | undefined {
  const cfg = scalarAt(root, ['model', 'config_path']);
  if (typeof cfg === 'string' && files) {
    const text = textOf(files.read(join(dirName(fileName), cfg)));
    const s = text !== undefined ? shapeFromConfigJson(text, cfg) : undefined;
    if (s) return s;
  }
  const id = scalarAt(root, ['model', 'id']);
  const pb = scalarAt(root, ['model', 'params_b']);
  const base = typeof id === 'string' ? (lookupModel(id) ?? shapeFromName(id)) : undefined;
  if (typeof pb === 'number' && pb > 0) {
    const named = base ?? shapeFromName(`${pb}B`);
    if (named) return { ...named, params: pb * 1e9, source: `model.params_b (${pb}B)` };
  }
  return base;
}

/** undefined when the spec has no estimable target/model (the caller decides whether to say so). */
export function estimateRunSpec(
  root: DocNode | undefined,
  fileName: string,
  files: FileAccess | undefined,
  gpuOverride?: GpuInfo,
): RunSpecEstimate | undefined {
  const r = estimateRunSpecOrWhy(root, fileName, files, gpuOverride);
  return 'reason' in r ? undefined : r;
}

export function estimateRunSpecOrWhy(
  root: DocNode | undefined,
  fileName: string,
  files: FileAccess | undefined,
  gpuOverride?: GpuInfo,
): RunSpecEstimate | EstimateProblem {
  const gpuId = scalarAt(root, ['target', 'gpu']);
  const gpu = gpuOverride ?? (typeof gpuId === 'string' ? findGpu(gpuId) : undefined);
  if (!gpu) return { reason: 'no-gpu', message: 'No known target.gpu; set one (T4, A10G, L4, A100-40GB, …) or pass --gpu.' };
  const model = resolveModel(root, fileName, files);
  if (!model) return { reason: 'no-model', message: 'The model size is unknown: set model.config_path to its config.json or model.params_b.' };
  const m = scalarAt(root, ['method']);
  const method: Method =
    m === 'qlora' || m === 'full' || m === 'lora-bf16' ? m : scalarAt(root, ['quantization', 'load_in_4bit']) === true ? 'qlora' : 'lora-bf16';
  const tm = nodeAt(root, ['lora', 'target_modules']);
  const targets: 'all-linear' | string[] =
    tm?.kind === 'seq'
      ? tm.items.map((i) => (i.kind === 'scalar' ? String(i.value) : ''))
      : tm?.kind === 'scalar' && tm.value !== 'all-linear'
        ? [String(tm.value)]
        : tm
          ? 'all-linear'
          : ['q_proj', 'v_proj'];
  const n = (path: string[], d: number): number => {
    const v = scalarAt(root, path);
    return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : d;
  };
  const precision = scalarAt(root, ['trainer', 'precision']);
  const attn = scalarAt(root, ['model', 'attn_implementation']);
  const launcherStage = 0;
  const input: EstimateInput = {
    model,
    method,
    doubleQuant: scalarAt(root, ['quantization', 'double_quant']) === true,
    weightBytes: precision === 'fp32' ? 4 : 2,
    loraR: n(['lora', 'r'], 16),
    loraTargets: targets,
    batch: n(['trainer', 'per_device_batch_size'], 1),
    seqLen: n(['data', 'max_seq_length'], 2048),
    gradientCheckpointing: scalarAt(root, ['trainer', 'gradient_checkpointing']) === true,
    optimizer: String(scalarAt(root, ['trainer', 'optimizer']) ?? 'adamw_torch'),
    attention: attn === 'eager' ? 'eager' : 'flash',
    gpuCount: n(['target', 'gpu_count'], 1),
    zeroStage: launcherStage,
  };
  const estimate = estimateMemory(input);
  const accumulation = n(['trainer', 'gradient_accumulation'], 1);
  const fits = estimate.totalGib <= gpu.vramGb;
  return { gpu, gpuNode: nodeAt(root, ['target', 'gpu']), model, input, estimate, accumulation, advice: fits ? [] : fitAdvice(input, gpu, accumulation), fits };
}

export function formatGb(gib: number): string {
  return gib >= 100 ? gib.toFixed(0) : gib.toFixed(1);
}

/** The CodeLens text: "≈ 14.1 GB of 40 GB on A100-40GB". */
export function estimateLabel(e: RunSpecEstimate): string {
  return `≈ ${formatGb(e.estimate.totalGib)} GB of ${e.gpu.vramGb} GB on ${e.gpu.id}${e.fits ? '' : ' (does not fit)'}`;
}
