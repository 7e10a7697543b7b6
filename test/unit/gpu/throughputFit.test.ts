// Issue 32.1 and 32.7: the throughput model against the measured H200 cases (bench/gpu/vram-*.json). In sample: the
// estimate the editor and the Start confirmation use (trainingThroughput, with the committed fit) for each case's
// own settings. Held out: leave-one-model-out, each case predicted by a fit that never saw its model. The committed
// fit (src/core/gpu/estimateAccuracy.json) and the README table must be what the data gives today.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { trainingThroughput } from '../../../src/core/gpu/throughput';
import { crossValidate } from '../../../src/core/gpu/throughputModel';
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

// The goal (issue 32.1) is ±25% held out. Two published A100 cases miss it and are named here rather than tuned
// away: Qwen-1.8B at 256 and 512 tokens, whose published steps take the same 1.0 s from 256 to 1,024 tokens, a
// fixed cost per step that the per-layer overhead term of the other two Qwen models does not carry over to.
const KNOWN_HELD_OUT_MISSES = ['A100-80GB (published): qwen-1.8b/lora-bf16/seq256/b1/gc-on', 'A100-80GB (published): qwen-1.8b/lora-bf16/seq512/b1/gc-on'];

test('throughput: held out (leave-one-model-out), every case is within ±25% but the two recorded misses', () => {
  const { cases } = measuredThroughputCases();
  const cv = crossValidate(cases);
  const misses = cv.cases.filter((c) => Math.abs(c.heldOut / c.measured - 1) > GOAL).map((c) => c.case);
  assert.deepEqual(misses, KNOWN_HELD_OUT_MISSES, cv.cases.map((c) => `${c.case}: ${((c.heldOut / c.measured - 1) * 100).toFixed(0)}%`).join('\n'));
  const ours = cv.cases.filter((c) => c.gpu === 'H200');
  assert.ok(ours.length >= 10 && ours.every((c) => Math.abs(c.heldOut / c.measured - 1) <= GOAL), 'every measured H200 case within ±25% held out');
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
});
