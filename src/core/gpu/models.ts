// Model shapes the VRAM estimate needs, from the models' published config.json files on the Hub.
// A local config.json (model.config_path) wins over this table; a size in the id ("…-7B") is the last resort.

export interface ModelShape {
  /** Total parameters. */
  readonly params: number;
  readonly hidden: number;
  readonly layers: number;
  readonly intermediate: number;
  /** Key/value projection width: num_key_value_heads × head_dim (= hidden without GQA). */
  readonly kvDim: number;
  readonly vocab: number;
  readonly heads: number;
  readonly source: string;
}

const m = (params: number, hidden: number, layers: number, intermediate: number, kvDim: number, vocab: number, heads: number, source: string): ModelShape => ({
  params,
  hidden,
  layers,
  intermediate,
  kvDim,
  vocab,
  heads,
  source,
});

const TABLE: ReadonlyArray<readonly [RegExp, ModelShape]> = [
  [/llama-3(\.\d)?-8b|meta-llama-3-8b/i, m(8.03e9, 4096, 32, 14336, 1024, 128256, 32, 'meta-llama/Llama-3.1-8B config.json')],
  [/llama-3(\.\d)?-70b|meta-llama-3-70b/i, m(70.6e9, 8192, 80, 28672, 1024, 128256, 64, 'meta-llama/Llama-3.1-70B config.json')],
  [/llama-2-7b/i, m(6.74e9, 4096, 32, 11008, 4096, 32000, 32, 'meta-llama/Llama-2-7b-hf config.json')],
  [/llama-2-13b/i, m(13.0e9, 5120, 40, 13824, 5120, 32000, 40, 'meta-llama/Llama-2-13b-hf config.json')],
  [/llama-2-70b/i, m(69.0e9, 8192, 80, 28672, 1024, 32000, 64, 'meta-llama/Llama-2-70b-hf config.json')],
  [/llama-65b|llama-1-65b/i, m(65.2e9, 8192, 80, 22016, 8192, 32000, 64, 'huggyllama/llama-65b config.json (QLoRA paper base)')],
  [/llama-33b|llama-30b/i, m(32.5e9, 6656, 60, 17920, 6656, 32000, 52, 'huggyllama/llama-30b config.json')],
  [/qwen2(\.5)?-vl-7b/i, m(8.29e9, 3584, 28, 18944, 512, 152064, 28, 'Qwen/Qwen2-VL-7B-Instruct config.json')],
  [/qwen2(\.5)?-(audio-)?7b/i, m(7.62e9, 3584, 28, 18944, 512, 152064, 28, 'Qwen/Qwen2-7B config.json')],
  [/qwen2(\.5)?-14b/i, m(14.8e9, 5120, 48, 13824, 1024, 152064, 40, 'Qwen/Qwen2.5-14B config.json')],
  [/qwen2(\.5)?-1\.5b/i, m(1.54e9, 1536, 28, 8960, 256, 151936, 12, 'Qwen/Qwen2.5-1.5B config.json')],
  [/qwen2(\.5)?-0\.5b/i, m(0.49e9, 896, 24, 4864, 128, 151936, 14, 'Qwen/Qwen2.5-0.5B config.json')],
  [/mistral-7b/i, m(7.24e9, 4096, 32, 14336, 1024, 32000, 32, 'mistralai/Mistral-7B-v0.1 config.json')],
  [/gemma-3-4b/i, m(4.3e9, 2560, 34, 10240, 1024, 262208, 8, 'google/gemma-3-4b-it config.json')],
  [/gemma-2-9b/i, m(9.24e9, 3584, 42, 14336, 2048, 256000, 16, 'google/gemma-2-9b config.json')],
  [/phi-2\b/i, m(2.78e9, 2560, 32, 10240, 2560, 51200, 32, 'microsoft/phi-2 config.json')],
  [/tinyllama/i, m(1.1e9, 2048, 22, 5632, 256, 32000, 32, 'TinyLlama/TinyLlama-1.1B config.json')],
];

export function lookupModel(id: string): ModelShape | undefined {
  for (const [re, shape] of TABLE) if (re.test(id)) return shape;
  return undefined;
}

/** Parameters in a transformer decoder with SwiGLU MLP (Llama-style), untied output head. */
export function paramsFromShape(hidden: number, layers: number, intermediate: number, kvDim: number, vocab: number, tied: boolean): number {
  const attn = 2 * hidden * hidden + 2 * hidden * kvDim;
  const mlp = 3 * hidden * intermediate;
  return layers * (attn + mlp + 2 * hidden) + vocab * hidden * (tied ? 1 : 2);
}

/** A shape from config.json text (text_config for vision-language models), or undefined. */
export function shapeFromConfigJson(text: string, source: string): ModelShape | undefined {
  let j: unknown;
  try {
    j = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!j || typeof j !== 'object') return undefined;
  const root = j as Record<string, unknown>;
  const c = root.text_config && typeof root.text_config === 'object' ? { ...root, ...(root.text_config as Record<string, unknown>) } : root;
  const num = (k: string): number | undefined => (typeof c[k] === 'number' && Number.isFinite(c[k]) && (c[k] as number) > 0 ? (c[k] as number) : undefined);
  const hidden = num('hidden_size') ?? num('n_embd') ?? num('d_model');
  const layers = num('num_hidden_layers') ?? num('n_layer') ?? num('num_layers');
  if (!hidden || !layers) return undefined;
  const heads = num('num_attention_heads') ?? num('n_head') ?? Math.max(1, Math.round(hidden / 128));
  const kvHeads = num('num_key_value_heads') ?? heads;
  const headDim = num('head_dim') ?? hidden / heads;
  const intermediate = num('intermediate_size') ?? num('n_inner') ?? 4 * hidden;
  const vocab = num('vocab_size') ?? 32000;
  const tied = c.tie_word_embeddings === true;
  const kvDim = kvHeads * headDim;
  return { params: paramsFromShape(hidden, layers, intermediate, kvDim, vocab, tied), hidden, layers, intermediate, kvDim, vocab, heads, source };
}

/** Last resort: "…-7B" in the id, with Llama-like proportions (h ≈ ∛(P·128/12), Kaplan et al. 2020 P ≈ 12·L·h²). */
export function shapeFromName(id: string): ModelShape | undefined {
  const mm = /(?:^|[^0-9.])(\d+(?:\.\d+)?)\s*[bB](?![a-zA-Z])/.exec(id);
  if (!mm) return undefined;
  const params = Number(mm[1]) * 1e9;
  if (!(params > 0) || params > 2e12) return undefined;
  const hidden = Math.round(Math.cbrt((params * 128) / 12) / 128) * 128 || 128;
  const layers = Math.max(1, Math.round(hidden / 128));
  return {
    params,
    hidden,
    layers,
    intermediate: Math.round((hidden * 8) / 3),
    kvDim: hidden,
    vocab: 32000,
    heads: Math.max(1, hidden / 128),
    source: `size in the name (${mm[1]}B)`,
  };
}
