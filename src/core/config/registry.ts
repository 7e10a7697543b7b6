// One entry per kind: its zod schema, its code block and whether unknown keys are reported.
import type { z } from 'zod';
import type { ConfigKind } from './types';
import { runSpecSchema } from './schemas/runSpec';
import { accelerateSchema } from './schemas/accelerate';
import { deepSpeedSchema } from './schemas/deepspeed';
import { trainerSchema } from './schemas/trainer';
import { sweepSchema } from './schemas/sweep';
import { axolotlSchema } from './schemas/axolotl';
import { llamaFactorySchema } from './schemas/llamaFactory';

export interface KindInfo {
  readonly kind: ConfigKind;
  readonly title: string;
  readonly schema: z.ZodType | undefined;
  readonly codeBase: number;
  readonly reportUnknown: boolean;
  /** File name patterns the generated JSON Schema is contributed for. */
  readonly fileMatch: readonly string[];
}

export const KINDS: Readonly<Record<ConfigKind, KindInfo>> = {
  runspec: {
    kind: 'runspec',
    title: 'Remote Fine-Tune run spec (finetune.yaml)',
    schema: runSpecSchema,
    codeBase: 100,
    reportUnknown: true,
    fileMatch: ['finetune.yaml', 'finetune.yml', '*.finetune.yaml', '*.finetune.yml'],
  },
  accelerate: {
    kind: 'accelerate',
    title: 'Hugging Face accelerate config',
    schema: accelerateSchema,
    codeBase: 200,
    reportUnknown: true,
    fileMatch: ['**/accelerate_configs/*.yaml', '**/accelerate_configs/*.yml', 'accelerate*.yaml', 'accelerate*.yml', '**/configs/accelerate/*.yaml'],
  },
  deepspeed: {
    kind: 'deepspeed',
    title: 'DeepSpeed config',
    schema: deepSpeedSchema,
    codeBase: 300,
    reportUnknown: true,
    fileMatch: ['ds_config*.json', 'deepspeed*.json', 'zero*.json', '**/deepspeed_configs/*.json'],
  },
  trainer: {
    kind: 'trainer',
    title: 'Trainer hyperparameters (TrainingArguments / TRL + LoRA + bitsandbytes)',
    schema: trainerSchema,
    codeBase: 400,
    reportUnknown: true,
    fileMatch: ['training_args*.yaml', 'train_config*.yaml', '**/configs/training/*.yaml', 'sft*.yaml', 'qlora*.yaml', 'lora*.yaml'],
  },
  sweep: { kind: 'sweep', title: 'W&B sweep', schema: sweepSchema, codeBase: 500, reportUnknown: true, fileMatch: ['*sweep*.yaml', '*sweep*.yml'] },
  dotenv: { kind: 'dotenv', title: '.env file', schema: undefined, codeBase: 600, reportUnknown: false, fileMatch: [] },
  axolotl: {
    kind: 'axolotl',
    title: 'Axolotl config',
    schema: axolotlSchema,
    codeBase: 700,
    reportUnknown: false,
    fileMatch: ['**/axolotl/**/*.yml', '**/axolotl/**/*.yaml'],
  },
  llamafactory: {
    kind: 'llamafactory',
    title: 'LLaMA-Factory config',
    schema: llamaFactorySchema,
    codeBase: 750,
    reportUnknown: false,
    fileMatch: ['**/llama_factory/**/*.yaml', '*_lora_sft.yaml', '*_qlora_sft.yaml', '*_full_sft.yaml'],
  },
};
