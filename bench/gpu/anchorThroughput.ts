// Issue 34's throughput against the published anchors (bench/gpu/throughput.py writes bench/gpu/throughput-<gpu>-<date>.json):
// parsed, checked and rendered as the README's "trainer speed" table by scripts/gpu-anchor-table.ts. Figures are never
// typed by hand: test/unit/gpu/anchorThroughput.test.ts fails when the README block differs from what the files give.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { BENCH_DIR } from './vramCheck';

export const ANCHOR_README_START = '<!-- gpu-anchor-throughput (npm run bench:gpu-anchors -- --write-readme) -->';
export const ANCHOR_README_END = '<!-- /gpu-anchor-throughput -->';
export const VARIANTS = ['builtin-default', 'builtin-fast', 'trl-sft', 'unsloth'] as const;
export const RUN_COMMAND = 'bash bench/gpu/device_run_34.sh 540';

const caseRecord = z.looseObject({
  variant: z.enum(VARIANTS),
  status: z.string(),
  why: z.string().optional(),
  timed_tokens_per_second: z.number().positive().nullable().optional(),
  timed_steps: z.number().int().optional(),
  cuda_max_memory_reserved_mib: z.number().positive().nullable().optional(),
});
const check = z.object({ value: z.number().nullable(), goal: z.string(), pass: z.boolean().nullable() });
const anchor = z.looseObject({
  anchor: z.string(),
  model: z.string(),
  method: z.string(),
  seq_len: z.number().int().positive(),
  batch: z.number().int().positive(),
  gradient_accumulation: z.number().int().positive(),
  lora_r: z.number().int().positive(),
  source: z.string(),
  cases: z.array(caseRecord),
  verdict: z.object({ checks: z.record(z.string(), check), pass: z.boolean().nullable() }),
});
export const anchorFile = z.looseObject({
  kind: z.literal('gpu-throughput'),
  issue: z.literal(34),
  dry_run: z.boolean(),
  gpu: z.string(),
  date: z.string(),
  warmup_steps: z.number().int().min(5),
  timed_steps: z.number().int().min(20),
  host: z.looseObject({ driver_version: z.string().nullable().optional() }),
  anchors: z.array(anchor),
  pass: z.boolean().nullable(),
});
export type AnchorFile = z.infer<typeof anchorFile> & { readonly path: string };

export function parseAnchorFile(text: string, path: string): AnchorFile {
  const r = anchorFile.safeParse(JSON.parse(text));
  if (!r.success) throw new Error(`${path}: not an issue-34 throughput file: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return { ...r.data, path };
}

/** The committed issue-34 files: throughput-<gpu>-<date>.json whose `issue` is 34 (issue 33's driver writes the same name pattern). */
export function anchorFiles(dir = BENCH_DIR): string[] {
  return readdirSync(dir)
    .filter((f) => /^throughput-.+\.json$/.test(f))
    .sort()
    .map((f) => join(dir, f))
    .filter((p) => (JSON.parse(readFileSync(p, 'utf8')) as { issue?: unknown }).issue === 34);
}

const cell = (c: z.infer<typeof caseRecord> | undefined): string => {
  if (!c) return 'not run';
  if (c.status !== 'ok' || !c.timed_tokens_per_second) return `${c.status}${c.why ? `: ${(c.why.split(' (')[0] ?? '').slice(0, 80)}` : ''}`;
  const mem = c.cuda_max_memory_reserved_mib ? `, ${(c.cuda_max_memory_reserved_mib / 1024).toFixed(1)} GiB` : '';
  return `${Math.round(c.timed_tokens_per_second)} tok/s${mem}`;
};
const ratio = (x: z.infer<typeof check> | undefined): string =>
  !x || x.value === null ? 'n/a' : `${x.value.toFixed(2)} (goal ${x.goal}: ${x.pass ? 'pass' : 'fail'})`;

export function renderAnchorTable(files: readonly AnchorFile[]): string {
  if (files.length === 0) {
    return [
      `Not measured yet: no GPU has been lent to this work. The benchmark is ready in one command on one H100 or H200 (\`${RUN_COMMAND}\`, the packed`,
      'wheels carried; `DRY=1` runs the same code path on the CPU with a tiny model). It runs each case alone on the GPU, 5 warm-up then 20 timed',
      "steps: Unsloth's Llama 3.1 8B QLoRA recipe (r 32, batch 2, accumulation 4, sequence 2048) and LLaMA-Factory's LLaMA2-7B LoRA recipe",
      '(r 8, batch 4, accumulation 2, length 1024), each as the built-in default, the built-in fast path, plain TRL SFT and Unsloth.',
    ].join('\n');
  }
  const lines = [
    '| GPU (driver, date) | recipe | built-in default | built-in fast | TRL SFT (HF baseline) | Unsloth | fast / Unsloth tokens | fast / Unsloth memory | fast / HF | pass |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const f of files) {
    for (const a of f.anchors) {
      const by = new Map(a.cases.map((c) => [c.variant, c]));
      const ch = a.verdict.checks;
      lines.push(
        `| ${f.gpu}${f.dry_run ? ' (CPU dry run)' : ''} (${f.host.driver_version ?? 'driver ?'}, ${f.date}) | ${a.model} ${a.method} r ${a.lora_r}, ` +
          `b ${a.batch} x ${a.gradient_accumulation}, seq ${a.seq_len} | ${VARIANTS.map((v) => cell(by.get(v))).join(' | ')} | ` +
          `${ratio(ch.fast_vs_unsloth_tokens)} | ${ratio(ch.fast_vs_unsloth_memory)} | ${ratio(ch.fast_vs_hf_baseline_tokens)} | ` +
          `${a.verdict.pass === null ? 'not all measured' : a.verdict.pass ? 'pass' : 'fail'} |`,
      );
    }
  }
  lines.push('', `Tokens/s over ${files[0]!.timed_steps} timed steps after ${files[0]!.warmup_steps} warm-up steps; memory is torch's peak reserved.`);
  return lines.join('\n');
}

export function withAnchorTable(readme: string, table: string): string {
  const a = readme.indexOf(ANCHOR_README_START);
  const b = readme.indexOf(ANCHOR_README_END);
  if (a < 0 || b < a) throw new Error('README.md lacks the gpu-anchor-throughput markers');
  return `${readme.slice(0, a + ANCHOR_README_START.length)}\n${table}\n${readme.slice(b)}`;
}
