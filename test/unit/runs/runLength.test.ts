// The cost shown before launch: price × the run's estimated hours, from its steps, its tokens per step and the
// GPU class's training throughput; never one assumed hour. And the throughput figures against what is
// published, the example counter, and the runner defaults the estimate assumes.
import { looseRunSpec } from '../../../src/core/config/runSpecDefaults';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runLength, RUNNER_DEFAULTS } from '../../../src/core/runs/cost/runLength';
import { RUN_SPEC_DEFAULTS } from '../../../src/core/config/runSpecDefaults';
import { launchCost } from '../../../src/core/runs/cost/launchCost';
import { countExamples } from '../../../src/core/runs/view/dataExamples';
import { trainingThroughput } from '../../../src/core/gpu/throughput';
import { costFor, DEFAULT_OVERHEAD_HOURS } from '../../../src/core/providers/cost';

const offer = { provider: 'gcp' as const, pricePerHour: 3.67, spot: false, instanceType: 'a2-highgpu-1g' };

test("run length: max_steps × tokens per step ÷ the GPU's throughput; the cost is price × (those hours + start-up), not one hour", () => {
  const spec = {
    version: 1,
    method: 'qlora',
    data: { train: 'hub/dataset', max_seq_length: 2048 },
    trainer: { max_steps: 1000, per_device_batch_size: 4, gradient_accumulation: 4, gradient_checkpointing: true, precision: 'bf16' },
  };
  const length = runLength({ spec: looseRunSpec(spec), specDir: '/w', gpu: 'A100-40GB', gpuCount: 1, params: 8e9, countExamples: () => undefined });
  assert.ok(length.known);
  assert.equal(length.steps, 1000);
  assert.equal(length.tokensPerStep, 4 * 4 * 2048);
  // The throughput model's figure for this micro-batch (batch 4 × 2048 tokens), with its band and basis.
  const t = trainingThroughput({
    gpu: 'A100-40GB',
    gpuCount: 1,
    params: 8e9,
    method: 'qlora',
    gradientCheckpointing: true,
    precision: 'bf16',
    tokensPerMicroBatch: 4 * 2048,
    seqLen: 2048,
  });
  const tps = t.tokensPerSecond;
  assert.ok(Math.abs(length.tokensPerSecond - tps) < 1e-6);
  assert.ok(length.hoursLow < length.hours && length.hours < length.hoursHigh);
  const hours = (1000 * 4 * 4 * 2048) / tps / 3600;
  assert.ok(Math.abs(length.hours - hours) < 1e-9);
  const cost = launchCost(offer, length);
  assert.equal(cost.estimate?.totalUsd, costFor(3.67, (hours + DEFAULT_OVERHEAD_HOURS.gcp) * 3600, 'gcp'));
  assert.notEqual(cost.estimate?.totalUsd, costFor(3.67, (1 + DEFAULT_OVERHEAD_HOURS.gcp) * 3600, 'gcp'), 'not the old flat first hour');
  assert.match(cost.text, /\$3\.67\/h \(a2-highgpu-1g\); about \$\d+\.\d\d for this run \(\$\d+\.\d\d–\$\d+\.\d\d\)/);
  assert.match(
    cost.text,
    /±\d+%; A100-40GB, qlora, 8192 tokens per micro-batch: fitted on \d+ published A100-80GB figures \([^)]+\) \(\d models\), held-out error ≤ \d+% \(in-sample ≤ \d+%\); A100-40GB scaled from A100-80GB by its datasheet peak, not measured on it/,
  );
  assert.match(cost.text, /1000 steps \(trainer\.max_steps 1000\)/);
});

test("run length: without max_steps, epochs over the local file's examples as HF Trainer counts steps; several GPUs share the batches", () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-len-'));
  writeFileSync(join(dir, 'train.jsonl'), Array.from({ length: 1000 }, (_, i) => JSON.stringify({ text: `example ${i}` })).join('\n') + '\n\n');
  const spec = {
    version: 1,
    method: 'lora-bf16',
    data: { train: 'train.jsonl', max_seq_length: 1024 },
    trainer: { epochs: 2, per_device_batch_size: 2, gradient_accumulation: 4 },
  };
  const one = runLength({ spec: looseRunSpec(spec), specDir: dir, gpu: 'L4', gpuCount: 1, params: 7e9, countExamples });
  assert.ok(one.known);
  assert.equal(one.steps, 2 * Math.ceil(Math.ceil(1000 / 2) / 4), '125 steps an epoch');
  const two = runLength({ spec: looseRunSpec(spec), specDir: dir, gpu: 'L4', gpuCount: 2, params: 7e9, countExamples });
  assert.ok(two.known);
  assert.equal(two.steps, 2 * Math.ceil(Math.ceil(1000 / 4) / 4));
  assert.ok(two.hours < one.hours, 'two GPUs finish sooner');
  // Unset fields take the runner's defaults (3 epochs, batch 1, accumulation 16, QLoRA, checkpointing).
  const bare = runLength({ spec: { version: 1, data: { train: 'train.jsonl' } }, specDir: dir, gpu: 'L4', gpuCount: 1, params: 7e9, countExamples });
  assert.ok(bare.known);
  assert.equal(bare.steps, 3 * Math.ceil(1000 / 16));
  assert.equal(bare.tokensPerStep, 16 * 2048);
});

test('run length: unknown length is said, with the fix, and no total is shown', () => {
  const hub = runLength({
    spec: { version: 1, data: { train: 'HuggingFaceH4/ultrachat_200k' } },
    specDir: '/w',
    gpu: 'A100-80GB',
    gpuCount: 1,
    params: 7e9,
    countExamples,
  });
  assert.equal(hub.known, false);
  const text = launchCost(offer, hub);
  assert.equal(text.estimate, undefined);
  assert.match(text.text, /no total: .*set trainer\.max_steps/);
  assert.equal(
    runLength({ spec: { version: 1, command: 'python train.py' }, specDir: '/w', gpu: 'A100-80GB', gpuCount: 1, params: 7e9, countExamples }).known,
    false,
  );
  assert.equal(
    runLength({ spec: { version: 1, trainer: { max_steps: 10 } }, specDir: '/w', gpu: 'A100-80GB', gpuCount: 1, countExamples }).known,
    false,
    'no model size',
  );
});

test('throughput: within a GPU class the faster GPU is faster; a 7B LoRA on one A100 lands in the 1–5k tokens/s range such runs report', () => {
  const at = (gpu: Parameters<typeof trainingThroughput>[0]['gpu'], method: 'qlora' | 'lora-bf16' | 'full' = 'lora-bf16', tokens = 2048): number =>
    trainingThroughput({
      gpu,
      gpuCount: 1,
      params: 7e9,
      method,
      gradientCheckpointing: true,
      precision: gpu === 'T4' || gpu === 'V100' ? 'fp16' : 'bf16',
      tokensPerMicroBatch: tokens,
    }).tokensPerSecond;
  const a100 = at('A100-40GB');
  assert.ok(a100 > 1000 && a100 < 5000, String(a100));
  assert.ok(at('T4') < a100 / 2 && at('L4') < a100);
  // Hopper uses the H200's coefficients (our runs, overhead included), the others the A100's (a published table):
  // compute-bound, the H100's 3.2× peak shows; at 2,048 tokens the H200 runs' per-kernel overhead dominates.
  assert.ok(at('H100', 'lora-bf16', 16384) > 1.5 * at('A100-40GB', 'lora-bf16', 16384));
  assert.ok(at('A100-40GB', 'qlora') < a100, '4-bit dequantisation costs time');
  assert.ok(at('A100-40GB', 'full', 16384) < at('A100-40GB', 'lora-bf16', 16384), 'compute-bound, full fine-tuning computes weight gradients too');
});

test('examples: JSONL and text by non-empty lines, CSV after the header, JSON arrays; Parquet and missing files unknown', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-ex-'));
  writeFileSync(join(dir, 'a.jsonl'), '{"t":1}\n{"t":2}\n\n{"t":3}');
  writeFileSync(join(dir, 'b.csv'), 'text,label\nx,1\ny,2\n');
  writeFileSync(join(dir, 'c.json'), JSON.stringify([{ t: 1 }, { t: 2 }]));
  writeFileSync(join(dir, 'd.json'), JSON.stringify({ data: [{ t: 1 }] }));
  writeFileSync(join(dir, 'e.parquet'), 'PAR1');
  assert.deepEqual(
    ['a.jsonl', 'b.csv', 'c.json', 'd.json', 'e.parquet', 'none.jsonl'].map((f) => countExamples(join(dir, f))),
    [3, 2, 2, 1, undefined, undefined],
  );
});

test("run length: the defaults assumed are python-runner's (RUN_SPEC_DEFAULTS, generated into spec_defaults.py)", () => {
  const py = RUN_SPEC_DEFAULTS;
  assert.equal(py.trainer.epochs, RUNNER_DEFAULTS.epochs);
  assert.equal(py.trainer.per_device_batch_size, RUNNER_DEFAULTS.perDeviceBatch);
  assert.equal(py.trainer.gradient_accumulation, RUNNER_DEFAULTS.gradientAccumulation);
  assert.equal(py.data.max_seq_length, RUNNER_DEFAULTS.maxSeqLength);
  assert.equal(py.method, RUNNER_DEFAULTS.method);
  assert.equal(py.trainer.gradient_checkpointing, RUNNER_DEFAULTS.gradientCheckpointing);
  assert.equal(py.trainer.precision, RUNNER_DEFAULTS.precision);
});
