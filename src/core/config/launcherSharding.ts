// How a run spec's launcher shards the training state, read from the files it launches with: launcher.deepspeed
// (DeepSpeed JSON), launcher.config_file (accelerate YAML, or one of the runner's shipped profiles) and the process
// counts, the way python-runner/remote_finetune/launchers.py starts the run.
import type { DocNode } from './ast';
import { scalarAt } from './ast';
import type { FileAccess } from './types';
import { textOf } from './types';
import { parseConfigText } from './parse';
import { dirName, join } from '../pathText';
import type { Sharding, ZeroStage } from '../gpu/sharding';
import { SINGLE_GPU } from '../gpu/sharding';

export interface LauncherSettings {
  readonly sharding: Sharding;
  /** Numbers the DeepSpeed JSON fixes itself; "auto" leaves them to the trainer settings (HF's deepspeed integration). */
  readonly microBatch?: number;
  readonly accumulation?: number;
}

// The runner's accelerate profiles (python-runner/remote_finetune/accelerate_configs/*.yaml).
const PROFILES: Record<string, { readonly stage: ZeroStage; readonly engine: 'ddp' | 'deepspeed' }> = {
  single_gpu: { stage: 0, engine: 'ddp' },
  multi_gpu: { stage: 0, engine: 'ddp' },
  deepspeed_zero2: { stage: 2, engine: 'deepspeed' },
  deepspeed_zero3: { stage: 3, engine: 'deepspeed' },
};

/** A bare profile name the runner resolves to its own accelerate config (launchers.py resolve_accelerate_config). */
export function isRunnerProfile(name: string): boolean {
  return Object.hasOwn(PROFILES, name);
}

// accelerate's FSDP_SHARDING_STRATEGY, in order: the numeric form is an index into it, from 1.
const FSDP_STRATEGIES = ['FULL_SHARD', 'SHARD_GRAD_OP', 'NO_SHARD', 'HYBRID_SHARD', 'HYBRID_SHARD_ZERO2'] as const;

const positive = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : undefined);
const offloaded = (v: unknown): boolean => v === 'cpu' || v === 'nvme';

function readConfig(files: FileAccess | undefined, specFile: string, rel: unknown, syntax: 'yaml' | 'json'): DocNode | undefined {
  if (typeof rel !== 'string' || !files) return undefined;
  // The same bounded read the reference checks use: the path is the workspace's choice.
  const text = textOf(files.read(join(dirName(specFile), rel)));
  if (text === undefined || text.length > 1_000_000) return undefined;
  return parseConfigText(text, syntax).root;
}

function fromDeepSpeedJson(ds: DocNode, base: Sharding, name: string): LauncherSettings {
  const st = scalarAt(ds, ['zero_optimization', 'stage']);
  const stage = (typeof st === 'number' && st >= 0 && st <= 3 ? Math.floor(st) : 0) as ZeroStage;
  const microBatch = positive(scalarAt(ds, ['train_micro_batch_size_per_gpu']));
  const accumulation = positive(scalarAt(ds, ['gradient_accumulation_steps']));
  return {
    sharding: {
      ...base,
      engine: 'deepspeed',
      stage,
      offloadOptimizer: stage > 0 && offloaded(scalarAt(ds, ['zero_optimization', 'offload_optimizer', 'device'])),
      offloadParams: stage === 3 && offloaded(scalarAt(ds, ['zero_optimization', 'offload_param', 'device'])),
      // transformers builds the model under deepspeed.zero.Init whenever ZeRO-3 is on (is_deepspeed_zero3_enabled).
      zeroInit: stage === 3,
      source: `${name}: ZeRO-${stage}`,
    },
    ...(microBatch !== undefined ? { microBatch } : {}),
    ...(accumulation !== undefined ? { accumulation } : {}),
  };
}

/** The launcher's sharding; plain one-process when the spec launches with python and names no DeepSpeed config. */
export function launcherSettings(root: DocNode | undefined, specFile: string, files: FileAccess | undefined): LauncherSettings {
  const type = scalarAt(root, ['launcher', 'type']) ?? 'python';
  const nodes = type === 'python' ? 1 : (positive(scalarAt(root, ['launcher', 'num_machines'])) ?? 1);
  // launcher.num_processes counts processes on all machines (accelerate's meaning); the runner passes it, default 1.
  const processes = type === 'python' ? 1 : (positive(scalarAt(root, ['launcher', 'num_processes'])) ?? 1);
  const gpusPerNode = Math.max(1, Math.floor(processes / nodes));
  const where = `${gpusPerNode} GPU${gpusPerNode > 1 ? 's' : ''}${nodes > 1 ? ` × ${nodes} nodes` : ''}`;
  const base: Sharding = { ...SINGLE_GPU, gpusPerNode, nodes, source: `DDP over ${where}` };

  // TrainingArguments.deepspeed (launcher.deepspeed) wins over whatever accelerate's config says.
  const dsPath = scalarAt(root, ['launcher', 'deepspeed']);
  const ds = readConfig(files, specFile, dsPath, 'json');
  if (ds) return withWhere(fromDeepSpeedJson(ds, base, String(dsPath)), where);
  if (type !== 'accelerate') return { sharding: base };

  const file = scalarAt(root, ['launcher', 'config_file']);
  const name = typeof file === 'string' ? file : processes > 1 ? 'multi_gpu' : 'single_gpu';
  const profile = isRunnerProfile(name) ? PROFILES[name] : undefined;
  if (profile) {
    const s: Sharding = { ...base, engine: profile.engine, stage: profile.stage, zeroInit: profile.stage === 3, source: `profile ${name}` };
    return withWhere({ sharding: s }, where);
  }
  const acc = readConfig(files, specFile, file, 'yaml');
  const dt = scalarAt(acc, ['distributed_type']);
  if (dt === 'DEEPSPEED') {
    const dsFile = scalarAt(acc, ['deepspeed_config', 'deepspeed_config_file']);
    const inner = readConfig(files, specFile, dsFile, 'json');
    if (inner) return withWhere(fromDeepSpeedJson(inner, base, String(dsFile)), where);
    const z = scalarAt(acc, ['deepspeed_config', 'zero_stage']);
    const stage = (typeof z === 'number' && z >= 0 && z <= 3 ? Math.floor(z) : 0) as ZeroStage;
    const s: Sharding = {
      ...base,
      engine: 'deepspeed',
      stage,
      offloadOptimizer: stage > 0 && offloaded(scalarAt(acc, ['deepspeed_config', 'offload_optimizer_device'])),
      offloadParams: stage === 3 && offloaded(scalarAt(acc, ['deepspeed_config', 'offload_param_device'])),
      zeroInit: stage === 3,
      source: `${String(file)}: ZeRO-${stage}`,
    };
    return withWhere({ sharding: s }, where);
  }
  if (dt === 'FSDP') {
    const raw = scalarAt(acc, ['fsdp_config', 'fsdp_sharding_strategy']);
    const reshard = scalarAt(acc, ['fsdp_config', 'fsdp_reshard_after_forward']);
    // FSDP2 (fsdp_version 2) names the strategy through reshard_after_forward: true is FULL_SHARD, false SHARD_GRAD_OP.
    const strategy =
      typeof raw === 'number'
        ? (FSDP_STRATEGIES[raw - 1] ?? 'FULL_SHARD')
        : typeof raw === 'string'
          ? raw
          : typeof reshard === 'string'
            ? reshard
            : reshard === false
              ? 'SHARD_GRAD_OP'
              : 'FULL_SHARD';
    const stage: ZeroStage = strategy === 'NO_SHARD' ? 0 : strategy === 'SHARD_GRAD_OP' || strategy === 'HYBRID_SHARD_ZERO2' ? 2 : 3;
    // FSDP's CPUOffload moves the parameters and their gradients, and the optimizer steps on the CPU.
    const off = scalarAt(acc, ['fsdp_config', 'fsdp_offload_params']) === true && stage > 0;
    const s: Sharding = {
      ...base,
      engine: 'fsdp',
      stage,
      offloadOptimizer: off,
      offloadParams: off && stage === 3,
      withinNode: strategy.startsWith('HYBRID_SHARD'),
      zeroInit: true,
      source: `${String(file)}: FSDP ${strategy}`,
    };
    return withWhere({ sharding: s }, where);
  }
  return { sharding: base };
}

function withWhere(l: LauncherSettings, where: string): LauncherSettings {
  return { ...l, sharding: { ...l.sharding, source: `${l.sharding.source} over ${where}` } };
}
