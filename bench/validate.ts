// `npm run bench -- validate`: our config validation against yaml-language-server (from npm) driven
// in-process through its language service, on the same text, against the JSON Schema we generate
// from the same zod schema. Goal: ratio of medians <= 0.5 on 5,000-line configs, and p95 < 5 ms on
// 300-line ones. Both sides get a new document version every call, so neither serves a cache.
//
// Every timed text has one planted error near its end, and every timed call of each tool must report it
// (a validator that stopped early, or one that found nothing, would be fast for nothing). Three cases: an
// Axolotl config and a W&B sweep in the block-style subset our hand-written parser (fastYaml.ts) takes, and
// an Axolotl config with anchors, merge keys and block scalars that only the full YAML parser reads. Each is
// also timed with the fast path off, so the verdict shows what fastYaml.ts buys.
import { getLanguageService } from 'yaml-language-server/lib/umd/languageservice/yamlLanguageService';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { validateText } from '../src/core/config/validate';
import { jsonSchemaFor } from '../src/core/config/jsonSchemas';
import type { ConfigKind } from '../src/core/config/types';
import { measurePairs, median, percentile, printTable, printVerdict, timeMs } from './lib/pairs';
import type { PairResult } from './lib/pairs';

const AXOLOTL_HEAD = [
  '# Axolotl QLoRA config with a long dataset mix',
  'base_model: NousResearch/Llama-2-7b-hf',
  'adapter: qlora',
  'load_in_4bit: true',
  'lora_r: 32',
  'lora_alpha: 64',
  'lora_dropout: 0.05',
  'lora_target_linear: true',
  'sequence_len: 2048',
  'micro_batch_size: 2',
  'gradient_accumulation_steps: 4',
  'num_epochs: 3',
  'learning_rate: 0.0002',
  'optimizer: paged_adamw_8bit',
  'bf16: auto',
  'gradient_checkpointing: true',
];

/** An Axolotl config mixing many datasets: the long configs people really write. */
function axolotlConfig(lines: number): string {
  const out = [...AXOLOTL_HEAD, 'datasets:'];
  for (let i = 0; out.length < lines; i++) {
    out.push(`  - path: org/dataset-${i}`, '    type: alpaca', `    split: train`, `    shards: ${(i % 7) + 1}`, `    ds_type: json  # part ${i}`);
  }
  return out.slice(0, lines).join('\n') + '\n';
}

/** The same mix written with what only the full YAML parser reads: an anchor merged into every dataset, block scalars. */
function axolotlAnchored(lines: number): string {
  const out = [
    ...AXOLOTL_HEAD,
    'chat_template_jinja: |',
    '  {% for m in messages %}{{ m.role }}: {{ m.content }}',
    '  {% endfor %}',
    'dataset_defaults: &ds',
    '  type: alpaca',
    '  split: train',
    'datasets:',
  ];
  for (let i = 0; out.length < lines; i++) {
    out.push(`  - path: org/dataset-${i}`, '    <<: *ds', `    shards: ${(i % 7) + 1}`, '    ds_type: >-', `      json`);
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

interface Case {
  readonly name: string;
  readonly kind: ConfigKind;
  readonly file: string;
  readonly make: (n: number) => string;
  /** The planted error: the last `from` in the text becomes `to` (a value both tools' schemas reject). */
  readonly plant: { readonly from: string; readonly to: string };
}

/** Replaces the last occurrence of `from` (near the end of the text) with `to`. */
function planted(c: Case, text: string): string {
  const at = text.lastIndexOf(c.plant.from);
  if (at < 0) throw new Error(`no "${c.plant.from}" to plant an error in`);
  return text.slice(0, at) + c.plant.to + text.slice(at + c.plant.from.length);
}

const CASES: readonly Case[] = [
  { name: 'axolotl', kind: 'axolotl', file: 'axolotl.yml', make: axolotlConfig, plant: { from: 'path: org/dataset-', to: 'path: 4' } },
  {
    name: 'sweep',
    kind: 'sweep',
    file: 'wandb_sweep.yaml',
    make: sweepConfig,
    plant: { from: 'distribution: log_uniform_values', to: 'distribution: log_uniformish' },
  },
  { name: 'axolotl-anchors', kind: 'axolotl', file: 'axolotl.yml', make: axolotlAnchored, plant: { from: 'path: org/dataset-', to: 'path: 4' } },
];

/** Line number (0-based) of the planted text, and its offset range. */
function plantedAt(text: string, c: Case): { line: number; start: number; end: number } {
  const start = text.lastIndexOf(c.plant.to);
  const end = text.indexOf('\n', start);
  return { line: text.slice(0, start).split('\n').length - 1, start: text.lastIndexOf('\n', start) + 1, end };
}

const P95_WARMUP = 200;

async function main(): Promise<void> {
  const ls = getLanguageService({
    schemaRequestService: async (uri: string) => {
      throw new Error(`unexpected schema request ${uri}`);
    },
    workspaceContext: { resolveRelativePath: (rel: string) => rel },
  } as unknown as Parameters<typeof getLanguageService>[0]);
  ls.configure({
    validate: true,
    hover: false,
    completion: false,
    format: false,
    isKubernetes: false,
    schemas: [...new Set(CASES.map((c) => c.kind))].map((kind) => ({
      uri: `file:///schemas/${kind}.schema.json`,
      fileMatch: [`/**/${CASES.find((c) => c.kind === kind)!.file}`],
      schema: jsonSchemaFor(kind)!,
    })),
  } as unknown as Parameters<typeof ls.configure>[0]);

  let version = 0;
  /** yaml-language-server's diagnostics; throws unless the planted error's line is among them. */
  const theirs = async (c: Case, text: string, at: { line: number }): Promise<number> => {
    const doc = TextDocument.create(`file:///ws/${c.file}`, 'yaml', ++version, text);
    const d = await ls.doValidation(doc, false);
    if (!d.some((x) => x.range.start.line === at.line)) throw new Error(`${c.name}: yaml-language-server missed the planted error on line ${at.line + 1}`);
    return d.length;
  };
  /** Ours, with or without the fast path; throws unless the planted error is reported. */
  const ours = (c: Case, text: string, at: { start: number; end: number }, fastYaml: boolean): number => {
    // No size limit for the full parser: what the editor's background check and the CLI run on a big file.
    const d = validateText(text, { fileName: `/ws/${c.file}`, fastYaml, libraryParseLimit: Infinity }).diagnostics;
    if (!d.some((x) => x.start >= at.start && x.start < at.end))
      throw new Error(`${c.name}: we missed the planted error (fast path ${fastYaml ? 'on' : 'off'}): ${JSON.stringify(d.slice(0, 3))}`);
    return d.length;
  };

  const rows: Array<[string, string | number]> = [];
  // Small files, as typed: the fast path for the two subset cases, the full parser for the anchored one. Timed first,
  // in a heap that holds only our own work (after the 5,000-line pairs, collections of yaml-language-server's garbage
  // landed in our p95), and after P95_WARMUP calls, what a few minutes of typing in one file makes: the JIT is still
  // compiling through the first few dozen, which a p95 over 300 calls would otherwise report as typing latency.
  const p95 = (c: Case, fastYaml: boolean): number => {
    const small = planted(c, c.make(300));
    const at = plantedAt(small, c);
    for (let i = 0; i < P95_WARMUP; i++) ours(c, small, at, fastYaml);
    const times: number[] = [];
    for (let i = 0; i < 300; i++) {
      const t0 = performance.now();
      ours(c, small, at, fastYaml);
      times.push(performance.now() - t0);
    }
    return percentile(times, 95);
  };
  const small = CASES.map((c) => ({ name: c.name, on: p95(c, true), off: p95(c, false) }));
  type CaseResult = { o: number; r: number; name: string; samples: PairResult };
  const ratio = { on: [] as CaseResult[], off: [] as CaseResult[] };
  for (const c of CASES) {
    const text = planted(c, c.make(5000));
    const at = plantedAt(text, c);
    for (let i = 0; i < 3; i++) {
      ours(c, text, at, true);
      ours(c, text, at, false);
      await theirs(c, text, at);
    } // warm all three
    for (const fast of [true, false]) {
      const r = await measurePairs(
        15,
        () => timeMs(() => ours(c, text, at, fast)),
        () => timeMs(() => theirs(c, text, at)),
      );
      const om = median(r.ours);
      const rm = median(r.reference);
      const label = `${c.name} 5,000 lines, fast path ${fast ? 'on' : 'off'}`;
      rows.push([`${label}: ours median (ms)`, om], [`${label}: yaml-language-server median (ms)`, rm], [`${label}: ratio`, om / rm]);
      (fast ? ratio.on : ratio.off).push({ o: om, r: rm, name: c.name, samples: r });
    }
  }

  for (const s of small) rows.push([`300-line ${s.name}: p95 fast path on (ms)`, s.on], [`300-line ${s.name}: p95 fast path off (ms)`, s.off]);
  printTable('validate: ours vs yaml-language-server (same text with one planted error near its end, same schema, A B A B, 15 pairs)', rows);

  const worst = (xs: typeof ratio.on): CaseResult => xs.reduce((a, b) => (b.o / b.r > a.o / a.r ? b : a));
  const on = worst(ratio.on);
  const off = worst(ratio.off);
  printVerdict({
    bench: 'validate',
    metric: `median ms to validate a 5,000-line config with a planted error (worst of ${CASES.map((c) => c.name).join(', ')})`,
    ours: on.o,
    reference: on.r,
    goal: '<= 0.5',
    checks: [{ name: 'p95 ms to validate a 300-line config (worst case)', value: Math.max(...small.map((s) => s.on)), goal: '< 5' }],
    samples: on.samples,
    covers: ['src/core/config'],
    referenceCommand: 'yaml-language-server doValidation, in this process, same text and same JSON schema',
    extra: {
      worst_case: on.name,
      ...Object.fromEntries(ratio.on.map((x) => [`ratio_${x.name.replace(/-/g, '_')}`, Math.round((x.o / x.r) * 1000) / 1000])),
      no_fast_path_ratio: Math.round((off.o / off.r) * 1000) / 1000,
      no_fast_path_worst_case: off.name,
      no_fast_path_p95_ms: Math.round(Math.max(...small.map((s) => s.off)) * 100) / 100,
      planted_error_found: true,
      p95_warmup_calls: P95_WARMUP,
    },
  });
}

void main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
