// LLaMA-Factory training YAML: its arguments pass through to HF Seq2SeqTrainingArguments, so the
// shared fields carry the same ranges; LLaMA-Factory's own keys pass quietly.
import { z } from 'zod';
import { trainingArgsFields } from './hfFields';

export const llamaFactorySchema = z.looseObject({
  ...trainingArgsFields,
  // Optional because LLaMA-Factory v1 configs name the model `model` instead (kinds.ts tells them apart).
  model_name_or_path: z.string().min(1).optional().describe('Hub id or path of the base model.'),
  model: z.string().min(1).optional().describe('Hub id or path of the base model (LLaMA-Factory v1).'),
  stage: z.enum(['pt', 'sft', 'rm', 'ppo', 'dpo', 'kto']).optional().describe('Training stage: pt, sft, rm, ppo, dpo or kto.'),
  finetuning_type: z.enum(['lora', 'freeze', 'full', 'oft']).optional().describe('lora, freeze, full or oft.'),
  lora_rank: z.number().int().min(1).max(1024).optional().describe('LoRA rank, 1 to 1024.'),
  lora_alpha: z.number().positive().max(4096).optional().describe('LoRA scaling; default 2 × lora_rank.'),
  lora_dropout: z.number().min(0).max(0.9).optional().describe('LoRA dropout, 0 to 0.9.'),
  lora_target: z.string().min(1).optional().describe('"all" or comma-separated module names.'),
  quantization_bit: z.union([z.literal(1), z.literal(2), z.literal(3), z.literal(4), z.literal(5), z.literal(6), z.literal(8)]).optional().describe('Load the base model quantized to 1 (HQQ), 2, 3, 4, 5, 6 or 8 bits (QLoRA with 4).'),
  quantization_method: z.enum(['bitsandbytes', 'bnb', 'gptq', 'awq', 'aqlm', 'quanto', 'eetq', 'hqq', 'mxfp4', 'fp8']).optional().describe('Quantization backend (extras/constants.py QuantizationMethod).'),
  quantization_type: z.enum(['nf4', 'fp4']).optional().describe('4-bit data type.'),
  double_quantization: z.boolean().optional().describe('Double quantization.'),
  // v0 names (extras/constants.py) and v1 names (v1/utils/types.py AttentionFunction).
  flash_attn: z.enum(['auto', 'disabled', 'sdpa', 'fa2', 'fa3', 'eager', 'flash_attention_2']).optional().describe('Attention: auto, disabled, sdpa, fa2 or fa3 (v1: eager, sdpa, flash_attention_2). FlashAttention needs Ampere or newer.'),
  template: z.string().optional().describe('Chat template name.'),
  dataset: z.string().optional().describe('Comma-separated dataset names from dataset_info.json.'),
  cutoff_len: z.number().int().min(16).max(1048576).optional().describe('Tokens per example.'),
});
