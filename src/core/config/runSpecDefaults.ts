// The run spec as one type, and the values a spec leaves unset. The extension reads the spec through this type
// (planRun, the estimates) and python-runner reads the same defaults from remote_finetune/spec_defaults.py, which
// scripts/gen-spec-defaults.ts writes from RUN_SPEC_DEFAULTS below; test/unit/config/specDefaults.test.ts fails
// when that module is stale, python-runner/tests/test_spec_defaults.py when the runner reads other values.
import type { z } from 'zod';
import { runSpecSchema } from './schemas/runSpec';
import { unwrap } from './zodWalk';

/** A run spec the schema accepted (finetune.yaml, snake_case keys as uploaded in spec.json). */
export type RunSpec = z.output<typeof runSpecSchema>;

type Section<K extends keyof RunSpec> = NonNullable<RunSpec[K]>;
type SectionDefaults = {
  readonly [K in keyof RunSpec]?: Section<K> extends readonly unknown[] ? never : Section<K> extends object ? Partial<Section<K>> : Section<K>;
};

/**
 * What the host trains with for every field a spec leaves unset. `teardown.policy` is terminate: a provisioned
 * instance nobody asked to keep is deleted when its run ends, so nothing is billed by accident; the schema's
 * description of the field says so. `wandb: {}`: reporting is on unless `enabled: false`, and only with a
 * WANDB_API_KEY. `target.provider` ssh: a spec.json written without a target (the runner's own tests) is a
 * host the user already has.
 */
export const RUN_SPEC_DEFAULTS = {
  model: { trust_remote_code: false, attn_implementation: 'auto' },
  method: 'qlora',
  preference: { base_method: 'lora-bf16' },
  quantization: { load_in_4bit: true, quant_type: 'nf4', compute_dtype: 'bfloat16', double_quant: true },
  lora: { r: 16, alpha: 32, dropout: 0.05, target_modules: 'all-linear', bias: 'none' },
  data: { split: 'train', text_field: 'text', chat_template: false, max_seq_length: 2048, packing: false, train_on_prompt: false },
  trainer: {
    epochs: 3,
    max_steps: -1,
    per_device_batch_size: 1,
    gradient_accumulation: 16,
    learning_rate: 0.0002,
    lr_scheduler: 'cosine',
    warmup_ratio: 0.03,
    weight_decay: 0.0,
    precision: 'bf16',
    gradient_checkpointing: true,
    optimizer: 'paged_adamw_8bit',
    logging_steps: 10,
    eval_strategy: 'no',
    eval_steps: 50,
    save_strategy: 'steps',
    save_steps: 50,
    save_total_limit: 2,
    seed: 42,
    use_sft_trainer: false,
  },
  launcher: { type: 'python', num_processes: 1, num_machines: 1, machine_rank: 0, main_process_port: 29500 },
  target: { provider: 'ssh', gpu_count: 1 },
  wandb: {},
  outputs: { dir: 'outputs', download: ['adapter'] },
  teardown: { policy: 'terminate', idle_minutes: 30 },
} as const satisfies SectionDefaults;

type Defaults = typeof RUN_SPEC_DEFAULTS;
type Filled<K extends keyof Defaults & keyof RunSpec> = Defaults[K] extends object
  ? Section<K> & { readonly [F in keyof Defaults[K] & keyof Section<K>]-?: Exclude<Section<K>[F], undefined> }
  : Exclude<RunSpec[K], undefined>;

/** A run spec with every default filled in: what the host trains. */
export type ResolvedRunSpec = Omit<RunSpec, keyof Defaults> & { readonly [K in keyof Defaults & keyof RunSpec]: Filled<K> };

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function merge(defaults: unknown, given: unknown): unknown {
  if (isRecord(defaults) && isRecord(given)) {
    const out: Record<string, unknown> = { ...defaults };
    for (const [k, v] of Object.entries(given)) out[k] = k in defaults ? merge(defaults[k], v) : v;
    return out;
  }
  if (given === undefined || given === null) return Array.isArray(defaults) ? [...(defaults as unknown[])] : defaults;
  return given;
}

/**
 * The spec with its defaults, as python-runner's spec.normalise makes it on the host: unset (absent or null)
 * fields take RUN_SPEC_DEFAULTS, and with an eval set and no trainer.eval_strategy the run evaluates every
 * eval_steps (the config checker suggests the same).
 */
export function normaliseRunSpec(spec: RunSpec): ResolvedRunSpec {
  const out = merge(RUN_SPEC_DEFAULTS, spec) as ResolvedRunSpec;
  if (spec.trainer?.eval_strategy === undefined && (Boolean(out.data.eval) || Boolean(out.data.eval_ratio))) {
    return { ...out, trainer: { ...out.trainer, eval_strategy: 'steps' } };
  }
  return out;
}

type Loose<T> = T extends readonly unknown[] ? T : T extends object ? { readonly [F in keyof T]?: T[F] } : T;

/** Whatever parts of a spec the schema accepts, field by field. */
export type LooseRunSpec = { readonly [K in keyof RunSpec]?: Loose<NonNullable<RunSpec[K]>> };

/**
 * The fields of a spec the schema refused that it would accept one by one (a wrong value is left out; the
 * diagnostics say why), so a plan with errors can still name its run, its env file and its teardown.
 */
export function looseRunSpec(value: unknown): LooseRunSpec {
  if (!isRecord(value)) return {};
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(runSpecSchema.shape)) {
    const v = value[key];
    if (v === undefined) continue;
    if (field.safeParse(v).success) {
      out[key] = v;
      continue;
    }
    const section = unwrap(field);
    const shape = (section as unknown as { shape?: Record<string, z.ZodType> }).shape;
    if (!shape || !isRecord(v)) continue;
    out[key] = Object.fromEntries(Object.entries(v).filter(([f, x]) => shape[f]?.safeParse(x).success === true));
  }
  return out as LooseRunSpec;
}
