// Issue 32.1 and 32.7: the throughput model against the measured H200 cases (bench/gpu/vram-*.json). In sample: the
// estimate the editor and the Start confirmation use (trainingThroughput, with the committed fit) for each case's
// own settings. Held out: leave-one-model-out, each case predicted by a fit that never saw its model. The committed
// fit (src/core/gpu/estimateAccuracy.json) and the README table must be what the data gives today.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { trainingThroughput } from '../../../src/core/gpu/throughput';
import { crossValidate, dequantSeconds, flopsPerToken, microBatchSeconds } from '../../../src/core/gpu/throughputModel';
import {
  THROUGHPUT_README_END,
  THROUGHPUT_README_START,
  measuredAccuracy,
  measuredThroughputCases,
  renderThroughputTable,
} from '../../../bench/gpu/throughputCases';

const ROOT = join(__dirname, '../../..');
const GOAL = 0.25;

test('throughput: the estimate for each of our measured H200 cases is within ±25% of its measured tokens/s (in sample: the fit saw these cases)', () => {
  const cases = measuredThroughputCases().cases.filter((c) => c.source.startsWith('bench/gpu/vram-'));
  assert.ok(cases.length >= 10, `${cases.length} cases`);
  const misses: string[] = [];
  for (const c of cases) {
    const t = trainingThroughput({
      gpu: c.gpu,
      gpuCount: 1,
      params: c.input.params,
      layers: c.input.layers,
      hidden: c.input.hidden,
      method: c.input.method,
      gradientCheckpointing: c.input.gradientCheckpointing,
      precision: 'bf16',
      tokensPerMicroBatch: c.input.tokensPerMicroBatch,
      seqLen: c.input.seqLen,
    });
    const err = t.tokensPerSecond / c.tokensPerSecond - 1;
    if (Math.abs(err) > GOAL)
      misses.push(`${c.case}: estimated ${Math.round(t.tokensPerSecond)}, measured ${Math.round(c.tokensPerSecond)} (${(err * 100).toFixed(0)}%)`);
  }
  assert.deepEqual(misses, []);
});

// The goal (issue 32.1) is ±25% held out. One published A100 case misses it and is named here rather than tuned
// away: Qwen-1.8B at 256 tokens, whose published iteration takes 1.0 s at 256 and at 512 tokens, a fixed cost per
// micro-batch of about 110 ms where the fit on the 7B and 14B rows gives 75 ms (README, under the table).
const KNOWN_HELD_OUT_MISSES = ['A100-80GB (published): qwen-1.8b/lora-bf16/seq256/b1/gc-on'];

test('throughput: held out (leave-one-model-out), every case is within ±25% but the one recorded miss', () => {
  const { cases } = measuredThroughputCases();
  const cv = crossValidate(cases);
  const misses = cv.cases.filter((c) => Math.abs(c.heldOut / c.measured - 1) > GOAL).map((c) => c.case);
  assert.deepEqual(misses, KNOWN_HELD_OUT_MISSES, cv.cases.map((c) => `${c.case}: ${((c.heldOut / c.measured - 1) * 100).toFixed(0)}%`).join('\n'));
  const ours = cv.cases.filter((c) => c.gpu === 'H200');
  assert.ok(ours.length >= 10 && ours.every((c) => Math.abs(c.heldOut / c.measured - 1) <= GOAL), 'every measured H200 case within ±25% held out');
  // The published A100 rows: the step-overhead term carries Qwen-1.8B's fixed cost over from the other two models at
  // 512 tokens and up (it missed by +50% at 512 without it).
  const a100 = cv.cases.filter((c) => c.gpu === 'A100-80GB' && !KNOWN_HELD_OUT_MISSES.includes(c.case));
  assert.ok(a100.length >= 17, `${a100.length} A100 cases`);
});

test('throughput: the step overhead and the dequantisation are part of the model (small steps are overhead-bound, QLoRA pays for its 4-bit weights)', () => {
  const base = {
    params: 1.8e9,
    layers: 24,
    hidden: 2048,
    linearModules: 5,
    method: 'lora-bf16' as const,
    gradientCheckpointing: true,
    seqLen: 256,
    tokensPerMicroBatch: 256,
    peakTflops: 312,
    memoryTBps: 2.039,
  };
  const g = { mfuCeiling: 0.5, secondsPerKernel: 0, secondsPerMicroBatch: 0.1 };
  const noFixed = { ...g, secondsPerMicroBatch: 0 };
  assert.ok(microBatchSeconds(base, g, 3) - microBatchSeconds(base, noFixed, 3) === 0.1, 'the fixed step time is added once per micro-batch');
  assert.equal(dequantSeconds(base), 0, 'no dequantisation outside QLoRA');
  // QLoRA: 0.5 B read and 2 B written per parameter, forward, backward and the checkpointed recompute.
  assert.ok(Math.abs(dequantSeconds({ ...base, method: 'qlora' }) - (3 * 1.8e9 * 2.5) / 2.039e12) < 1e-12);
  assert.ok(Math.abs(dequantSeconds({ ...base, method: 'qlora', gradientCheckpointing: false }) - (2 * 1.8e9 * 2.5) / 2.039e12) < 1e-12);
  // MFU grows with tokens per step: at 256 tokens the fixed time dominates, at 8,192 the compute does.
  const mfu = (tokens: number): number => {
    const c = { ...base, seqLen: tokens, tokensPerMicroBatch: tokens };
    return (tokens * flopsPerToken(c)) / microBatchSeconds(c, g, 3) / 312e12;
  };
  assert.ok(mfu(256) < 0.1 && mfu(8192) > 0.35, `${mfu(256)} ${mfu(8192)}`);
});

test("throughput: a held-out prediction never sees its own model's measurements", () => {
  const { cases } = measuredThroughputCases();
  const model = cases[0]!.model;
  const doubled = cases.map((c) => (c.model === model ? { ...c, tokensPerSecond: c.tokensPerSecond * 2 } : c));
  const a = crossValidate(cases).cases;
  const b = crossValidate(doubled).cases;
  for (let i = 0; i < a.length; i++) {
    if (a[i]!.model !== model) continue;
    assert.equal(b[i]!.heldOut, a[i]!.heldOut, `${a[i]!.case}: held-out prediction moved with its own measurement`);
    assert.notEqual(b[i]!.inSample, a[i]!.inSample, 'the in-sample fit does see it');
  }
});

test('throughput: the committed fit (estimateAccuracy.json) and the README table are what the measurements give (npm run bench:gpu-accuracy -- --write)', () => {
  const report = measuredAccuracy();
  const committed = JSON.parse(readFileSync(join(ROOT, 'src/core/gpu/estimateAccuracy.json'), 'utf8')) as unknown;
  assert.deepEqual(committed, JSON.parse(JSON.stringify(report)));
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const a = readme.indexOf(THROUGHPUT_README_START);
  const b = readme.indexOf(THROUGHPUT_README_END);
  assert.ok(a >= 0 && b > a, 'README.md lacks the gpu-throughput-table markers');
  assert.equal(readme.slice(a + THROUGHPUT_README_START.length, b).trim(), renderThroughputTable(report).trim());
  assert.match(readme.slice(a, b), /\| in-sample \| error \| held out \| error \|/);
  assert.match(readme.slice(a, b), /\| case \| measured GiB \| shipped \| error \| fit, in sample \| error \| fit, held out \| error \|/);
  assert.match(readme.slice(a, b), /VRAM estimate .* held out \(leave-one-model-out, each model's cases predicted by a fit that never saw them\): ±\d+\.\d%/);
});
