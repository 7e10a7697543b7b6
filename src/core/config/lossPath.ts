// Whether the runner's loss holds the full logits, from the spec: what the VRAM estimate's logits term depends on.
// On a CUDA GPU `speed: auto` turns on Liger's kernels for the families liger-kernel patches
// (python-runner/remote_finetune/speed.py), and Liger's fused linear cross-entropy computes the loss without the
// (batch, sequence, vocabulary) logits; Unsloth's backend fuses it as well. Elsewhere transformers' loss upcasts the
// whole logits to fp32 (12 B per token per vocabulary entry). On the H200 (2026-11-28, Llama 3.1 8B QLoRA, batch 2 x
// 2048, Liger on) the estimate with the logits term was 46% over the measured peak, the logits term being 6 GiB of it.
import type { DocNode } from './ast';
import { scalarAt } from './ast';
import type { FileAccess } from './types';
import { textOf } from './types';
import { dirName, join } from '../pathText';

/** Model types liger-kernel patches: speed.py's LIGER_FAMILIES (a unit test keeps the two lists equal). */
export const LIGER_FAMILIES: ReadonlySet<string> = new Set([
  'gemma',
  'gemma2',
  'gemma3',
  'gemma3_text',
  'glm4',
  'granite',
  'llama',
  'llava',
  'mistral',
  'mixtral',
  'mllama',
  'mllama_text_model',
  'olmo2',
  'paligemma',
  'phi3',
  'qwen2',
  'qwen2_5_vl',
  'qwen2_vl',
  'qwen3',
  'qwen3_moe',
]);

// Hub ids name their family; the first match wins (qwen3 before qwen2, gemma-3 before gemma).
const ID_FAMILIES: ReadonlyArray<readonly [RegExp, string]> = [
  [/mixtral/i, 'mixtral'],
  [/mistral/i, 'mistral'],
  [/llama/i, 'llama'],
  [/qwen-?3/i, 'qwen3'],
  [/qwen/i, 'qwen2'],
  [/gemma-?3/i, 'gemma3'],
  [/gemma-?2/i, 'gemma2'],
  [/gemma/i, 'gemma'],
  [/phi-?3|phi-?4/i, 'phi3'],
  [/granite/i, 'granite'],
  [/olmo-?2/i, 'olmo2'],
];

/** The model's type: config.json's model_type when model.config_path is readable, else guessed from model.id. */
export function modelFamily(root: DocNode | undefined, fileName: string, files: FileAccess | undefined): string | undefined {
  const cfg = scalarAt(root, ['model', 'config_path']);
  if (typeof cfg === 'string' && files) {
    const text = textOf(files.read(join(dirName(fileName), cfg)));
    try {
      const t = text !== undefined ? (JSON.parse(text) as { model_type?: unknown }).model_type : undefined;
      if (typeof t === 'string') return t;
    } catch {
      // an unreadable config.json: the id below still names the family
    }
  }
  const id = scalarAt(root, ['model', 'id']);
  if (typeof id !== 'string') return undefined;
  return ID_FAMILIES.find(([re]) => re.test(id))?.[1];
}

/** True when the run's loss never holds the full logits (Liger's fused cross-entropy or Unsloth's), and why. */
export function fusedLoss(root: DocNode | undefined, fileName: string, files: FileAccess | undefined): { fused: boolean; why: string } {
  if (scalarAt(root, ['trainer', 'backend']) === 'unsloth') return { fused: true, why: "Unsloth's fused cross-entropy" };
  const liger = scalarAt(root, ['trainer', 'liger']);
  if (liger === false) return { fused: false, why: 'trainer.liger is false' };
  if (liger !== true && scalarAt(root, ['speed']) === 'off') return { fused: false, why: 'speed is off' };
  const family = modelFamily(root, fileName, files);
  if (!family || !LIGER_FAMILIES.has(family)) return { fused: false, why: `liger-kernel does not patch model type ${family ?? 'unknown'}` };
  return { fused: true, why: `Liger's fused linear cross-entropy (${family})` };
}
