// The throughput cases the model (src/core/gpu/throughputModel.ts) is fitted on: measured ones from
// bench/gpu/vram-*.json and published ones from bench/gpu/published-*.json (each citing its table, hardware and
// settings). Used by scripts/gpu-accuracy.ts, which fits and writes src/core/gpu/estimateAccuracy.json and the
// README table, and by test/unit/gpu/throughputFit.test.ts, which fits again.
// A measured case counts when it ran (status ok) with a tokens/s: the harness's step-time median (step 2 on). The
// 2026-11-26 H200 cases ran three processes at once on one GPU (lanes a, b, c: see the file's note), so their
// tokens/s include the other lanes' load; they are fitted as measured and the README says so.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { z } from 'zod';
import type { GpuId } from '../../src/core/gpu/catalog';
import { findGpu, GPU_CATALOG } from '../../src/core/gpu/catalog';
import { shapeFromConfigJson } from '../../src/core/gpu/models';
import { FP32_FACTOR, MEMORY_TBPS, PEAK_DENSE_16BIT_TFLOPS } from '../../src/core/gpu/throughput';
import type { GpuFit } from '../../src/core/gpu/throughput';
import type { MeasuredCase, ThroughputCoefficients } from '../../src/core/gpu/throughputModel';
import { LLAMA_LINEAR_MODULES, crossValidate } from '../../src/core/gpu/throughputModel';
import type { VramFile } from './vramCheck';
import { BENCH_DIR, ROOT, estimateInput, measuredFiles, parseVramFile, readRepoText, supersededWhy } from './vramCheck';
import type { AnchorThroughputCheck, AnchorVramCheck } from './anchorHeldOut';
import { anchorThroughputChecks, anchorVramChecks, committedAnchors } from './anchorHeldOut';
import type { VramCoefficients } from '../../src/core/gpu/estimate';
import type { VramCase, VramCaseError } from '../../src/core/gpu/vramFit';
import { crossValidateVram } from '../../src/core/gpu/vramFit';

const repoPath = (p: string): string => relative(ROOT, p).split('\\').join('/');

export function throughputCases(files: readonly VramFile[], readText: (repoPath: string) => string = readRepoText): MeasuredCase[] {
  const out: MeasuredCase[] = [];
  for (const f of files) {
    if (f.dry_run || f.synthetic) continue;
    const gpu = findGpu(f.gpu)?.id;
    if (!gpu) throw new Error(`${f.path}: no catalog GPU for ${f.gpu}`);
    for (const r of f.cases) {
      if (r.status !== 'ok' || typeof r.tokens_per_second !== 'number' || !(r.tokens_per_second > 0)) continue;
      const shape = shapeFromConfigJson(readText(r.config), r.config);
      if (!shape) throw new Error(`${r.case}: ${r.config} is not a model config`);
      out.push({
        case: `${GPU_CATALOG[gpu].id}: ${r.case}`,
        model: r.model,
        gpu,
        source: repoPath(f.path),
        tokensPerSecond: r.tokens_per_second / r.gpu_count,
        input: {
          params: typeof r.params === 'number' ? r.params : shape.params,
          layers: shape.layers,
          hidden: shape.hidden,
          linearModules: LLAMA_LINEAR_MODULES,
          method: r.method,
          gradientCheckpointing: r.gradient_checkpointing,
          seqLen: r.seq_len,
          tokensPerMicroBatch: r.batch * r.seq_len,
          peakTflops: PEAK_DENSE_16BIT_TFLOPS[gpu] * (r.precision === 'fp32' ? FP32_FACTOR : 1),
          memoryTBps: MEMORY_TBPS[gpu],
        },
      });
    }
  }
  return out;
}

const publishedRow = z.object({
  case: z.string(),
  model: z.string(),
  params: z.number().positive(),
  layers: z.number().int().positive(),
  hidden: z.number().int().positive(),
  linear_modules: z.number().int().positive(),
  method: z.enum(['qlora', 'lora-bf16', 'full']),
  gradient_checkpointing: z.boolean(),
  seq_len: z.number().int().positive(),
  batch: z.number().int().positive(),
  gradient_accumulation: z.number().int().positive(),
  seconds_per_iteration: z.number().positive(),
});
const publishedFile = z.looseObject({ kind: z.literal('published-throughput'), gpu: z.string(), source: z.string(), rows: z.array(publishedRow) });

/** Published figures (bench/gpu/published-*.json), each file citing its table, its hardware and its settings. */
export function publishedCases(path: string): MeasuredCase[] {
  const f = publishedFile.parse(JSON.parse(readFileSync(path, 'utf8')));
  const gpu = findGpu(f.gpu)?.id;
  if (!gpu) throw new Error(`${path}: no catalog GPU for ${f.gpu}`);
  return f.rows.map((r) => ({
    case: `${gpu} (published): ${r.case}`,
    model: r.model,
    gpu,
    source: repoPath(path),
    // An iteration is one optimizer step: gradient_accumulation micro-batches of batch × seq_len tokens.
    tokensPerSecond: (r.gradient_accumulation * r.batch * r.seq_len) / r.seconds_per_iteration,
    input: {
      params: r.params,
      layers: r.layers,
      hidden: r.hidden,
      linearModules: r.linear_modules,
      method: r.method,
      gradientCheckpointing: r.gradient_checkpointing,
      seqLen: r.seq_len,
      tokensPerMicroBatch: r.batch * r.seq_len,
      peakTflops: PEAK_DENSE_16BIT_TFLOPS[gpu],
      memoryTBps: MEMORY_TBPS[gpu],
    },
  }));
}

export function publishedFiles(dir = BENCH_DIR): string[] {
  return readdirSync(dir)
    .filter((f) => /^published-.+\.json$/.test(f))
    .sort()
    .map((f) => join(dir, f));
}

/** Every measured file's cases, then every published file's. */
export function measuredThroughputCases(): { measured: string[]; published: string[]; cases: MeasuredCase[] } {
  const measured = measuredFiles();
  const published = publishedFiles();
  const cases = [...throughputCases(measured.map((p) => parseVramFile(readFileSync(p, 'utf8'), p))), ...published.flatMap(publishedCases)];
  return { measured, published, cases };
}

const round = (x: number, digits: number): number => Number(x.toPrecision(digits));
const maxAbs = (xs: readonly number[]): number => round(Math.max(0, ...xs.map(Math.abs)), 4);

export interface VramAccuracy {
  readonly gpus: string[];
  readonly cases: number;
  readonly models: number;
  /** The shipped coefficients (estimate.ts VRAM_COEFFICIENTS) on every case: in sample, they were calibrated on them. */
  readonly inSampleMaxAbs: number;
  /** vramFit.ts's procedure: its fit on every case (in sample) and each case from a fit without its model (held out). */
  readonly fit: { readonly coefficients: VramCoefficients; readonly inSampleMaxAbs: number; readonly heldOutMaxAbs: number };
  readonly perCase: { case: string; model: string; measuredGib: number; shippedGib: number; inSampleGib: number; heldOutGib: number }[];
  /** Measured cases neither fitted nor checked, with why (their runner is not today's: vramCheck.ts SUPERSEDED_RUNNER). */
  readonly leftOut: { case: string; why: string }[];
  /** TRL SFT measurements of the benchmark, held out of the fit (anchorHeldOut.ts), against the shipped estimate. */
  readonly anchors: AnchorVramCheck[];
}

export interface AccuracyReport {
  readonly _generated: string;
  readonly sources: string[];
  readonly throughput: {
    readonly checkpointPasses: number;
    readonly gpus: Partial<Record<GpuId, GpuFit>>;
    readonly perCase: { case: string; gpu: string; measured: number; inSample: number; heldOut: number }[];
    /** TRL SFT cases of the benchmark, never fitted: predicted by the fit on perCase's cases. */
    readonly anchors: AnchorThroughputCheck[];
  };
  readonly vram: VramAccuracy;
}

/** The VRAM part of the report: the shipped estimator's error and the fitting procedure's, in sample and held out. */
export function vramAccuracy(
  cases: readonly VramCase[],
  gpus: readonly string[],
  leftOut: VramAccuracy['leftOut'] = [],
  anchors: AnchorVramCheck[] = [],
): VramAccuracy {
  const cv = crossValidateVram(cases);
  const err = (f: (c: VramCaseError) => number): number => maxAbs(cv.cases.map((c) => f(c) / c.measuredGib - 1));
  return {
    gpus: [...gpus],
    cases: cases.length,
    models: new Set(cases.map((c) => c.model)).size,
    inSampleMaxAbs: err((c) => c.shippedGib),
    fit: {
      coefficients: Object.fromEntries(Object.entries(cv.coefficients).map(([k, v]) => [k, round(v, 4)])) as unknown as VramCoefficients,
      inSampleMaxAbs: err((c) => c.inSampleGib),
      heldOutMaxAbs: err((c) => c.heldOutGib),
    },
    perCase: cv.cases.map((c) => ({
      case: c.case,
      model: c.model,
      measuredGib: round(c.measuredGib, 6),
      shippedGib: round(c.shippedGib, 6),
      inSampleGib: round(c.inSampleGib, 6),
      heldOutGib: round(c.heldOutGib, 6),
    })),
    leftOut: [...leftOut],
    anchors,
  };
}

/** src/core/gpu/estimateAccuracy.json: the throughput fit per GPU class with its in-sample and held-out errors per case,
 *  and the VRAM estimate's (vramAccuracy). */
export function accuracyReport(
  files: readonly string[],
  published: readonly string[],
  cases: readonly MeasuredCase[],
  vram: VramAccuracy,
  anchorChecks: (k: ThroughputCoefficients) => AnchorThroughputCheck[] = () => [],
): AccuracyReport {
  const cv = crossValidate(cases);
  const gpus: Partial<Record<GpuId, GpuFit>> = {};
  for (const gpu of [...new Set(cases.map((c) => c.gpu))].sort()) {
    const mine = cv.cases.filter((c) => c.gpu === gpu);
    const k = cv.coefficients.gpus[gpu]!;
    const sources = [...new Set(mine.map((c) => c.source))];
    gpus[gpu] = {
      basis: sources.every((s) => published.map(repoPath).includes(s)) ? 'published' : 'measured',
      sources,
      cases: mine.length,
      models: new Set(mine.map((c) => c.model)).size,
      mfuCeiling: round(k.mfuCeiling, 6),
      secondsPerKernel: round(k.secondsPerKernel, 6),
      secondsPerMicroBatch: round(k.secondsPerMicroBatch, 6),
      inSampleMaxAbs: maxAbs(mine.map((c) => c.inSample / c.measured - 1)),
      heldOutMaxAbs: maxAbs(mine.map((c) => c.heldOut / c.measured - 1)),
    };
  }
  return {
    _generated: 'by `npm run bench:gpu-accuracy -- --write` (scripts/gpu-accuracy.ts) from the files in sources; do not edit',
    sources: files.map(repoPath),
    throughput: {
      checkpointPasses: round(cv.coefficients.checkpointPasses, 6),
      gpus,
      perCase: cv.cases.map((c) => ({
        case: c.case,
        gpu: c.gpu,
        measured: round(c.measured, 6),
        inSample: round(c.inSample, 6),
        heldOut: round(c.heldOut, 6),
      })),
      // As shipped: the rounded coefficients trainingThroughput reads.
      anchors: anchorChecks({ checkpointPasses: round(cv.coefficients.checkpointPasses, 6), gpus }),
    },
    vram,
  };
}

/** Every measured record with a peak reserved memory, named as the report names it, with why it is left out (or undefined). */
function measuredRecords(files: readonly VramFile[]): { file: VramFile; rec: VramFile['cases'][number]; case: string; why: string | undefined }[] {
  return files
    .filter((f) => !f.dry_run && !f.synthetic)
    .flatMap((f) =>
      f.cases
        .filter((r) => r.status === 'ok' && typeof r.cuda_max_memory_reserved_mib === 'number' && r.cuda_max_memory_reserved_mib > 0)
        .map((rec) => ({ file: f, rec, case: `${findGpu(f.gpu)?.id ?? f.gpu}: ${rec.case}`, why: supersededWhy(f.path, rec) })),
    );
}

/** Every measured case of today's runner with a peak reserved memory, as the VRAM fit reads it: the estimator's input for its settings. */
export function vramCases(files: readonly VramFile[], readText: (repoPath: string) => string = readRepoText): VramCase[] {
  return measuredRecords(files)
    .filter((r) => r.why === undefined)
    .map(({ rec, case: name }) => ({
      case: name,
      model: rec.model,
      input: estimateInput(rec, readText),
      measuredGib: rec.cuda_max_memory_reserved_mib! / 1024,
    }));
}

/** The measured cases the VRAM fit and checks leave out, with why. */
export function leftOutVramCases(files: readonly VramFile[]): { case: string; why: string }[] {
  return measuredRecords(files).flatMap((r) => (r.why === undefined ? [] : [{ case: r.case, why: r.why }]));
}

/** The report from every file: throughput cases, the VRAM estimate against each measured case, and the held-out anchors. */
export function measuredAccuracy(): AccuracyReport {
  const { measured, published, cases } = measuredThroughputCases();
  const parsed = measured.map((p) => parseVramFile(readFileSync(p, 'utf8'), p)).filter((f) => !f.dry_run && !f.synthetic);
  const gpus = [...new Set(parsed.map((f) => findGpu(f.gpu)?.id ?? f.gpu))];
  const anchors = committedAnchors();
  const vram = vramAccuracy(vramCases(parsed), gpus, leftOutVramCases(parsed), anchorVramChecks(anchors));
  const sources = [...measured, ...published, ...anchors.map((a) => a.path)];
  return accuracyReport(sources, published, cases, vram, (k) => anchorThroughputChecks(anchors, k));
}

const signed = (x: number): string => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}%`;

/** The README block: per GPU class its coefficients and errors, per case the measured (or published) tokens/s, the in-sample and the held-out prediction. */
export function renderThroughputTable(r: AccuracyReport): string {
  const t = r.throughput;
  const fits = Object.entries(t.gpus) as [GpuId, GpuFit][];
  if (fits.length === 0) return '_No throughput data yet: run `npm run bench:gpu-vram` on a GPU machine, then `npm run bench:gpu-accuracy -- --write`._';
  const lines = [
    `Throughput model (src/core/gpu/throughputModel.ts): checkpointing adds ${t.checkpointPasses.toFixed(2)} overhead passes (shared), and per GPU class with data:`,
    '',
    '| GPU | basis | cases (models) | MFU ceiling | µs per kernel | ms per micro-batch | largest in-sample error | largest held-out error |',
    '|---|---|---|---|---|---|---|---|',
    ...fits.map(
      ([gpu, f]) =>
        `| ${gpu} | ${f.basis} (${f.sources.join(', ')}) | ${f.cases} (${f.models}) | ${(f.mfuCeiling * 100).toFixed(1)}% | ${(f.secondsPerKernel * 1e6).toFixed(1)} | ${(f.secondsPerMicroBatch * 1e3).toFixed(1)} | ±${(f.inSampleMaxAbs * 100).toFixed(1)}% | ±${(f.heldOutMaxAbs * 100).toFixed(1)}% |`,
    ),
    '',
    'In sample: predicted by the fit on every case. Held out: leave-one-model-out, predicted by a fit without any case of its model.',
    '',
    '| case | tokens/s | in-sample | error | held out | error |',
    '|---|---|---|---|---|---|',
    ...t.perCase.map(
      (c) =>
        `| ${c.case} | ${Math.round(c.measured)} | ${Math.round(c.inSample)} | ${signed(c.inSample / c.measured - 1)} | ${Math.round(c.heldOut)} | ${signed(c.heldOut / c.measured - 1)} |`,
    ),
    '',
    ...heldOutGoal(t.perCase),
    ...renderThroughputAnchors(t.anchors),
    '',
    ...renderVram(r.vram),
  ];
  return lines.join('\n');
}

/** Issue 32.1's goal: tokens/s within ±25% held out. */
export const THROUGHPUT_HELD_OUT_GOAL = 0.25;

/** Per GPU class whether every held-out prediction meets the goal, naming the cases that do not. */
function heldOutGoal(perCase: AccuracyReport['throughput']['perCase']): string[] {
  const gpus = [...new Set(perCase.map((c) => c.gpu))];
  return gpus.map((gpu) => {
    const misses = perCase.filter((c) => c.gpu === gpu && Math.abs(c.heldOut / c.measured - 1) > THROUGHPUT_HELD_OUT_GOAL);
    const goal = `±${THROUGHPUT_HELD_OUT_GOAL * 100}%`;
    if (misses.length === 0) return `- ${gpu}: every case within ${goal} held out (goal met).`;
    return `- ${gpu}: held out, ${misses.length} case${misses.length > 1 ? 's' : ''} outside ${goal} (goal not met): ${misses.map((c) => `${c.case} ${signed(c.heldOut / c.measured - 1)}`).join('; ')}.`;
  });
}

const pctText = (x: number): string => `±${(x * 100).toFixed(1)}%`;

/** The benchmark's TRL SFT cases, which no fit read: their prediction is held out by construction. */
function renderThroughputAnchors(anchors: readonly AnchorThroughputCheck[]): string[] {
  if (anchors.length === 0) return [];
  return [
    '',
    "Held out of every fit: the GPU benchmark's plain TRL SFT cases (bench/gpu/throughput-*.json, each run alone on the GPU), predicted by the fit above:",
    '',
    '| case | tokens/s | held out | error |',
    '|---|---|---|---|',
    ...anchors.map((c) => `| ${c.case} | ${Math.round(c.measured)} | ${Math.round(c.heldOut)} | ${signed(c.heldOut / c.measured - 1)} |`),
  ];
}

/** The measured cases left out, and the TRL SFT measurements held out of the VRAM fit. */
function renderVramAside(v: VramAccuracy): string[] {
  const out: string[] = [];
  if (v.leftOut.length > 0) {
    const whys = [...new Set(v.leftOut.map((c) => c.why))];
    out.push('', ...whys.map((why) => `Left out of the fit and the checks: ${v.leftOut.filter((c) => c.why === why).map((c) => c.case).join(', ')}: ${why}.`));
  }
  if (v.anchors.length > 0) {
    out.push(
      '',
      "Held out of every fit: the GPU benchmark's plain TRL SFT cases. TRL casts its LoRA adapters to bf16 where the runner keeps them fp32, so the estimator's own difference for fp32 adapters, gradients and states is added to the measurement; both compute the loss through TRL's fused LM head (the runner's SFTTrainer path: data.packing or trainer.use_sft_trainer).",
      '',
      '| case | measured GiB (TRL, bf16 adapters) | + fp32 adapters | runner recipe | shipped estimate | error |',
      '|---|---|---|---|---|---|',
      ...v.anchors.map((c) => {
        const expected = c.measuredGib + c.adapterDeltaGib;
        return `| ${c.case} | ${c.measuredGib.toFixed(2)} | ${c.adapterDeltaGib.toFixed(2)} | ${expected.toFixed(2)} | ${c.estimateGib.toFixed(2)} | ${signed(c.estimateGib / expected - 1)} |`;
      }),
    );
  }
  return out;
}

/** The VRAM part of the block: the shipped estimator's error and the calibration procedure's, in sample and held out. */
function renderVram(v: VramAccuracy): string[] {
  if (v.cases === 0) return ['_No measured VRAM case yet: the VRAM estimate has no error figure._'];
  const k = v.fit.coefficients;
  return [
    `VRAM estimate (src/core/gpu/estimate.ts) on the ${v.cases} measured ${v.gpus.join(', ')} cases of ${v.models} models: as shipped, largest error ${pctText(v.inSampleMaxAbs)} in sample (its coefficients were calibrated on these cases). ` +
      `The calibration procedure (src/core/gpu/vramFit.ts) fitted on every case: ${pctText(v.fit.inSampleMaxAbs)} in sample; held out (leave-one-model-out, each model's cases predicted by a fit that never saw them): ${pctText(v.fit.heldOutMaxAbs)}. ` +
      `Its fit on every case: ${k.mlpBytesPerIntermediate}·i + ${k.attentionBytesPerHidden}·h bytes per token per layer, allocator cache ${(k.cacheCheckpointed * 100).toFixed(1)}% of activations with checkpointing, ${(k.cacheUncheckpointed * 100).toFixed(1)}% without, ${(k.cacheLongLived * 100).toFixed(1)}% of the long-lived tensors.`,
    '',
    '| case | measured GiB | shipped | error | fit, in sample | error | fit, held out | error |',
    '|---|---|---|---|---|---|---|---|',
    ...v.perCase.map(
      (c) =>
        `| ${c.case} | ${c.measuredGib.toFixed(2)} | ${c.shippedGib.toFixed(2)} | ${signed(c.shippedGib / c.measuredGib - 1)} | ${c.inSampleGib.toFixed(2)} | ${signed(c.inSampleGib / c.measuredGib - 1)} | ${c.heldOutGib.toFixed(2)} | ${signed(c.heldOutGib / c.measuredGib - 1)} |`,
    ),
    ...renderVramAside(v),
  ];
}

export const THROUGHPUT_README_START = '<!-- gpu-throughput-table (npm run bench:gpu-accuracy -- --write) -->';
export const THROUGHPUT_README_END = '<!-- /gpu-throughput-table -->';

export function withThroughputTable(readme: string, table: string): string {
  const a = readme.indexOf(THROUGHPUT_README_START);
  const b = readme.indexOf(THROUGHPUT_README_END);
  if (a < 0 || b < a) throw new Error('README.md lacks the gpu-throughput-table markers');
  return `${readme.slice(0, a + THROUGHPUT_README_START.length)}\n${table}\n${readme.slice(b)}`;
}
