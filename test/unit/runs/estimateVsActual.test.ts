// Estimated against actual (issue 32.4): the case a spec describes (unset fields at the runner's defaults), the
// error's sign, and which of the user's runs count as the same case. The end-to-end path (a real host measuring,
// the record keeping it) is test/integration/runs/measuredRun.test.ts.
import { looseRunSpec } from '../../../src/core/config/runSpecDefaults';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  errorPct,
  estimateCaseOf,
  estimateLensTitle,
  estimateVsActualLines,
  measuredForSpec,
  measuredMatch,
} from '../../../src/core/runs/cost/estimateVsActual';
import { RUNNER_DEFAULTS } from '../../../src/core/runs/cost/runLength';
import type { RunRecord } from '../../../src/core/runs/store/runRecord';

const record = (id: string, over: Partial<RunRecord>): RunRecord =>
  ({
    id,
    name: id,
    specPath: '/ws/f.yaml',
    specHash: 'h',
    createdAt: '2026-11-20T10:00:00Z',
    updatedAt: '2026-11-20T12:00:00Z',
    status: 'completed',
    provider: 'lambda',
    ...over,
  }) as RunRecord;

const CASE = { model: 'meta-llama/Meta-Llama-3-8B', gpu: 'A100-80GB', gpuCount: 1, method: 'qlora', seqLen: 2048, batch: 16 };

test("a spec's case takes the runner's defaults for what it leaves out; an own command has none", () => {
  assert.deepEqual(estimateCaseOf({ model: { id: 'meta-llama/Meta-Llama-3-8B' } }, 'A100-80GB', 1, RUNNER_DEFAULTS), {
    ...CASE,
    method: RUNNER_DEFAULTS.method,
    seqLen: RUNNER_DEFAULTS.maxSeqLength,
    batch: RUNNER_DEFAULTS.perDeviceBatch * RUNNER_DEFAULTS.gradientAccumulation,
  });
  assert.deepEqual(
    estimateCaseOf(
      { model: { id: 'm' }, method: 'full', data: { max_seq_length: 1024 }, trainer: { per_device_batch_size: 4, gradient_accumulation: 8 } },
      'H100',
      8,
      RUNNER_DEFAULTS,
    ),
    { model: 'm', gpu: 'H100', gpuCount: 8, method: 'full', seqLen: 1024, batch: 32 },
  );
  assert.equal(estimateCaseOf({ command: 'python train.py', model: { id: 'm' } }, 'H100', 1, RUNNER_DEFAULTS), undefined);
});

test('the error is relative to the estimate, signed', () => {
  assert.equal(errorPct(30, 31.2), '+4%');
  assert.equal(errorPct(2, 1.7), '−15%');
  assert.equal(errorPct(5, 5), '±0%');
  assert.equal(errorPct(0, 5), 'n/a');
});

test('the newest measured run of a close case is the match; a far one is not', () => {
  const measured = { gpus: [{ index: 0, torchPeakReservedMib: 31948.8 }], tokensPerSecond: 2340, runtimeS: 3600, firstStepS: 100 };
  const older = record('rft-old', { estimated: CASE, measured: { ...measured, tokensPerSecond: 2000 }, finishedAt: '2026-11-20T12:00:00Z' });
  const newer = record('rft-new', { name: 'llama3', estimated: { ...CASE, batch: 32 }, measured, finishedAt: '2026-11-21T12:00:00Z' });
  const far = record('rft-far', { estimated: { ...CASE, seqLen: 8192 }, measured, finishedAt: '2026-11-22T12:00:00Z' });
  const unmeasured = record('rft-none', { estimated: CASE, finishedAt: '2026-11-23T12:00:00Z' });
  const m = measuredMatch([older, far, newer, unmeasured], CASE);
  assert.equal(m?.record.id, 'rft-new');
  assert.equal(m?.text, 'measured on run llama3 (rft-new), at sequence 2048 and batch 32: 31.2 GB, 2,340 tokens/s');
  assert.equal(measuredMatch([older], CASE)?.text, 'measured on run rft-old: 31.2 GB, 2,000 tokens/s');
  assert.equal(measuredMatch([far, unmeasured], CASE), undefined);
  assert.equal(measuredMatch([older], { ...CASE, batch: 64 }), undefined, 'four times the batch is another case');
});

test('the lines of a run without an estimate still show what was measured', () => {
  const r = record('rft-x', {
    measured: { gpus: [{ index: 0, torchPeakAllocatedMib: 10240, smiPeakMib: 12288 }], firstStepS: 95 },
    costUsd: 3.5,
    launchedAt: Date.parse('2026-11-20T10:00:00Z'),
    readyAt: Date.parse('2026-11-20T10:14:05Z'),
    finishedAt: '2026-11-20T12:00:00Z',
  });
  assert.deepEqual(estimateVsActualLines(r), [
    'VRAM: actual 10.0 GB (no estimate)',
    'Cost: actual $3.50 (no estimate)',
    'Measured: nvidia-smi peak 12.0 GB, first step after 1m 35s, provisioning wait 14m 05s, billed 2h 00m',
  ]);
});

test("a run on several GPUs lists each GPU's peaks under the largest", () => {
  const r = record('rft-8', {
    measured: {
      gpus: [
        { index: 0, torchPeakReservedMib: 40960, smiPeakMib: 43008 },
        { index: 1, torchPeakAllocatedMib: 30720 },
      ],
    },
  });
  assert.deepEqual(estimateVsActualLines(r), [
    'VRAM: actual 40.0 GB (no estimate)',
    'Measured: nvidia-smi peak 42.0 GB',
    'GPU 0: torch 40.0 GB, nvidia-smi 42.0 GB',
    'GPU 1: torch 30.0 GB',
  ]);
});

test("the editor's VRAM lens leads with the user's measurement of the same spec case, then the model", () => {
  const measured = { gpus: [{ index: 0, torchPeakReservedMib: 31948.8 }], tokensPerSecond: 2340 };
  const runs = [record('rft-a', { name: 'llama3', estimated: CASE, measured, finishedAt: '2026-11-21T12:00:00Z' })];
  const spec = {
    model: { id: CASE.model },
    method: 'qlora',
    data: { max_seq_length: 2048 },
    trainer: { per_device_batch_size: 2, gradient_accumulation: 8 },
    target: { provider: 'ssh', gpu: 'A100-80GB' },
  };
  const m = measuredForSpec(looseRunSpec(spec), 'A100-80GB', runs);
  assert.equal(
    estimateLensTitle('≈ 30.0 GB of 80 GB on A100-80GB', m),
    'measured on run llama3 (rft-a): 31.2 GB, 2,340 tokens/s · model: ≈ 30.0 GB of 80 GB on A100-80GB',
  );
  assert.equal(
    measuredForSpec(looseRunSpec({ ...spec, target: { provider: 'ssh', gpu: 'A100-80GB', gpu_count: 2 } }), 'A100-80GB', runs),
    undefined,
    'two GPUs is another case',
  );
  assert.equal(estimateLensTitle('≈ 30.0 GB of 80 GB on A100-80GB', undefined), '≈ 30.0 GB of 80 GB on A100-80GB');
});
