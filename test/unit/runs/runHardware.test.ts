// Issue 39.1: the run records the hardware it had beside the GPU its spec asked for, and rows, tooltips, Compare
// and Merge's advice use what was used: a host with no GPU (after "Start Anyway") is "CPU only (spec asked
// A100-40GB)", never "A100-40GB"; the runner's gpu.csv (real nvidia-smi captures) replaces the probe's word.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runRecordSchema } from '../../../src/core/runs/store/runRecord';
import type { RunRecord } from '../../../src/core/runs/store/runRecord';
import { RunStore } from '../../../src/core/runs/store/runStore';
import { runDescription, runTooltipLines } from '../../../src/core/runs/view/runSummary';
import { buildComparison } from '../../../src/core/runs/view/runCompare';
import { mergePlanFor } from '../../../src/core/runs/outputs/adapterMerge';
import { cardFacts } from '../../../src/core/runs/outputs/hubPublish';
import { catalogGpu, GpuCsvBoards, hardwareFromProbe, usedHardwareLabel } from '../../../src/core/runs/view/runHardware';
import type { ProbeOutcome } from '../../../src/core/hosts/gpuCheck';

const FIXTURES = resolve(__dirname, '../../fixtures/nvidia-smi');

const base = (patch: Partial<RunRecord> = {}): RunRecord =>
  runRecordSchema.parse({
    id: 'rft-20261127-101500-ab12',
    name: 'qlora-sft',
    specPath: '/ws/finetune.yaml',
    specHash: 'h',
    createdAt: '2026-11-27T10:15:00.000Z',
    updatedAt: '2026-11-27T10:25:00.000Z',
    finishedAt: '2026-11-27T10:25:00.000Z',
    status: 'completed',
    provider: 'ssh',
    host: 'box',
    gpu: 'A100-40GB',
    ...patch,
  });

const none = { probe: { kind: 'none', reason: 'nvidia-smi: command not found' } } as unknown as ProbeOutcome;

test('a run on a GPU-less host says CPU only beside the ask: row, tooltip, Compare, Merge advice', () => {
  const hardware = hardwareFromProbe(none);
  assert.deepEqual(hardware, { gpus: [], source: 'probe' });
  const r = base({ hardware: hardware! });
  assert.equal(usedHardwareLabel(r), 'CPU only (spec asked A100-40GB)');
  assert.match(runDescription(r), / · CPU only \(spec asked A100-40GB\)/);
  assert.ok(!/· A100-40GB( ·|$)/.test(runDescription(r)), runDescription(r));
  assert.match(runTooltipLines(r)[1]!, /^ssh · box · CPU only \(spec asked A100-40GB\)$/);
  const dir = mkdtempSync(join(tmpdir(), 'rft-hw-'));
  const cmp = buildComparison([
    { record: r, localDir: dir },
    { record: base({ id: 'rft-20261127-101600-cd34' }), localDir: dir },
  ]);
  assert.deepEqual(
    cmp.runs.map((c) => c.gpu),
    ['CPU only (spec asked A100-40GB)', 'A100-40GB'],
  );
  const plan = mergePlanFor(r, 'meta-llama/Llama-3.1-8B');
  assert.deepEqual([plan.dtype, plan.device], ['fp32', 'cpu']);
  assert.match(plan.reason, /no GPU \(CPU only \(spec asked A100-40GB\)\)/);
  assert.ok(!plan.reason.includes('supports bf16'), plan.reason);
  // The model card published from the run says what trained it.
  assert.equal(cardFacts(r).gpu, 'CPU only (spec asked A100-40GB)');
});

test('another GPU than asked is named with the ask; the asked one alone; Merge advises for the board used', () => {
  const t4 = base({ hardware: { gpus: [{ name: 'Tesla T4', count: 2 }], source: 'runner' } });
  assert.equal(usedHardwareLabel(t4), '2 × Tesla T4 (spec asked A100-40GB)');
  assert.equal(mergePlanFor(t4, 'Qwen/Qwen2.5-1.5B').dtype, 'fp16', 'a T4 has no bf16, whatever the spec asked');
  const a100 = base({ hardware: { gpus: [{ name: 'NVIDIA A100-SXM4-80GB', count: 1 }], source: 'runner' } });
  assert.equal(usedHardwareLabel(a100), '1 × NVIDIA A100-SXM4-80GB (spec asked A100-40GB)', 'the 80 GB board is not the 40 GB asked for');
  // The boards asked for keep the ask's short name, with their count.
  assert.equal(usedHardwareLabel(base({ hardware: { gpus: [{ name: 'NVIDIA A100-SXM4-40GB', count: 1 }], source: 'runner' } })), 'A100-40GB');
  assert.equal(usedHardwareLabel(base({ hardware: { gpus: [{ name: 'NVIDIA A100-SXM4-40GB', count: 2 }], source: 'runner' } })), '2 × A100-40GB');
  assert.equal(usedHardwareLabel(base({ gpu: undefined, hardware: { gpus: [{ name: 'NVIDIA L4', count: 1 }], source: 'runner' } })), '1 × NVIDIA L4');
  assert.equal(catalogGpu('NVIDIA A100-SXM4-80GB')?.id, 'A100-80GB');
  assert.equal(catalogGpu('NVIDIA H100 80GB HBM3')?.id, 'H100');
  assert.equal(mergePlanFor(a100, 'meta-llama/Llama-3.1-8B').reason, 'A100-80GB supports bf16 (about 19.3 GB)');
});

test('old records without hardware read as before and show the spec GPU', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-hw-old-'));
  const file = join(dir, 'runs.json');
  const old = { ...base() } as Record<string, unknown>;
  delete old.hardware;
  writeFileSync(file, JSON.stringify({ version: 1, runs: [old] }));
  const store = new RunStore(file);
  assert.deepEqual(store.problems, []);
  const r = store.get('rft-20261127-101500-ab12')!;
  assert.equal(usedHardwareLabel(r), 'A100-40GB');
  assert.match(runDescription(r), / · A100-40GB/);
  assert.equal(mergePlanFor(r, undefined).dtype, 'bf16');
  // A host's oversized or control-character name is bounded before it is kept.
  assert.equal(runRecordSchema.safeParse({ ...base(), hardware: { gpus: [{ name: 'x'.repeat(201), count: 1 }], source: 'runner' } }).success, false);
});

test("the runner's gpu.csv (real captures) names the boards; only the run's own when the queue gave it some", () => {
  const one = new GpuCsvBoards();
  assert.equal(one.feed(readFileSync(join(FIXTURES, 'gpu_csv_written.csv'), 'utf8')), true);
  assert.deepEqual(one.hardware(), { gpus: [{ name: 'NVIDIA A100-SXM4-40GB', count: 1 }], source: 'runner' });
  // An 8 × H100 capture written as gpu.csv (the sample time first), fed in pieces as the tail brings it.
  const lines = readFileSync(join(FIXTURES, 'h100_x8_lms.csv'), 'utf8').trim().split('\n');
  const csv = lines.map((l, i) => `${1763737200 + Math.floor(i / 8) * 2}.5, ${l}\n`).join('');
  const eight = new GpuCsvBoards();
  eight.feed(csv.slice(0, 100));
  eight.feed(csv.slice(100));
  assert.deepEqual(eight.hardware(), { gpus: [{ name: 'NVIDIA H100 80GB HBM3', count: 8 }], source: 'runner' });
  assert.deepEqual(eight.hardware([2, 3]), { gpus: [{ name: 'NVIDIA H100 80GB HBM3', count: 2 }], source: 'runner' });
  assert.equal(new GpuCsvBoards().hardware(), undefined, 'nothing sampled, nothing claimed');
});
