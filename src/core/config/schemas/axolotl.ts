// Axolotl config: recognised as such; the fields it shares with TrainingArguments, peft and
// bitsandbytes are range-checked, its own keys pass quietly (Axolotl validates those on the host).
import { z } from 'zod';
import { bnbFields, OPTIMIZERS, trainingArgsFields } from './hfFields';

// Axolotl's CustomSupportedOptimizers (src/axolotl/utils/schemas/enums.py), on top of transformers' names.
const AXOLOTL_OPTIMIZERS = [
  'optimi_adamw', 'ao_adamw_4bit', 'ao_adamw_8bit', 'ao_adamw_fp8', 'adopt_adamw', 'came_pytorch', 'muon', 'dion', 'sinkgd',
  'flash_adamw', 'flash_adam', 'flash_sgd', 'flash_sgdw', 'flash_lion', 'q_galore_adamw8bit',
] as const;

const t = trainingArgsFields;
export const axolotlSchema = z.looseObject({
  base_model: z.string().min(1).describe('Hub id or path of the base model.'),
  // Built-in adapters (loaders/adapter.py) and the one Axolotl's bundled plugins add (mora).
  adapter: z.enum(['lora', 'qlora', 'llama-adapter', 'mora']).optional().describe('lora, qlora (needs load_in_4bit), llama-adapter or a plugin adapter (mora); omit for full fine-tuning.'),
  load_in_4bit: bnbFields.load_in_4bit,
  load_in_8bit: bnbFields.load_in_8bit,
  bnb_4bit_quant_type: bnbFields.bnb_4bit_quant_type,
  bnb_4bit_compute_dtype: bnbFields.bnb_4bit_compute_dtype,
  bnb_4bit_use_double_quant: bnbFields.bnb_4bit_use_double_quant,
  lora_r: z.number().int().min(1).max(1024).optional().describe('LoRA rank, 1 to 1024.'),
  lora_alpha: z.number().positive().max(4096).optional().describe('LoRA scaling; about 2 × lora_r.'),
  lora_dropout: z.number().min(0).max(0.9).optional().describe('LoRA dropout, 0 to 0.9.'),
  lora_target_modules: z.union([z.string(), z.array(z.string())]).optional().describe('Modules that get adapters.'),
  lora_target_linear: z.boolean().optional().describe('Adapt every linear layer.'),
  sequence_len: z.number().int().min(16).max(1048576).optional().describe('Tokens per example.'),
  micro_batch_size: z.number().int().min(1).max(4096).optional().describe('Examples per GPU per step (per_device_train_batch_size).'),
  gradient_accumulation_steps: t.gradient_accumulation_steps,
  num_epochs: z.number().positive().max(10000).optional().describe('Passes over the data.'),
  max_steps: t.max_steps,
  // Axolotl's schema takes str | float: PyYAML reads 2e-5 (no dot) as a string, so quoted numbers are normal here.
  learning_rate: z.union([t.learning_rate.unwrap(), z.string().regex(/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/, 'must be a number such as 2e-5')]).optional().describe('Peak learning rate, 1e-8 to 1 (a number, or the same number in quotes).'),
  weight_decay: t.weight_decay,
  warmup_ratio: t.warmup_ratio,
  warmup_steps: t.warmup_steps,
  optimizer: z.enum([...OPTIMIZERS, ...AXOLOTL_OPTIMIZERS]).optional().describe('Optimizer: a TrainingArguments.optim name or one Axolotl adds (muon, optimi_adamw, ao_adamw_8bit, came_pytorch, …).'),
  lr_scheduler: z.string().optional().describe('Learning-rate schedule.'),
  bf16: z.union([z.boolean(), z.literal('auto')]).optional().describe('bf16: true, false or auto. Not on T4/V100.'),
  fp16: z.union([z.boolean(), z.literal('auto')]).optional().describe('fp16 mixed precision.'),
  tf32: z.union([z.boolean(), z.literal('auto')]).optional().describe('Allow TF32 matmuls: true, false or auto (where supported). Ampere or newer.'),
  gradient_checkpointing: z.union([z.boolean(), z.literal('unsloth'), z.literal('offload'), z.literal('offload_disk')]).optional().describe('Recompute activations in the backward pass.'),
  flash_attention: z.boolean().optional().describe('Use FlashAttention-2 (Ampere or newer).'),
  sdp_attention: z.boolean().optional().describe('Use PyTorch SDPA.'),
  eval_steps: t.eval_steps,
  save_steps: t.save_steps,
  eval_strategy: t.eval_strategy,
  save_strategy: t.save_strategy,
  load_best_model_at_end: t.load_best_model_at_end,
  deepspeed: z.union([z.string(), z.record(z.string(), z.unknown())]).optional().describe('DeepSpeed JSON path, or the DeepSpeed config inline.'),
  output_dir: t.output_dir,
  seed: t.seed,
  val_set_size: z.number().min(0).optional().describe('Fraction (0–1) or count of examples held out for evaluation.'),
  datasets: z.array(z.looseObject({ path: z.string().min(1).optional().describe('Hub id or local path (optional: some dataset types name their files otherwise).'), type: z.union([z.string(), z.record(z.string(), z.unknown())]).optional().describe('Prompt format (alpaca, chat_template, …).') })).optional().describe('Training datasets.'),
  hub_token: t.hub_token,
});
