// From a parsed run spec to an estimate: which model shape, which GPU, which training settings.
import { preferenceBase, preferenceSequencesPerExample } from './preferenceMethod';
import type { DocNode } from './ast';
import { nodeAt, scalarAt } from './ast';
import type { FileAccess } from './types';
import { textOf } from './types';
import { dirName, join } from '../pathText';
import type { GpuInfo } from '../gpu/catalog';
import { findGpu } from '../gpu/catalog';
import type { ModelShape } from '../gpu/models';
import { lookupModel, shapeFromConfigJson, shapeFromName } from '../gpu/models';
import type { Estimate, EstimateInput, FitAdvice, GpuPrice, Method } from '../gpu/estimate';
import { estimateMemory, fitAdvice } from '../gpu/estimate';
import { launcherSettings } from './launcherSharding';
import { fusedLoss } from './lossPath';
import { RUNNER_DEFAULTS } from './runnerDefaults';
import { vramBandText } from '../gpu/vramAccuracy';
import { providerGpuPrice, provisionedProvider } from './rules/providerMachines';

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
  // Unset fields take the runner's defaults (runnerDefaults.ts): what the host will train.
  // As trainer_plan.quantization_kwargs decides: QLoRA with load_in_4bit false keeps a 16-bit base, and
  // load_in_4bit true under lora-bf16 loads in 4 bits.
  // dpo/orpo: the base method's memory (preferenceMethod.ts), with chosen and rejected in one batch.
  const pref = preferenceBase(m, scalarAt(root, ['preference', 'base_method']));
  const asked: Method = pref ?? (m === 'qlora' || m === 'full' || m === 'lora-bf16' ? m : RUNNER_DEFAULTS.method);
  const fourBit = scalarAt(root, ['quantization', 'load_in_4bit']);
  const method: Method = asked === 'qlora' && fourBit === false ? 'lora-bf16' : asked === 'lora-bf16' && fourBit === true ? 'qlora' : asked;
  const tm = nodeAt(root, ['lora', 'target_modules']);
  const targets: 'all-linear' | readonly string[] =
    tm?.kind === 'seq'
      ? tm.items.map((i) => (i.kind === 'scalar' ? String(i.value) : ''))
      : tm?.kind === 'scalar' && tm.value !== 'all-linear'
        ? [String(tm.value)]
        : tm
          ? 'all-linear'
          : RUNNER_DEFAULTS.loraTargets;
  const n = (path: string[], d: number): number => {
    const v = scalarAt(root, path);
    return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : d;
  };
  const bool = (path: string[], d: boolean): boolean => {
    const v = scalarAt(root, path);
    return typeof v === 'boolean' ? v : d;
  };
  const precision = scalarAt(root, ['trainer', 'precision']);
  const attn = scalarAt(root, ['model', 'attn_implementation']);
  // The launcher's DeepSpeed/FSDP settings decide what each GPU holds; "auto" values come from the trainer settings.
  const launcher = launcherSettings(root, fileName, files);
  const sharding = launcher.sharding;
  const input: EstimateInput = {
    model,
    method,
    doubleQuant: bool(['quantization', 'double_quant'], RUNNER_DEFAULTS.doubleQuant),
    weightBytes: precision === 'fp32' ? 4 : 2,
    loraR: n(['lora', 'r'], RUNNER_DEFAULTS.loraR),
    loraTargets: targets,
    batch: n(['trainer', 'per_device_batch_size'], launcher.microBatch ?? RUNNER_DEFAULTS.perDeviceBatch) * preferenceSequencesPerExample(m),
    seqLen: n(['data', 'max_seq_length'], RUNNER_DEFAULTS.maxSeqLength),
    gradientCheckpointing: bool(['trainer', 'gradient_checkpointing'], RUNNER_DEFAULTS.gradientCheckpointing),
    optimizer: String(scalarAt(root, ['trainer', 'optimizer']) ?? RUNNER_DEFAULTS.optimizer),
    attention: attn === 'eager' ? 'eager' : 'flash',
    fusedLmHead: fusedLoss(root, fileName, files).fused,
    gpuCount: sharding.gpusPerNode,
    zeroStage: sharding.stage,
    sharding,
  };
  const estimate = estimateMemory(input);
  const accumulation = n(['trainer', 'gradient_accumulation'], launcher.accumulation ?? RUNNER_DEFAULTS.gradientAccumulation);
  const fits = estimate.totalGib <= gpu.vramGb;
  // A cloud spec's fixes are that cloud's machines at its prices; an own host's are the list prices.
  const provider = gpuOverride ? undefined : provisionedProvider(scalarAt(root, ['target', 'provider']));
  const price: GpuPrice | undefined = provider ? (g, n) => providerGpuPrice(provider, g, n) : undefined;
  const advice = fits ? [] : fitAdvice(input, gpu, accumulation, ...(price ? [price] : []));
  return { gpu, gpuNode: nodeAt(root, ['target', 'gpu']), model, input, estimate, accumulation, advice, fits };
}

export function formatGb(gib: number): string {
  return gib >= 100 ? gib.toFixed(0) : gib.toFixed(1);
}

/** The CodeLens text, never a bare number: "≈ 14.1 GB of 40 GB on A100-40GB · ±11%: held out over 3 models, 10 H200 cases (in sample ±8%)". */
export function estimateLabel(e: RunSpecEstimate): string {
  return `≈ ${formatGb(e.estimate.totalGib)} GB of ${e.gpu.vramGb} GB on ${e.gpu.id}${e.fits ? '' : ' (does not fit)'} · ${vramBandText()}`;
}
