// Which kind of config a file is, from its name first and its top-level keys second. A file of no
// known kind gets no diagnostics at all, so a random YAML file in the workspace stays quiet.
import type { DocNode } from './ast';
import { topKeys } from './ast';
import type { ConfigKind } from './types';

export type FileSyntax = 'yaml' | 'json' | 'dotenv' | 'other';

export function baseName(p: string): string {
  const i = Math.max(p.lastIndexOf('/'), p.lastIndexOf('\\'));
  return i === -1 ? p : p.slice(i + 1);
}

export function syntaxOf(fileName: string): FileSyntax {
  const b = baseName(fileName).toLowerCase();
  if (b === '.env' || b.startsWith('.env.') || b.endsWith('.env')) return 'dotenv';
  if (b.endsWith('.json')) return 'json';
  if (b.endsWith('.yaml') || b.endsWith('.yml')) return 'yaml';
  return 'other';
}

/** Run specs are known by name; the content check catches renamed copies. */
export function isRunSpecName(fileName: string): boolean {
  return /^(.+\.)?finetune\.ya?ml$/i.test(baseName(fileName));
}

const ACCELERATE_KEYS = [
  'compute_environment',
  'distributed_type',
  'mixed_precision',
  'num_processes',
  'deepspeed_config',
  'fsdp_config',
  'use_cpu',
  'rdzv_backend',
];
const DEEPSPEED_KEYS = [
  'zero_optimization',
  'train_batch_size',
  'train_micro_batch_size_per_gpu',
  'gradient_accumulation_steps',
  'fp16',
  'bf16',
  'optimizer',
  'steps_per_print',
  'gradient_clipping',
];
const TRAINER_HINTS = [
  'learning_rate',
  'per_device_train_batch_size',
  'num_train_epochs',
  'gradient_accumulation_steps',
  'output_dir',
  'lr_scheduler_type',
  'warmup_ratio',
  'optim',
  'load_in_4bit',
  'lora_alpha',
  'lora_r',
  'bnb_4bit_quant_type',
  'max_steps',
  'save_steps',
  'eval_strategy',
  'bf16',
  'fp16',
  'gradient_checkpointing',
  'r',
  'target_modules',
  'lora_dropout',
  'model_name_or_path',
  'quantization_config',
  'lora',
];

/** Whether the name alone says "config" (so an oversized or unreadable file is still worth a word). */
export function nameSuggestsConfig(fileName: string): boolean {
  const b = baseName(fileName).toLowerCase();
  return (
    syntaxOf(fileName) === 'dotenv' ||
    isRunSpecName(fileName) ||
    /^(ds_config|deepspeed|zero\d|accelerate|training_args|train_config|wandb_sweep|sweep)/.test(b)
  );
}

const JSON_HINTS = /"(zero_optimization|train_batch_size|train_micro_batch_size_per_gpu|gradient_accumulation_steps|steps_per_print|target)"\s*:/;

/** A cheap look before parsing JSON: most JSON in a repository (package.json, locks, data) is no config. */
export function jsonMayBeConfig(fileName: string, text: string): boolean {
  return nameSuggestsConfig(fileName) || JSON_HINTS.test(text.slice(0, 65536));
}

/** From a file's first bytes only: whether it may be a config at all (a dataset, a lock file, package.json are not). */
export function mayBeConfig(fileName: string, head: string): boolean {
  const syntax = syntaxOf(fileName);
  if (syntax === 'dotenv') return true;
  if (syntax === 'other') return false;
  if (syntax === 'json') return jsonMayBeConfig(fileName, head);
  return nameSuggestsConfig(fileName) || detectKind(fileName, roughTopLevel(head)) !== undefined;
}

/**
 * Top-level keys read line by line, for detection when the document could not be parsed
 * (a syntax error, or too large for the full parser): enough to know what kind it was meant to be.
 */
export function roughTopLevel(text: string): DocNode {
  const pairs: Array<{ key: { kind: 'scalar'; start: number; end: number; value: string; quoted: boolean }; value: undefined }> = [];
  const re = /^"?([A-Za-z_][\w.-]*)"?\s*:/gm;
  for (let m = re.exec(text); m && pairs.length < 200; m = re.exec(text))
    pairs.push({ key: { kind: 'scalar', start: m.index, end: m.index + m[1]!.length, value: m[1]!, quoted: false }, value: undefined });
  return { kind: 'map', start: 0, end: text.length, pairs };
}

export function detectKind(fileName: string, root: DocNode | undefined): ConfigKind | undefined {
  const syntax = syntaxOf(fileName);
  if (syntax === 'dotenv') return 'dotenv';
  if (syntax === 'other') return undefined;
  const name = baseName(fileName).toLowerCase();
  const keys = new Set(topKeys(root));
  if (syntax === 'yaml' && isRunSpecName(fileName)) {
    // Axolotl's own examples include a `finetune.yml` (examples/orpheus): a file named like a run
    // spec that is plainly another tool's config is checked as that tool's config. One with any run
    // spec key, or with nothing else recognisable, stays a run spec (so a half-written one is checked).
    if (RUN_SPEC_KEYS.some((k) => keys.has(k))) return 'runspec';
    return byContent(keys, name, syntax) ?? 'runspec';
  }
  if (keys.size === 0) return undefined;
  if (keys.has('version') && keys.has('target')) return 'runspec';
  return byContent(keys, name, syntax);
}

/** Top-level keys of a run spec that the other kinds do not use there (`model` and `data` are too common). */
const RUN_SPEC_KEYS = ['version', 'target', 'method', 'quantization', 'trainer', 'launcher', 'teardown', 'outputs', 'env_file', 'wandb'];

function byContent(keys: ReadonlySet<string>, name: string, syntax: FileSyntax): ConfigKind | undefined {
  const count = (list: readonly string[]): number => list.reduce((n, k) => n + (keys.has(k) ? 1 : 0), 0);
  if (syntax === 'json') {
    if (/^(ds_config|deepspeed|zero)/.test(name) || keys.has('zero_optimization') || count(DEEPSPEED_KEYS) >= 2) return 'deepspeed';
    return undefined;
  }
  if (keys.has('compute_environment') || keys.has('distributed_type') || (/^accelerate/.test(name) && count(ACCELERATE_KEYS) >= 1)) return 'accelerate';
  // W&B Launch sweeps name a `job` (or `image_uri`) instead of a program.
  if (keys.has('parameters') && (keys.has('method') || keys.has('program') || keys.has('job') || keys.has('image_uri'))) return 'sweep';
  if (keys.has('base_model') && (keys.has('datasets') || keys.has('adapter') || keys.has('micro_batch_size') || keys.has('sequence_len'))) return 'axolotl';
  if (keys.has('model_name_or_path') && (keys.has('stage') || keys.has('finetuning_type') || keys.has('lora_target') || keys.has('template')))
    return 'llamafactory';
  // LLaMA-Factory v1 (examples/v1): `model` is a Hub id and the sections are model_class,
  // train_dataset, dist_config, kernel_config; without this they read as a trainer YAML full of
  // "unknown" keys.
  if (keys.has('model') && (keys.has('model_class') || keys.has('train_dataset') || keys.has('dist_config'))) return 'llamafactory';
  if (count(TRAINER_HINTS) >= 2) return 'trainer';
  return undefined;
}
