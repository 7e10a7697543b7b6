// The VRAM estimate (src/core/gpu/estimate.ts) against GPU memory measured by bench/gpu/vram_measure.py:
// reading its JSON, the estimate for a record's exact settings, the ±15% check, and the README table.
// Used by test/unit/gpu/vramMeasured.test.ts and scripts/gpu-vram-table.ts.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { Estimate, EstimateInput } from '../../src/core/gpu/estimate';
import { CUDA_CONTEXT_GIB, estimateMemory } from '../../src/core/gpu/estimate';
import { allocatorOutside } from '../../src/core/gpu/vramFit';
import { shapeFromConfigJson } from '../../src/core/gpu/models';

export const ROOT = join(__dirname, '..', '..');
export const BENCH_DIR = join(ROOT, 'bench', 'gpu');
/** How far the estimate may be from the measured peak reserved memory, as a fraction of the measurement. */
export const TOLERANCE = 0.15;

const num = z.number().finite();
// Loose: the harness records more (events, step times, ...) than the check reads, and the fixture its expectations.
const recordSchema = z.looseObject({
  case: z.string(),
  model: z.string(),
  config: z.string(),
  method: z.enum(['qlora', 'lora-bf16', 'full']),
  seq_len: z.number().int().positive(),
  batch: z.number().int().positive(),
  gradient_checkpointing: z.boolean(),
  gradient_accumulation: z.number().int().positive(),
  precision: z.enum(['bf16', 'fp16', 'fp32']),
  optimizer: z.string(),
  attn_implementation: z.string(),
  lora_r: z.number().int().positive().nullable(),
  lora_targets: z.string().nullable(),
  quant_type: z.string().nullable(),
  double_quant: z.boolean().nullable(),
  gpu_count: z.number().int().positive(),
  status: z.enum(['ok', 'oom', 'failed']),
  implied_by: z.string().optional(),
  cuda_max_memory_reserved_mib: num.nullable().optional(),
  cuda_max_memory_allocated_mib: num.nullable().optional(),
  nvidia_smi_peak_mib: num.nullable().optional(),
  step_time_s: num.nullable().optional(),
  tokens_per_second: num.nullable().optional(),
});
const baselineSchema = z.looseObject({
  case: z.string(),
  steps: z.number().int().positive(),
  pairs: z.array(z.looseObject({ runner_tokens_per_second: num, plain_tokens_per_second: num })),
  runner_tokens_per_second: num,
  plain_trainer_tokens_per_second: num,
  ratio: num,
});
const fileSchema = z.object({
  kind: z.literal('gpu-vram'),
  dry_run: z.boolean(),
  synthetic: z.boolean().optional(),
  gpu: z.string(),
  cases: z.array(recordSchema),
  baseline: baselineSchema.nullable().optional(),
});

export type VramRecord = z.infer<typeof recordSchema>;
export type Baseline = z.infer<typeof baselineSchema>;
/** Issue 14.4: the runner's tokens/s at least this fraction of a plain Trainer script's. */
export const THROUGHPUT_GOAL = 0.95;
export type VramFile = z.infer<typeof fileSchema> & { readonly path: string };

export function parseVramFile(text: string, path: string): VramFile {
  const r = fileSchema.safeParse(JSON.parse(text));
  if (!r.success) throw new Error(`${path}: not a vram_measure.py file: ${r.error.issues.slice(0, 3).map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return { ...r.data, path };
}

/** The measurement files a GPU machine wrote into bench/gpu (vram-<gpu>-<date>.json). */
export function measuredFiles(dir = BENCH_DIR): string[] {
  return readdirSync(dir).filter((f) => /^vram-.+\.json$/.test(f)).sort().map((f) => join(dir, f));
}

/** What the estimator is asked for this record: the same model config file and every training setting the run had. */
export function estimateInput(rec: VramRecord, readText: (repoPath: string) => string): EstimateInput {
  const model = shapeFromConfigJson(readText(rec.config), rec.config);
  if (!model) throw new Error(`${rec.case}: ${rec.config} is not a model config`);
  return {
    model,
    method: rec.method,
    doubleQuant: rec.double_quant === true,
    weightBytes: rec.precision === 'fp32' ? 4 : 2,
    loraR: rec.lora_r ?? 16,
    loraTargets: rec.lora_targets === null || rec.lora_targets === 'all-linear' ? 'all-linear' : [rec.lora_targets],
    batch: rec.batch,
    seqLen: rec.seq_len,
    gradientCheckpointing: rec.gradient_checkpointing,
    optimizer: rec.optimizer,
    // As runSpecEstimate.ts reads attn_implementation: sdpa and flash_attention_2 keep no s² score matrix.
    attention: rec.attn_implementation === 'eager' ? 'eager' : 'flash',
    gpuCount: rec.gpu_count,
    zeroStage: 0,
  };
}

export { allocatorOutside };

/** Measured cases whose runner is not today's: by measurement file and method, with the reason. */
export const SUPERSEDED_RUNNER: readonly { readonly file: string; readonly method: VramRecord['method']; readonly label: string; readonly why: string }[] = [
  {
    file: 'vram-nvidia-h200-2026-11-26.json',
    method: 'qlora',
    label: 'runner before commit 0bd2d1e (fp32 upcast)',
    why:
      "measured before commit 0bd2d1e, when the runner called peft's prepare_model_for_kbit_training (embeddings, head and norms cast to fp32, " +
      'a fp32 residual stream); it now keeps the loaded dtypes (python-runner/remote_finetune/quantized_base.py)',
  },
];

/**
 * Why a measured record no longer describes the runner (the VRAM fit and the ±15% checks leave it out and print this),
 * or undefined. The measurement files stay as measured.
 */
export function supersededWhy(path: string, rec: Pick<VramRecord, 'method'>): string | undefined {
  return superseded(path, rec)?.why;
}

function superseded(path: string, rec: Pick<VramRecord, 'method'>): (typeof SUPERSEDED_RUNNER)[number] | undefined {
  const name = path.split(/[\\/]/).pop();
  return SUPERSEDED_RUNNER.find((s) => s.file === name && s.method === rec.method);
}

export interface Check {
  readonly case: string;
  readonly estimate: Estimate;
  readonly estimateGib: number;
  readonly measuredGib: number;
  /** estimate / measured − 1. */
  readonly error: number;
  readonly ok: boolean;
}

/** A measured (status ok) record against the estimate for its settings; the measure is torch's peak reserved memory. */
export function checkRecord(rec: VramRecord, readText: (repoPath: string) => string, tolerance = TOLERANCE): Check {
  if (rec.status !== 'ok' || typeof rec.cuda_max_memory_reserved_mib !== 'number' || !(rec.cuda_max_memory_reserved_mib > 0)) {
    throw new Error(`${rec.case}: no measurement to check (status ${rec.status})`);
  }
  const estimate = estimateMemory(estimateInput(rec, readText));
  // torch's reserved peak is the caching allocator's; the CUDA context lies outside it (nvidia-smi sees both). The
  // estimate's share of the allocator is what the measurement can hold to account; the context term is measured apart.
  const estimateGib = estimate.totalGib - allocatorOutside(estimate);
  const measuredGib = rec.cuda_max_memory_reserved_mib / 1024;
  const error = estimateGib / measuredGib - 1;
  return { case: rec.case, estimate, estimateGib, measuredGib, error, ok: Math.abs(error) <= tolerance };
}

export const readRepoText = (repoPath: string): string => readFileSync(join(ROOT, repoPath), 'utf8');

const gib = (x: number): string => x.toFixed(2);

/** The README table: one row per case of every file (out-of-memory and failed ones say so). */
export function renderTable(files: readonly VramFile[], readText: (repoPath: string) => string = readRepoText): string {
  if (files.length === 0) return '_No measurements yet: run `npm run bench:gpu-vram` on a GPU machine (see above), commit bench/gpu/vram-*.json, then `npm run bench:gpu-table -- --write-readme`._';
  const lines = [`| case | estimate (GiB, less the ${CUDA_CONTEXT_GIB} GiB CUDA context) | measured (GiB, peak reserved) | in-sample error (fitted on these cases) |`, '|---|---|---|---|'];
  for (const f of files) {
    const label = `${f.gpu}${f.dry_run ? ' (CPU dry run: no GPU memory)' : ''}${f.synthetic ? ' (synthetic)' : ''}`;
    for (const rec of f.cases) {
      const name = `${label}: ${rec.case}`;
      const old = superseded(f.path, rec);
      if (old && rec.status === 'ok' && typeof rec.cuda_max_memory_reserved_mib === 'number') {
        lines.push(`| ${name} | not compared | ${gib(rec.cuda_max_memory_reserved_mib / 1024)} | left out: ${old.label} |`);
        continue;
      }
      if (rec.status !== 'ok' || typeof rec.cuda_max_memory_reserved_mib !== 'number') {
        const e = estimateMemory(estimateInput(rec, readText));
        const est = e.totalGib - allocatorOutside(e);
        const what = rec.status === 'ok' ? 'not measured' : rec.implied_by ? `out of memory (as ${rec.implied_by})` : rec.status === 'oom' ? 'out of memory' : 'failed';
        lines.push(`| ${name} | ${gib(est)} | ${what} | |`);
        continue;
      }
      const c = checkRecord(rec, readText);
      lines.push(`| ${name} | ${gib(c.estimateGib)} | ${gib(c.measuredGib)} | ${c.error >= 0 ? '+' : ''}${(c.error * 100).toFixed(1)}%${c.ok ? '' : ' ✗'} |`);
    }
  }
  const baselines = files.filter((f) => f.baseline);
  if (baselines.length) lines.push('');
  for (const f of baselines) {
    const b = f.baseline!;
    const verdict = b.ratio >= THROUGHPUT_GOAL ? 'pass' : 'FAIL';
    lines.push(
      `Throughput on ${f.gpu} (${b.case}, ${b.steps} steps): \`python -m remote_finetune\` ${b.runner_tokens_per_second.toFixed(0)} tokens/s, ` +
        `a plain Hugging Face Trainer script ${b.plain_trainer_tokens_per_second.toFixed(0)} tokens/s: ratio **${b.ratio.toFixed(3)}** ` +
        `(goal ≥ ${THROUGHPUT_GOAL}: ${verdict}; median of ${b.pairs.length} A/B pairs, each side's own train_runtime).`,
    );
  }
  return lines.join('\n');
}

export const README_START = '<!-- gpu-vram-table (npm run bench:gpu-table -- --write-readme) -->';
export const README_END = '<!-- /gpu-vram-table -->';

/** README text with the block between the markers replaced by `table`. */
export function withTable(readme: string, table: string): string {
  const a = readme.indexOf(README_START);
  const b = readme.indexOf(README_END);
  if (a < 0 || b < a) throw new Error('README.md has no gpu-vram-table markers');
  return `${readme.slice(0, a + README_START.length)}\n${table}\n${readme.slice(b)}`;
}
