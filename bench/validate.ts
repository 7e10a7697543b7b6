// `npm run bench -- validate`: our config validation against yaml-language-server (from npm) driven
// in-process through its language service, on the same text, against the JSON Schema we generate
// from the same zod schema. Goal: ratio of medians <= 0.5 on a 5,000-line config, and p95 < 5 ms on
// a 300-line one. Both sides get a new document version every call, so neither serves a cache.
import { getLanguageService } from 'yaml-language-server/lib/umd/languageservice/yamlLanguageService';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { validateText } from '../src/core/config/validate';
import { jsonSchemaFor } from '../src/core/config/jsonSchemas';
import type { ConfigKind } from '../src/core/config/types';
import { measurePairs, median, percentile, printTable, printVerdict, timeMs } from './lib/pairs';

/** An Axolotl config mixing many datasets: the long configs people really write. */
function axolotlConfig(lines: number): string {
  const out = ['# Axolotl QLoRA config with a long dataset mix', 'base_model: NousResearch/Llama-2-7b-hf', 'adapter: qlora', 'load_in_4bit: true', 'lora_r: 32', 'lora_alpha: 64', 'lora_dropout: 0.05', 'lora_target_linear: true', 'sequence_len: 2048', 'micro_batch_size: 2', 'gradient_accumulation_steps: 4', 'num_epochs: 3', 'learning_rate: 0.0002', 'optimizer: paged_adamw_8bit', 'bf16: auto', 'gradient_checkpointing: true', 'datasets:'];
  for (let i = 0; out.length < lines; i++) {
    out.push(`  - path: org/dataset-${i}`, '    type: alpaca', `    split: train`, `    shards: ${(i % 7) + 1}`, `    ds_type: json  # part ${i}`);
  }
  return out.slice(0, lines).join('\n') + '\n';
}

/** A W&B sweep over many hyperparameters (strict schema, recursive parameters, bound rules). */
function sweepConfig(lines: number): string {
  const out = ['program: scripts/train.py', 'method: bayes', 'metric:', '  goal: minimize', '  name: eval/loss', 'parameters:'];
  for (let i = 0; out.length < lines; i++) {
    if (i % 2 === 0) out.push(`  p_${i}:`, '    distribution: log_uniform_values', '    min: 1e-5', '    max: 1e-3');
    else out.push(`  q_${i}:`, `    values: [${i}, ${i + 1}, ${i + 2}]`, '    # discrete');
  }
  return out.slice(0, lines).join('\n') + '\n';
}

const CASES: ReadonlyArray<{ name: string; kind: ConfigKind; file: string; make: (n: number) => string }> = [
  { name: 'axolotl', kind: 'axolotl', file: 'axolotl.yml', make: axolotlConfig },
  { name: 'sweep', kind: 'sweep', file: 'wandb_sweep.yaml', make: sweepConfig },
];

async function main(): Promise<void> {
  const ls = getLanguageService({
    schemaRequestService: async (uri: string) => { throw new Error(`unexpected schema request ${uri}`); },
    workspaceContext: { resolveRelativePath: (rel: string) => rel },
  } as unknown as Parameters<typeof getLanguageService>[0]);
  ls.configure({
    validate: true, hover: false, completion: false, format: false, isKubernetes: false,
    schemas: CASES.map((c) => ({ uri: `file:///schemas/${c.kind}.schema.json`, fileMatch: [`/**/${c.file}`], schema: jsonSchemaFor(c.kind)! })),
  } as unknown as Parameters<typeof ls.configure>[0]);

  let version = 0;
  const theirs = async (c: (typeof CASES)[number], text: string): Promise<number> => {
    const doc = TextDocument.create(`file:///ws/${c.file}`, 'yaml', ++version, text);
    return (await ls.doValidation(doc, false)).length;
  };
  const ours = (c: (typeof CASES)[number], text: string): number => validateText(text, { fileName: `/ws/${c.file}` }).diagnostics.length;

  // Sanity: both sides see the schema (a planted out-of-range value is reported by each).
  for (const c of CASES) {
    const bad = c.name === 'axolotl' ? axolotlConfig(40).replace('lora_r: 32', 'lora_r: 5000') : sweepConfig(40).replace('method: bayes', 'method: bayesian');
    const o = ours(c, bad);
    const t = await theirs(c, bad);
    if (o === 0 || t === 0) throw new Error(`${c.name}: planted error not seen (ours ${o}, yaml-language-server ${t})`);
  }

  const rows: Array<[string, string | number]> = [];
  const ratios: number[] = [];
  let oursMedian = 0;
  let refMedian = 0;
  for (const c of CASES) {
    const text = c.make(5000);
    for (let i = 0; i < 3; i++) { ours(c, text); await theirs(c, text); } // warm both
    const r = await measurePairs(15, () => timeMs(() => ours(c, text)), () => timeMs(() => theirs(c, text)));
    const om = median(r.ours);
    const rm = median(r.reference);
    rows.push([`${c.name} 5,000 lines: ours median (ms)`, om], [`${c.name} 5,000 lines: yaml-language-server median (ms)`, rm], [`${c.name} ratio`, om / rm]);
    // The verdict reports the worse (higher) of the two ratios.
    if (ratios.length === 0 || om / rm > Math.max(...ratios)) { oursMedian = om; refMedian = rm; }
    ratios.push(om / rm);
  }

  const small = sweepConfig(300);
  const smallAx = axolotlConfig(300);
  for (let i = 0; i < 20; i++) { ours(CASES[1]!, small); ours(CASES[0]!, smallAx); }
  const times: number[] = [];
  const timesAx: number[] = [];
  for (let i = 0; i < 300; i++) {
    times.push(await timeMs(() => ours(CASES[1]!, small)));
    timesAx.push(await timeMs(() => ours(CASES[0]!, smallAx)));
  }
  const p95 = Math.max(percentile(times, 95), percentile(timesAx, 95));
  rows.push(['300-line sweep: p95 (ms)', percentile(times, 95)], ['300-line axolotl: p95 (ms)', percentile(timesAx, 95)]);
  printTable('validate: ours vs yaml-language-server (same text, same schema, A B A B, 15 pairs)', rows);
  printVerdict({ bench: 'validate', metric: 'median ms to validate a 5,000-line config (worse of axolotl, sweep)', ours: oursMedian, reference: refMedian, goal: '<= 0.5', checks: [{ name: 'p95 ms to validate a 300-line config', value: p95, goal: '< 5' }] });
}

void main();
