// What a quick fix proposes for a number out of range: a value people actually train with, never
// the range bound (a learning rate of 1 is inside 1e-8..1 and ruins any run).
import type { DocNode, PathSegment } from './ast';
import { nodeAt, scalarAt } from './ast';
import type { ConfigKind } from './types';
import type { Syntax } from './edits';

export interface SensibleValue {
  readonly value: number;
  /** As written into the file: YAML read by PyYAML (YAML 1.1) needs the dot in 2.0e-4, or it is a string. */
  readonly text: string;
  /** Why this value, for the fix title: "usual for LoRA/QLoRA". */
  readonly why: string;
}

export const LORA_LEARNING_RATE = 2e-4;
export const FULL_LEARNING_RATE = 2e-5;
/** Above this, LoRA/QLoRA training diverges in practice (the usual range is 1e-5..5e-4). */
export const LORA_LEARNING_RATE_WARN = 1e-2;

/** Where each kind keeps its learning rate. */
export function learningRatePath(kind: ConfigKind): readonly PathSegment[] | undefined {
  switch (kind) {
    case 'runspec':
      return ['trainer', 'learning_rate'];
    case 'trainer':
    case 'axolotl':
    case 'llamafactory':
      return ['learning_rate'];
    default:
      return undefined;
  }
}

/**
 * Whether the config trains an adapter (LoRA/QLoRA) rather than every weight: true, false, or
 * undefined when it does not say.
 */
export function trainsAdapter(kind: ConfigKind, root: DocNode | undefined): boolean | undefined {
  switch (kind) {
    case 'runspec': {
      const m = scalarAt(root, ['method']);
      if (m === 'qlora' || m === 'lora-bf16' || m === 'dpo' || m === 'orpo') return true; // dpo/orpo train a LoRA adapter
      if (m === 'full') return false;
      return nodeAt(root, ['lora']) !== undefined ? true : undefined;
    }
    case 'axolotl': {
      const a = scalarAt(root, ['adapter']);
      return a === 'lora' || a === 'qlora' ? true : nodeAt(root, ['adapter']) === undefined ? false : undefined;
    }
    // LLaMA-Factory's finetuning_type defaults to lora (hparams/finetuning_args.py).
    case 'llamafactory': {
      const t = scalarAt(root, ['finetuning_type']);
      return t === undefined || t === 'lora' ? true : t === 'full' || t === 'freeze' ? false : undefined;
    }
    case 'trainer': {
      const peft = [['use_peft'], ['lora_r'], ['r'], ['lora'], ['lora_config'], ['peft_config'], ['lora_alpha'], ['load_in_4bit'], ['quantization_config']];
      return peft.some((p) => {
        const n = nodeAt(root, p);
        return n !== undefined && !(n.kind === 'scalar' && n.value === false);
      })
        ? true
        : undefined;
    }
    default:
      return undefined;
  }
}

/** A small float as the file should hold it: 2e-4 (JSON, the run spec) or 2.0e-4 (YAML PyYAML reads). */
export function numberText(v: number, kind: ConfigKind, syntax: Syntax): string {
  const [m, e] = v.toExponential().split('e') as [string, string];
  const exp = Number(e);
  // The run spec is read by our own YAML 1.2 parser (2e-4 is a number there); trainer YAMLs go
  // through PyYAML, whose float needs a dot.
  if (syntax === 'json' || kind === 'runspec') return `${m}e${exp}`;
  return `${m.includes('.') ? m : `${m}.0`}e${exp}`;
}

/** The value the range fix of `path` proposes, or undefined to keep the bound. */
export function sensibleValue(kind: ConfigKind, root: DocNode | undefined, path: readonly PathSegment[], syntax: Syntax): SensibleValue | undefined {
  const lr = learningRatePath(kind);
  if (lr && lr.length === path.length && lr.every((s, i) => s === path[i])) {
    const adapter = trainsAdapter(kind, root) !== false;
    const value = adapter ? LORA_LEARNING_RATE : FULL_LEARNING_RATE;
    return { value, text: numberText(value, kind, syntax), why: adapter ? 'usual for LoRA/QLoRA' : 'usual for full fine-tuning' };
  }
  return undefined;
}
