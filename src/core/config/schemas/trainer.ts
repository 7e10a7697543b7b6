// Trainer hyperparameter YAML in HF TrainingArguments / TRL style, with LoRA (peft) and
// bitsandbytes settings either flat or nested under lora/peft_config and quantization_config.
import { z } from 'zod';
import { bnbFields, loraFields, modelFields, trainingArgsFields } from './hfFields';
import { knownKeyFields } from './trainerVocabulary';

const loraBlock = z.strictObject(loraFields);
const bnbBlock = z.strictObject(bnbFields);

const typed = {
  ...trainingArgsFields,
  ...modelFields,
  ...loraFields,
  ...bnbFields,
  lora: loraBlock.optional().describe('peft LoraConfig fields.'),
  lora_config: loraBlock.optional().describe('peft LoraConfig fields.'),
  peft_config: loraBlock.optional().describe('peft LoraConfig fields.'),
  quantization_config: bnbBlock.optional().describe('bitsandbytes BitsAndBytesConfig fields.'),
  bnb_config: bnbBlock.optional().describe('bitsandbytes BitsAndBytesConfig fields.'),
};

export const trainerSchema = z.strictObject({ ...typed, ...knownKeyFields(typed) });
