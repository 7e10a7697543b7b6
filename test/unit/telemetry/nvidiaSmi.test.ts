import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NVIDIA_SMI_GPU_FIELDS, parseComputeAppLine, parseNvidiaSmiGpuLine } from '../../../src/core/telemetry/nvidiaSmi';
import { nvidiaSmiQueryArgs, nvidiaSmiSaysNoGpu, parseGpuCsv, parseNvidiaSmiGpuCsv } from '../../support/nvidiaSmiText';

// Hand-written in nvidia-smi's documented format (no GPU machine here; see the folder's README).
const fixture = (f: string): string => readFileSync(join(__dirname, '../../fixtures/nvidia-smi', f), 'utf8');

test('nvidia-smi: query arguments name the ten fields, in order, with -lms only for a loop', () => {
  assert.deepEqual(nvidiaSmiQueryArgs(), [
    '--query-gpu=index,name,utilization.gpu,utilization.memory,memory.used,memory.total,temperature.gpu,power.draw,power.limit,clocks.sm',
    '--format=csv,noheader,nounits',
  ]);
  assert.deepEqual(nvidiaSmiQueryArgs(500).slice(-2), ['-lms', '500']);
  assert.equal(NVIDIA_SMI_GPU_FIELDS.length, 10);
});

test('nvidia-smi: an A100 -lms loop parses into six samples with units stripped', () => {
  const r = parseNvidiaSmiGpuCsv(fixture('a100_lms.csv'));
  assert.deepEqual(r.rejectedLines, []);
  assert.equal(r.samples.length, 6);
  assert.deepEqual(r.samples[2], {
    index: 0,
    name: 'NVIDIA A100-SXM4-40GB',
    utilizationGpu: 97,
    utilizationMemory: 41,
    memoryUsedMiB: 24580,
    memoryTotalMiB: 40960,
    temperatureC: 52,
    powerDrawW: 301.22,
    powerLimitW: 400,
    clocksSmMHz: 1410,
  });
});

test('nvidia-smi: eight GPUs give eight indices per block', () => {
  const r = parseNvidiaSmiGpuCsv(fixture('h100_x8_lms.csv'));
  assert.equal(r.samples.length, 16);
  assert.deepEqual([...new Set(r.samples.map((s) => s.index))], [0, 1, 2, 3, 4, 5, 6, 7]);
});

test('nvidia-smi: [N/A] and [Not Supported] read as null, the rest of the line survives', () => {
  const r = parseNvidiaSmiGpuCsv(fixture('t4_na.csv'));
  assert.equal(r.samples.length, 3);
  const rtx = r.samples[1]!;
  assert.equal(rtx.name, 'NVIDIA GeForce RTX 3090');
  assert.equal(rtx.utilizationMemory, null);
  assert.equal(rtx.powerDrawW, null);
  assert.equal(rtx.memoryUsedMiB, 22100);
  const t4 = r.samples[2]!;
  assert.equal(t4.utilizationGpu, null);
  assert.equal(t4.clocksSmMHz, null);
  assert.equal(t4.powerLimitW, 70);
});

test('nvidia-smi: the runner gpu.csv carries the sample time first', () => {
  const r = parseGpuCsv(fixture('gpu_csv_written.csv'));
  assert.equal(r.samples.length, 3);
  assert.equal(r.samples[0]!.ts, 1763737200.512);
  assert.equal(r.samples[2]!.powerDrawW, null);
  // a raw nvidia-smi line is not a gpu.csv line and vice versa
  assert.equal(parseGpuCsv(fixture('a100_lms.csv')).samples.length, 0);
});

test('nvidia-smi: headers, warnings and truncated lines are refused by line number, never thrown', () => {
  const r = parseNvidiaSmiGpuCsv(fixture('garbage.txt'));
  assert.deepEqual(r.samples, []);
  assert.deepEqual(r.rejectedLines, [1, 2, 3, 4]);
  assert.equal(parseNvidiaSmiGpuLine('0, Weird, Name, With Commas, 1, 2, 3, 4, 5, 6, 7, 8')?.name, 'Weird, Name, With Commas');
});

test('nvidia-smi: per-process memory, with and without the sampler timestamp', () => {
  const lines = fixture('compute_apps.csv').trim().split('\n');
  const a = parseComputeAppLine(lines[0]!);
  assert.equal(a?.pid, 4242);
  assert.equal(a?.usedMemoryMiB, 24570);
  assert.equal(parseComputeAppLine(lines[1]!)?.usedMemoryMiB, null);
  assert.equal(parseComputeAppLine(`1763737200.5, ${lines[0]!}`, true)?.ts, 1763737200.5);
  assert.equal(parseComputeAppLine('no processes', false), undefined);
});

test('nvidia-smi: a host without a driver is recognised', () => {
  assert.ok(nvidiaSmiSaysNoGpu(fixture('no_gpu.txt')));
  assert.ok(!nvidiaSmiSaysNoGpu(fixture('a100_lms.csv')));
});
