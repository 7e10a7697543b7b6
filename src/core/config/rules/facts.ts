// The training facts every kind states in its own words (bf16: true, precision: bf16,
// mixed_precision: bf16, bf16.enabled …), pulled out with their nodes so one set of cross-field
// rules serves every kind and can still point at, and fix, the exact value.
import type { DocNode, PathSegment } from '../ast';
import { nodeAt } from '../ast';
import type { ConfigKind } from '../types';

export interface Fact<T> {
  readonly value: T;
  readonly node: DocNode;
  readonly path: readonly PathSegment[];
}

export interface PrecisionFact extends Fact<string> {
  /** Value this spelling uses for fp16 (for the quick fix), or undefined when it is a boolean flag. */
  readonly fp16Spelling?: string;
  /** True when the fact is a boolean flag such as bf16: true. */
  readonly flag: boolean;
}

export interface TrainingFacts {
  readonly precisions: PrecisionFact[];
  readonly bf16Flag?: Fact<boolean>;
  readonly fp16Flag?: Fact<boolean>;
  readonly load4bit?: Fact<boolean | string | number>;
  readonly computeDtype?: Fact<string>;
  readonly computeDtypePath?: readonly PathSegment[];
  /**
   * How to make the 4-bit layers compute in `want` when that is not a key of its own (Axolotl
   * takes the compute dtype from bf16/fp16); by default computeDtypePath is set to `want`.
   */
  readonly computeDtypeSetting?: (want: 'bfloat16' | 'float16') => { readonly path: readonly PathSegment[]; readonly value: string | boolean };
  readonly quantStorage?: Fact<string>;
  readonly flashAttention?: Fact<string | boolean>;
  /** The spelling that turns flash attention off for this kind. */
  readonly flashOff?: string | boolean;
  readonly loraR?: Fact<number>;
  readonly loraAlpha?: Fact<number>;
  readonly loraAlphaKey?: string;
  readonly loadBest?: Fact<boolean>;
  readonly evalStrategy?: Fact<string>;
  readonly saveStrategy?: Fact<string>;
  readonly evalSteps?: Fact<number>;
  readonly saveSteps?: Fact<number>;
  /** Mapping that holds the trainer keys (for inserting missing ones). */
  readonly trainerPath: readonly PathSegment[];
  readonly names: { readonly evalStrategy: string; readonly saveStrategy: string; readonly saveSteps: string };
}

function fact<T>(root: DocNode | undefined, path: readonly PathSegment[], pick: (v: unknown) => v is T): Fact<T> | undefined {
  const n = nodeAt(root, path);
  if (!n || n.kind !== 'scalar' || !pick(n.value)) return undefined;
  return { value: n.value, node: n, path };
}
const isStr = (v: unknown): v is string => typeof v === 'string';
const isNum = (v: unknown): v is number => typeof v === 'number';
const isBool = (v: unknown): v is boolean => typeof v === 'boolean';

function firstFact<T>(root: DocNode | undefined, paths: ReadonlyArray<readonly PathSegment[]>, pick: (v: unknown) => v is T): Fact<T> | undefined {
  for (const p of paths) {
    const f = fact(root, p, pick);
    if (f) return f;
  }
  return undefined;
}

export function extractFacts(kind: ConfigKind, root: DocNode | undefined): TrainingFacts | undefined {
  const precisions: PrecisionFact[] = [];
  const hfNames = { evalStrategy: 'eval_strategy', saveStrategy: 'save_strategy', saveSteps: 'save_steps' };
  const boolFlag = (path: PathSegment[], name: 'bf16' | 'fp16'): Fact<boolean> | undefined => {
    const f = fact(root, path, isBool);
    if (f && f.value) precisions.push({ value: name, node: f.node, path, flag: true });
    return f;
  };
  switch (kind) {
    case 'runspec': {
      const p = fact(root, ['trainer', 'precision'], isStr);
      if (p) precisions.push({ ...p, fp16Spelling: 'fp16', flag: false });
      const cd = fact(root, ['quantization', 'compute_dtype'], isStr);
      if (cd && cd.value === 'bfloat16') precisions.push({ ...cd, value: 'bf16', fp16Spelling: 'float16', flag: false });
      const method = fact(root, ['method'], isStr);
      const l4 = fact(root, ['quantization', 'load_in_4bit'], isBool);
      return {
        precisions,
        load4bit: l4?.value ? l4 : method?.value === 'qlora' ? method : undefined,
        computeDtype: cd,
        computeDtypePath: ['quantization', 'compute_dtype'],
        flashAttention: fact(root, ['model', 'attn_implementation'], isStr),
        flashOff: 'sdpa',
        loraR: fact(root, ['lora', 'r'], isNum),
        loraAlpha: fact(root, ['lora', 'alpha'], isNum),
        loraAlphaKey: 'alpha',
        loadBest: fact(root, ['trainer', 'load_best_model_at_end'], isBool),
        evalStrategy: fact(root, ['trainer', 'eval_strategy'], isStr),
        saveStrategy: fact(root, ['trainer', 'save_strategy'], isStr),
        evalSteps: fact(root, ['trainer', 'eval_steps'], isNum),
        saveSteps: fact(root, ['trainer', 'save_steps'], isNum),
        trainerPath: ['trainer'],
        names: hfNames,
      };
    }
    case 'trainer':
    case 'llamafactory': {
      const bf16Flag = boolFlag(['bf16'], 'bf16');
      const fp16Flag = boolFlag(['fp16'], 'fp16');
      const td = fact(root, ['torch_dtype'], isStr);
      if (td?.value === 'bfloat16') precisions.push({ ...td, value: 'bf16', fp16Spelling: 'float16', flag: false });
      const cdPaths: PathSegment[][] = [
        ['bnb_4bit_compute_dtype'],
        ['quantization_config', 'bnb_4bit_compute_dtype'],
        ['bnb_config', 'bnb_4bit_compute_dtype'],
      ];
      const cd = firstFact(root, cdPaths, isStr);
      if (cd && (cd.value === 'bfloat16' || cd.value === 'bf16'))
        precisions.push({ ...cd, value: 'bf16', fp16Spelling: cd.value === 'bf16' ? 'fp16' : 'float16', flag: false });
      const lf = kind === 'llamafactory';
      // The dtype the 4-bit layers actually compute in when no bnb_4bit_compute_dtype is written.
      // LLaMA-Factory sets it from bf16/fp16 and otherwise infers a 16-bit one on any CUDA GPU
      // (hparams/parser.py, model/patcher.py); TRL's ModelConfig passes its (torch_)dtype on.
      const modelDtype = fact(root, ['torch_dtype'], isStr) ?? fact(root, ['dtype'], isStr);
      const impliedNode = lf ? (bf16Flag ?? fp16Flag ?? fact(root, ['quantization_bit'], isNum))?.node : modelDtype?.node;
      const impliedValue = lf ? (bf16Flag?.value ? 'bfloat16' : 'float16') : modelDtype?.value;
      const implied =
        impliedNode && (impliedValue === 'bfloat16' || impliedValue === 'float16') ? { value: impliedValue, node: impliedNode, path: [] } : undefined;
      const computeDtype = cd ?? implied;
      const l4 = lf
        ? fact(root, ['quantization_bit'], isNum)
        : firstFact(root, [['load_in_4bit'], ['quantization_config', 'load_in_4bit'], ['bnb_config', 'load_in_4bit']], isBool);
      const fa = lf ? fact(root, ['flash_attn'], isStr) : fact(root, ['attn_implementation'], isStr);
      return {
        precisions,
        bf16Flag,
        fp16Flag,
        load4bit: l4 && (l4.value === true || l4.value === 4) ? l4 : undefined,
        computeDtype,
        computeDtypePath: cd?.path ?? ['bnb_4bit_compute_dtype'],
        quantStorage: firstFact(root, [['bnb_4bit_quant_storage'], ['quantization_config', 'bnb_4bit_quant_storage']], isStr),
        flashAttention: fa && (fa.value === 'flash_attention_2' || fa.value === 'fa2') ? fa : undefined,
        flashOff: 'sdpa',
        // LLaMA-Factory v1 nests LoRA under peft_config like the trainer YAMLs do.
        loraR: firstFact(
          root,
          lf ? [['lora_rank'], ['peft_config', 'r']] : [['r'], ['lora_r'], ['lora', 'r'], ['lora_config', 'r'], ['peft_config', 'r']],
          isNum,
        ),
        loraAlpha: firstFact(
          root,
          lf
            ? [['lora_alpha'], ['peft_config', 'lora_alpha']]
            : [['lora_alpha'], ['lora', 'lora_alpha'], ['lora_config', 'lora_alpha'], ['peft_config', 'lora_alpha']],
          isNum,
        ),
        loraAlphaKey: 'lora_alpha',
        loadBest: fact(root, ['load_best_model_at_end'], isBool),
        evalStrategy: fact(root, ['eval_strategy'], isStr) ?? fact(root, ['evaluation_strategy'], isStr),
        saveStrategy: fact(root, ['save_strategy'], isStr),
        evalSteps: fact(root, ['eval_steps'], isNum),
        saveSteps: fact(root, ['save_steps'], isNum),
        trainerPath: [],
        names: hfNames,
      };
    }
    case 'axolotl': {
      const bf16Flag = boolFlag(['bf16'], 'bf16');
      const fp16Flag = boolFlag(['fp16'], 'fp16');
      const cd = fact(root, ['bnb_config_kwargs', 'bnb_4bit_compute_dtype'], isStr) ?? fact(root, ['bnb_4bit_compute_dtype'], isStr);
      if (cd && (cd.value === 'bfloat16' || cd.value === 'bf16')) precisions.push({ ...cd, value: 'bf16', fp16Spelling: 'float16', flag: false });
      const l4 = fact(root, ['load_in_4bit'], isBool);
      // Axolotl builds the QLoRA BitsAndBytesConfig with its torch_dtype (loaders/model.py), which
      // resolve_dtype sets from bf16 (true, or auto: bf16 where supported, else fp16), fp16 or
      // load_in_8bit, and float32 only when none of them is on.
      const bfNode = nodeAt(root, ['bf16']);
      const bfOn = bf16Flag?.value === true || (bfNode?.kind === 'scalar' && bfNode.value === 'auto') ? bfNode : undefined;
      const fpOn = fp16Flag?.value === true ? fp16Flag.node : undefined;
      const implied = bfOn ? { value: 'bfloat16', node: bfOn } : fpOn ? { value: 'float16', node: fpOn } : undefined;
      const fa = fact(root, ['flash_attention'], isBool);
      return {
        precisions,
        bf16Flag,
        fp16Flag,
        load4bit: l4?.value ? l4 : undefined,
        computeDtype: cd ?? (implied ? { ...implied, path: [] } : undefined),
        computeDtypePath: ['bnb_4bit_compute_dtype'],
        computeDtypeSetting: (want) => (want === 'bfloat16' ? { path: ['bf16'], value: true } : { path: ['fp16'], value: true }),
        flashAttention: fa?.value ? fa : undefined,
        flashOff: false,
        loraR: fact(root, ['lora_r'], isNum),
        loraAlpha: fact(root, ['lora_alpha'], isNum),
        loraAlphaKey: 'lora_alpha',
        loadBest: fact(root, ['load_best_model_at_end'], isBool),
        evalStrategy: fact(root, ['eval_strategy'], isStr),
        saveStrategy: fact(root, ['save_strategy'], isStr),
        evalSteps: fact(root, ['eval_steps'], isNum),
        saveSteps: fact(root, ['save_steps'], isNum),
        trainerPath: [],
        names: hfNames,
      };
    }
    case 'accelerate': {
      const mp = fact(root, ['mixed_precision'], isStr);
      if (mp && (mp.value === 'bf16' || mp.value === 'fp8')) precisions.push({ ...mp, fp16Spelling: 'fp16', flag: false });
      const dsBf = fact(root, ['deepspeed_config', 'bf16', 'enabled'], isBool);
      if (dsBf?.value) precisions.push({ value: 'bf16', node: dsBf.node, path: dsBf.path, flag: true });
      return { precisions, trainerPath: [], names: hfNames };
    }
    case 'deepspeed': {
      const bf16Flag = fact(root, ['bf16', 'enabled'], isBool);
      const fp16Flag = fact(root, ['fp16', 'enabled'], isBool);
      if (bf16Flag?.value) precisions.push({ value: 'bf16', node: bf16Flag.node, path: bf16Flag.path, flag: true });
      return { precisions, bf16Flag, fp16Flag, trainerPath: [], names: hfNames };
    }
    default:
      return undefined;
  }
}
