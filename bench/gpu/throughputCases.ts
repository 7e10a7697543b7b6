// The measured throughput cases of bench/gpu/vram-*.json as inputs of the throughput model
// (src/core/gpu/throughputModel.ts): used by scripts/gpu-accuracy.ts, which fits and writes
// src/core/gpu/estimateAccuracy.json, and by test/unit/gpu/throughputFit.test.ts, which fits again.
// A case counts when it ran (status ok) with a measured tokens/s: the harness's step-time median (step 2 on),
// tokens_per_second in the file. The 2026-11-26 cases ran three processes at once on one H200 (lanes a, b, c:
// see the file's note), so their tokens/s include the other lanes' load; the model is fitted to that as measured.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { findGpu, GPU_CATALOG } from '../../src/core/gpu/catalog';
import { shapeFromConfigJson } from '../../src/core/gpu/models';
import { FP32_FACTOR, PEAK_DENSE_16BIT_TFLOPS } from '../../src/core/gpu/throughput';
import type { MeasuredCase, ThroughputCoefficients } from '../../src/core/gpu/throughputModel';
import { crossValidate } from '../../src/core/gpu/throughputModel';
import type { VramFile } from './vramCheck';
import { ROOT, checkRecord, measuredFiles, parseVramFile, readRepoText } from './vramCheck';

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
      const params = typeof r.params === 'number' ? r.params : shape.params;
      out.push({
        case: `${GPU_CATALOG[gpu].id}: ${r.case}`,
        model: r.model,
        gpu,
        tokensPerSecond: r.tokens_per_second / r.gpu_count,
        input: {
          params,
          layers: shape.layers,
          method: r.method,
          gradientCheckpointing: r.gradient_checkpointing,
          tokensPerMicroBatch: r.batch * r.seq_len,
          peakTflops: PEAK_DENSE_16BIT_TFLOPS[gpu] * (r.precision === 'fp32' ? FP32_FACTOR : 1),
        },
      });
    }
  }
  return out;
}

/** Every measured file's cases. */
export function measuredThroughputCases(): { files: string[]; cases: MeasuredCase[] } {
  const files = measuredFiles();
  return { files, cases: throughputCases(files.map((p) => parseVramFile(readFileSync(p, 'utf8'), p))) };
}

const round = (x: number, digits: number): number => Number(x.toPrecision(digits));
const GPU_SHORT = (id: string): string => id;

/** src/core/gpu/estimateAccuracy.json: the throughput fit with its in-sample and held-out errors per case, and the VRAM estimate's in-sample error. */
export function accuracyReport(
  files: readonly string[],
  cases: readonly MeasuredCase[],
  vramErrors: readonly number[],
  vramGpus: readonly string[],
): AccuracyReport {
  const cv = crossValidate(cases);
  const err = (p: number, m: number): number => p / m - 1;
  const maxAbs = (xs: number[]): number => round(Math.max(0, ...xs.map(Math.abs)), 4);
  return {
    _generated: 'by `npm run bench:gpu-accuracy -- --write` (scripts/gpu-accuracy.ts) from the files in sources; do not edit',
    sources: files.map((f) => relative(ROOT, f).split('\\').join('/')),
    throughput: {
      gpus: [...new Set(cases.map((c) => GPU_SHORT(c.gpu)))],
      cases: cases.length,
      models: new Set(cases.map((c) => c.model)).size,
      coefficients: {
        mfuCeiling: round(cv.coefficients.mfuCeiling, 6),
        secondsPerKernel: round(cv.coefficients.secondsPerKernel, 6),
        checkpointPasses: round(cv.coefficients.checkpointPasses, 6),
      },
      inSampleMaxAbs: maxAbs(cv.cases.map((c) => err(c.inSample, c.measured))),
      heldOutMaxAbs: maxAbs(cv.cases.map((c) => err(c.heldOut, c.measured))),
      perCase: cv.cases.map((c) => ({
        case: c.case,
        measured: round(c.measured, 6),
        inSample: round(c.inSample, 6),
        heldOut: round(c.heldOut, 6),
      })),
    },
    vram: { gpus: [...vramGpus], cases: vramErrors.length, inSampleMaxAbs: maxAbs([...vramErrors]) },
  };
}

export interface AccuracyReport {
  readonly _generated: string;
  readonly sources: string[];
  readonly throughput: {
    readonly gpus: string[];
    readonly cases: number;
    readonly models: number;
    readonly coefficients: ThroughputCoefficients;
    readonly inSampleMaxAbs: number;
    readonly heldOutMaxAbs: number;
    readonly perCase: { case: string; measured: number; inSample: number; heldOut: number }[];
  };
  readonly vram: { readonly gpus: string[]; readonly cases: number; readonly inSampleMaxAbs: number };
}

/** The report from every measured file: throughput cases and the VRAM estimate's error on each ok case. */
export function measuredAccuracy(): AccuracyReport {
  const { files, cases } = measuredThroughputCases();
  const parsed = files.map((p) => parseVramFile(readFileSync(p, 'utf8'), p)).filter((f) => !f.dry_run && !f.synthetic);
  const vram = parsed.flatMap((f) => f.cases.filter((r) => r.status === 'ok' && typeof r.cuda_max_memory_reserved_mib === 'number').map((r) => checkRecord(r, readRepoText).error));
  const gpus = [...new Set(parsed.map((f) => findGpu(f.gpu)?.id ?? f.gpu))];
  return accuracyReport(files, cases, vram, gpus);
}

const signed = (x: number): string => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}%`;

/** The README block: per case the measured tokens/s, the in-sample and the held-out prediction, and the summary. */
export function renderThroughputTable(r: AccuracyReport): string {
  const t = r.throughput;
  if (t.cases === 0) return '_No measured throughput yet: run `npm run bench:gpu-vram` on a GPU machine, then `npm run bench:gpu-accuracy -- --write`._';
  const k = t.coefficients;
  const lines = [
    `Throughput model (src/core/gpu/throughputModel.ts) fitted on ${t.cases} cases of ${t.models} models on ${t.gpus.join(', ')} (${r.sources.join(', ')}): MFU ceiling ${(k.mfuCeiling * 100).toFixed(1)}%, ${(k.secondsPerKernel * 1e6).toFixed(1)} µs per kernel, checkpointing +${k.checkpointPasses.toFixed(2)} passes. In sample: every case fitted with all of them. Held out: leave-one-model-out, each case predicted by a fit without any case of its model.`,
    '',
    '| case | measured tokens/s | in-sample | error | held out | error |',
    '|---|---|---|---|---|---|',
    ...t.perCase.map((c) => `| ${c.case} | ${Math.round(c.measured)} | ${Math.round(c.inSample)} | ${signed(c.inSample / c.measured - 1)} | ${Math.round(c.heldOut)} | ${signed(c.heldOut / c.measured - 1)} |`),
    `| **largest error** | | | **±${(t.inSampleMaxAbs * 100).toFixed(1)}%** | | **±${(t.heldOutMaxAbs * 100).toFixed(1)}%** |`,
    '',
    `The VRAM estimate's largest error on the ${r.vram.cases} measured cases is ±${(r.vram.inSampleMaxAbs * 100).toFixed(1)}%, in sample (its coefficients were calibrated on these cases; there is no held-out figure yet).`,
  ];
  return lines.join('\n');
}

export const THROUGHPUT_README_START = '<!-- gpu-throughput-table (npm run bench:gpu-accuracy -- --write) -->';
export const THROUGHPUT_README_END = '<!-- /gpu-throughput-table -->';

export function withThroughputTable(readme: string, table: string): string {
  const a = readme.indexOf(THROUGHPUT_README_START);
  const b = readme.indexOf(THROUGHPUT_README_END);
  if (a < 0 || b < a) throw new Error('README.md lacks the gpu-throughput-table markers');
  return `${readme.slice(0, a + THROUGHPUT_README_START.length)}\n${table}\n${readme.slice(b)}`;
}
