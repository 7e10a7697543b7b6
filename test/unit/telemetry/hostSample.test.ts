// CPU and memory lines of gpu.csv from a host without an NVIDIA GPU: the reader agrees with what
// python-runner/tests/test_host_sample.py expects of the same files (test/fixtures/host-samples), and a run
// folder's source hands them to the GPU panel as host samples, never as GPU samples.
import { after, test } from 'node:test';
import * as assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseHostCsvLine } from '../../../src/core/telemetry/hostSample';
import { parseGpuCsvLine } from '../../../src/core/telemetry/nvidiaSmi';
import { LocalRunDataSource } from '../../../src/features/panels/localRunSource';
import type { GpuSample, HostSample, HostState } from '../../../src/protocol/gpu';

const HOST_DIR = join(__dirname, '../../fixtures/host-samples');
interface Expected {
  gpu_csv: { file: string; samples: unknown[]; not_cpu_lines: string[] };
}
const EXPECTED = JSON.parse(readFileSync(join(HOST_DIR, 'expected.json'), 'utf8')) as Expected;
const dir = mkdtempSync(join(tmpdir(), 'rft-hostsample-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test("the runner's CPU-only gpu.csv parses as expected.json says, and no line of it as a GPU sample", () => {
  const lines = readFileSync(join(HOST_DIR, EXPECTED.gpu_csv.file), 'utf8').split('\n').filter(Boolean);
  assert.deepEqual(
    lines.map((l) => parseHostCsvLine(l)),
    EXPECTED.gpu_csv.samples,
  );
  assert.deepEqual(
    lines.map((l) => parseGpuCsvLine(l)),
    lines.map(() => undefined),
  );
});

test('lines that are not CPU lines are refused', () => {
  for (const line of [...EXPECTED.gpu_csv.not_cpu_lines, `1, cpu, 1, 2, 3, ${'4'.repeat(300)}`]) assert.equal(parseHostCsvLine(line), undefined, line);
});

test("a run folder of a GPU-less host: the GPU panel's source gives CPU/memory samples, then the no-gpu state", async () => {
  const gpu = join(dir, 'gpu.csv');
  const events = join(dir, 'events.jsonl');
  copyFileSync(join(HOST_DIR, EXPECTED.gpu_csv.file), gpu);
  writeFileSync(
    events,
    `${JSON.stringify({ v: 1, ts: 1, type: 'warning', code: 'no-gpu', message: "No NVIDIA GPU on this host: nvidia-smi was not found on PATH. The GPU panel shows this host's CPU and memory instead; training will run on CPU or fail." })}\n`,
  );
  const src = await new LocalRunDataSource({ gpu, events }, { pollMs: 30 }).start();
  const host: HostSample[] = [];
  const gpus: GpuSample[] = [];
  const states: HostState[] = [];
  src.onHostSamples((s) => host.push(...s));
  src.onGpuSamples((s) => gpus.push(...s));
  src.onHostState((s) => states.push(s));
  for (const t0 = Date.now(); (host.length < 5 || states[states.length - 1]?.kind !== 'noGpu') && Date.now() - t0 < 5000;)
    await new Promise((r) => setTimeout(r, 20));
  assert.equal(host.length, 5);
  assert.deepEqual(host[1], { t: 1795829604095, cpuPct: 54.5, cpus: 2, memoryUsedMiB: 1328, memoryTotalMiB: 24105.6 });
  assert.deepEqual(gpus, []);
  assert.equal(states[states.length - 1]?.kind, 'noGpu');
  src.dispose();
});
