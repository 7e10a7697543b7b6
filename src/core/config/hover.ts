// Hover text for the key or value under the cursor, from the zod field descriptions (the same text
// the generated JSON Schemas carry), plus allowed values and bounds. What the document wrote (its keys) is
// escaped: a key can be any text, `[x](command:…)` included, and the hover renders markdown.
import type { DocNode, PathSegment, PairNode } from './ast';
import { keyText } from './ast';
import { detectKind, syntaxOf } from './kinds';
import { parseConfigText } from './parse';
import { KINDS } from './registry';
import { allowedValues, describe, numberBounds, schemaAt } from './zodWalk';
import { parseDotenv } from './dotenv';
import type { ConfigKind } from './types';
import { joinMarkdown, markdownEscaped, ourMarkdown } from '../text/linkSafe';
import type { SafeMarkdown } from '../text/linkSafe';

export interface HoverInfo {
  readonly start: number;
  readonly end: number;
  readonly markdown: SafeMarkdown;
}

const ENV_DOCS: Record<string, string> = {
  HF_TOKEN: 'Hugging Face access token (gated models, pushes). Delivered to the host in a 0600 file, never on a command line.',
  HUGGINGFACE_TOKEN: 'Hugging Face access token (older name of HF_TOKEN).',
  WANDB_API_KEY: 'Weights & Biases API key, needed when W&B reporting is on.',
  LEARNING_RATE: 'Learning-rate override, 1e-6 to 1e-2.',
  BATCH_SIZE: 'Per-device batch size override, a positive integer.',
  GRAD_ACCUM: 'Gradient accumulation override, a positive integer.',
  MAX_STEPS: 'Maximum optimizer steps, a positive integer.',
  CUDA_VISIBLE_DEVICES: 'GPUs the process may see: comma-separated indices (0,1) or GPU-/MIG- UUIDs, no spaces.',
  PYTORCH_CUDA_ALLOC_CONF: 'PyTorch CUDA allocator options, option:value pairs separated by commas (max_split_size_mb:512,expandable_segments:True).',
  ACCELERATE_CONFIG: 'Path of the accelerate config YAML; must exist.',
  TOKENIZERS_PARALLELISM: 'true/false: silences the tokenizers fork warning when false.',
};

function containing(n: DocNode | undefined, offset: number, path: PathSegment[]): { pair?: PairNode; path: PathSegment[]; onKey: boolean } | undefined {
  if (!n) return undefined;
  if (n.kind === 'map') {
    for (const p of n.pairs) {
      if (offset >= p.key.start && offset <= p.key.end) return { pair: p, path: [...path, keyText(p)], onKey: true };
      const v = p.value;
      if (v && offset >= v.start && offset <= v.end) {
        const deeper = containing(v, offset, [...path, keyText(p)]);
        return deeper ?? { pair: p, path: [...path, keyText(p)], onKey: false };
      }
    }
  } else if (n.kind === 'seq') {
    for (let i = 0; i < n.items.length; i++) {
      const it = n.items[i]!;
      if (offset >= it.start && offset <= it.end) return containing(it, offset, [...path, i]) ?? { path: [...path, i], onKey: false };
    }
  }
  return undefined;
}

export function hoverAt(text: string, fileName: string, offset: number, kindHint?: ConfigKind): HoverInfo | undefined {
  const syntax = syntaxOf(fileName);
  if (syntax === 'dotenv') {
    const e = parseDotenv(text).entries.find((x) => offset >= x.keyStart && offset <= x.keyEnd);
    const doc = e ? ENV_DOCS[e.key] : undefined;
    return e && doc
      ? { start: e.keyStart, end: e.keyEnd, markdown: joinMarkdown([ourMarkdown(`**${markdownEscaped(e.key)}**`), ourMarkdown(doc)], '\n\n') }
      : undefined;
  }
  if (syntax === 'other') return undefined;
  const { root } = parseConfigText(text, syntax === 'json' ? 'json' : 'yaml');
  const kind = kindHint ?? detectKind(fileName, root);
  const schema = kind ? KINDS[kind].schema : undefined;
  if (!schema) return undefined;
  const hit = containing(root, offset, []);
  if (!hit?.pair) return undefined;
  const field = schemaAt(schema, hit.path);
  const desc = describe(field);
  if (!desc) return undefined;
  // Descriptions, titles, allowed values and bounds are the schemas' own text; the key path is the document's.
  const keyPath = markdownEscaped(hit.path.filter((p) => typeof p === 'string').join('.'));
  const lines = [ourMarkdown(`**${keyPath}** — ${KINDS[kind!].title}`), ourMarkdown(desc)];
  const values = allowedValues(field);
  if (values.length > 0 && values.length <= 40) lines.push(ourMarkdown(`Allowed: ${values.map((v) => `\`${v}\``).join(', ')}`));
  const b = numberBounds(field);
  if (b && (b.min !== undefined || b.max !== undefined)) lines.push(ourMarkdown(`Range: ${b.min ?? '−∞'} … ${b.max ?? '∞'}${b.int ? ' (integer)' : ''}`));
  const range = hit.onKey ? hit.pair.key : (hit.pair.value ?? hit.pair.key);
  return { start: range.start, end: range.end, markdown: joinMarkdown(lines, '\n\n') };
}
