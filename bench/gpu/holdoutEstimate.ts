// Issue 33.2: the VRAM estimate (src/core/gpu/estimate.ts) for the held-out cases of bench/gpu/issue33.py, written
// BEFORE any of them is measured. The estimator's source is hashed into the file, so a later refit cannot be mistaken
// for the estimator that made these figures.
//
//   node --import tsx bench/gpu/holdoutEstimate.ts CASES.json OUT.json
//
// CASES.json: {"cases": [record, ...]} with the fields of a vram_measure.py record (config, method, seq_len, batch,
// gradient_checkpointing, optimizer, lora_r, ...), as `issue33.py --print-holdout-cases` writes it.
// The GPU machine has no Node: the estimates for its cases are made here and committed
// (bench/gpu/holdout-estimates-33.json); the dry run makes them afresh each time, through this same file.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { estimateMemory } from '../../src/core/gpu/estimate';
import type { VramRecord } from './vramCheck';
import { ROOT, allocatorOutside, checkRecord, estimateInput, measuredFiles, parseVramFile, readRepoText, supersededWhy } from './vramCheck';

const ESTIMATOR_FILES = ['src/core/gpu/estimate.ts', 'src/core/gpu/models.ts', 'src/core/gpu/sharding.ts'];

export interface HoldoutEstimate {
  readonly case: string;
  /** The estimate less the CUDA context: what torch's peak reserved memory is held to (as vramCheck.checkRecord). */
  readonly estimate_allocator_gib: number;
  readonly estimate_total_gib: number;
  readonly trainable_params: number;
  readonly parts: { name: string; gib: number }[];
}

export function estimateCases(records: readonly VramRecord[], readText: (p: string) => string = readRepoText): HoldoutEstimate[] {
  return records.map((rec) => {
    const e = estimateMemory(estimateInput(rec, readText));
    const r4 = (x: number): number => Number(x.toFixed(4));
    return {
      case: rec.case,
      estimate_allocator_gib: r4(e.totalGib - allocatorOutside(e)),
      estimate_total_gib: r4(e.totalGib),
      trainable_params: e.trainableParams,
      parts: e.parts.map((p) => ({ name: p.name, gib: r4(p.gib) })),
    };
  });
}

/** The estimate's error on the cases it was calibrated on (bench/gpu/vram-*.json of today's runner), beside the held-out error. */
export function inSampleErrors(files: readonly string[] = measuredFiles()): {
  files: string[];
  cases: number;
  max_abs_error: number | null;
  mean_abs_error: number | null;
  per_case: { case: string; error: number }[];
  left_out: { case: string; why: string }[];
} {
  const perCase: { case: string; error: number }[] = [];
  const leftOut: { case: string; why: string }[] = [];
  for (const path of files) {
    const f = parseVramFile(readFileSync(path, 'utf8'), path);
    if (f.dry_run || f.synthetic) continue;
    for (const r of f.cases) {
      if (r.status !== 'ok' || typeof r.cuda_max_memory_reserved_mib !== 'number') continue;
      const why = supersededWhy(path, r);
      if (why) {
        leftOut.push({ case: `${f.gpu}: ${r.case}`, why });
        continue;
      }
      perCase.push({ case: `${f.gpu}: ${r.case}`, error: Number(checkRecord(r, readRepoText).error.toFixed(4)) });
    }
  }
  const abs = perCase.map((c) => Math.abs(c.error));
  return {
    files: files.map((f) => f.slice(ROOT.length + 1).split('\\').join('/')),
    cases: perCase.length,
    max_abs_error: abs.length ? Number(Math.max(...abs).toFixed(4)) : null,
    mean_abs_error: abs.length ? Number((abs.reduce((a, b) => a + b, 0) / abs.length).toFixed(4)) : null,
    per_case: perCase,
    left_out: leftOut,
  };
}

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '';
  }
}

/** Which estimator made the figures: the hash of its source files and whether they were as committed. */
export function estimatorIdentity(): { files: string[]; sha256: string; git_head: string; uncommitted_changes: boolean } {
  const h = createHash('sha256');
  for (const f of ESTIMATOR_FILES) h.update(readFileSync(join(ROOT, f)));
  return {
    files: ESTIMATOR_FILES,
    sha256: h.digest('hex'),
    git_head: git(['rev-parse', 'HEAD']),
    uncommitted_changes: git(['status', '--porcelain', '--', ...ESTIMATOR_FILES]) !== '',
  };
}

function main(argv: string[]): number {
  const [casesPath, outPath] = argv;
  if (!casesPath || !outPath) {
    process.stderr.write('usage: node --import tsx bench/gpu/holdoutEstimate.ts CASES.json OUT.json\n');
    return 2;
  }
  const doc = JSON.parse(readFileSync(casesPath, 'utf8')) as { cases: VramRecord[]; dry_run?: boolean };
  const out = {
    kind: 'gpu-vram-holdout-estimates',
    note: 'estimates made before any of these cases was measured; estimate_allocator_gib is compared with torch peak reserved memory',
    dry_run: doc.dry_run === true,
    estimated_at: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    estimator: estimatorIdentity(),
    cases: estimateCases(doc.cases),
    in_sample: inSampleErrors(),
  };
  writeFileSync(outPath, JSON.stringify(out, null, 1) + '\n');
  process.stdout.write(`holdout-estimate: ${out.cases.length} cases estimated into ${outPath} (estimator ${out.estimator.sha256.slice(0, 12)}${out.estimator.uncommitted_changes ? ', uncommitted' : ''})\n`);
  return 0;
}

if (require.main === module) process.exit(main(process.argv.slice(2)));
