// The local run source over real files: appends are picked up by byte offset, a rewritten file starts over.
import { after, test } from 'node:test';
import * as assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalRunDataSource, runFilesNear } from '../../../src/features/panels/localRunSource';
import type { RunEvent } from '../../../src/core/telemetry/events';
import type { GpuSample, HostState } from '../../../src/protocol/gpu';

const dir = mkdtempSync(join(tmpdir(), 'rft-localsrc-'));
after(() => rmSync(dir, { recursive: true, force: true }));

async function until(pred: () => boolean, what: string, ms = 5000): Promise<void> {
  const t0 = Date.now();
  while (!pred()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test("finds a run folder's files from any one of them", () => {
  const d = join(dir, 'run-a');
  rmSync(d, { recursive: true, force: true });
  mkdirSync(d);
  for (const f of ['output.log', 'events.jsonl', 'gpu.csv']) writeFileSync(join(d, f), '');
  assert.deepEqual(runFilesNear(join(d, 'gpu.csv')), {
    log: join(d, 'output.log'),
    events: join(d, 'events.jsonl'),
    gpu: join(d, 'gpu.csv'),
    procs: undefined,
  });
  assert.equal(runFilesNear('/elsewhere/train.txt').log, '/elsewhere/train.txt');
});

test('log bytes, events and GPU samples are tailed by byte offset as the files grow', async () => {
  const log = join(dir, 'output.log');
  const events = join(dir, 'events.jsonl');
  const gpu = join(dir, 'gpu.csv');
  writeFileSync(log, 'first\n');
  writeFileSync(events, readFileSync(join(__dirname, '../../fixtures/events/qlora_run.jsonl')));
  writeFileSync(gpu, '');
  const src = await new LocalRunDataSource({ log, events, gpu }, { pollMs: 30 }).start();
  const got: RunEvent[] = [];
  const samples: GpuSample[] = [];
  const states: HostState[] = [];
  src.onEvents((e) => got.push(...e));
  src.onGpuSamples((s) => samples.push(...s));
  src.onHostState((s) => states.push(s));
  await until(() => got.length > 0, 'fixture events');
  const fixtureCount = got.length;
  assert.equal(src.logSize(), 6);
  let grown = 0;
  src.onLogGrown((n) => {
    grown = n;
  });
  appendFileSync(log, 'second line\n');
  await until(() => grown === 18, 'log growth');
  assert.equal(Buffer.from((await src.readLog(6, 100)).bytes).toString(), 'second line\n');
  appendFileSync(events, `${JSON.stringify({ v: 1, ts: 1, type: 'metrics', step: 9999, loss: 0.5 })}\nnot json\n{"v":1,"ts":1,"type":"metrics","step"`);
  await until(() => got.length === fixtureCount + 1, 'appended event');
  assert.equal(src.badEventLines, 1, 'the bad line is counted, the partial last line waits');
  appendFileSync(events, ':10000}\n');
  await until(() => got.length === fixtureCount + 2, 'completed partial line');
  appendFileSync(gpu, '1763737200.5, 0, NVIDIA A100-SXM4-40GB, 37, 12, 10240, 40960, 45, [N/A], 400.00, 1410\n');
  await until(() => samples.length === 1, 'gpu sample');
  assert.equal(samples[0]!.powerW, null);
  assert.equal(samples[0]!.t, 1763737200500);
  assert.deepEqual(states.at(-1), { kind: 'connected' });
  // A late subscriber gets the history replayed.
  const replay: RunEvent[] = [];
  src.onEvents((e) => replay.push(...e)).dispose();
  assert.equal(replay.length, got.length);
  src.dispose();
});

test('no gpu.csv is the "no GPU" state, not an empty chart', async () => {
  const log = join(dir, 'only.log');
  writeFileSync(log, 'x\n');
  const src = await new LocalRunDataSource({ log }).start();
  let state: HostState | undefined;
  src.onHostState((s) => {
    state = s;
  });
  assert.equal(state?.kind, 'noGpu');
  src.dispose();
});

test("a host with no NVIDIA GPU: the runner's no-gpu event turns the GPU state into noGpu (gpu.csv never comes)", async () => {
  const d = join(dir, 'run-nogpu');
  mkdirSync(d, { recursive: true });
  const events = join(d, 'events.jsonl');
  writeFileSync(events, '');
  const src = await new LocalRunDataSource({ log: join(d, 'output.log'), events, gpu: join(d, 'gpu.csv') }, { pollMs: 30 }).start();
  const states: HostState[] = [];
  src.onHostState((s) => states.push(s));
  assert.equal(states[0]?.kind, 'connecting');
  appendFileSync(
    events,
    `${JSON.stringify({ v: 1, ts: 1, type: 'warning', code: 'no-gpu', message: 'No NVIDIA GPU on this host: nvidia-smi is not installed. GPU charts stay empty; training will run on CPU or fail.' })}\n`,
  );
  await until(() => states.some((s) => s.kind === 'noGpu'), 'noGpu state');
  const last = states[states.length - 1];
  assert.ok(last?.kind === 'noGpu' && /nvidia-smi is not installed/.test(last.detail));
  src.dispose();
});

test("a GPU lost mid-run: the runner's gpu-lost event sets gpuLost, and samples read afterwards do not hide it", async () => {
  const d = join(dir, 'run-lost');
  mkdirSync(d, { recursive: true });
  const events = join(d, 'events.jsonl');
  const gpu = join(d, 'gpu.csv');
  writeFileSync(events, '');
  writeFileSync(gpu, '');
  const src = await new LocalRunDataSource({ log: join(d, 'output.log'), events, gpu }, { pollMs: 30 }).start();
  const states: HostState[] = [];
  src.onHostState((s) => states.push(s));
  appendFileSync(
    events,
    `${JSON.stringify({ v: 1, ts: 2, type: 'warning', code: 'gpu-lost', message: 'A GPU stopped responding (it fell off the bus or needs a reset): reset the GPU or reboot the host; runs on it will fail until then.' })}\n`,
  );
  await until(() => states.some((s) => s.kind === 'gpuLost'), 'gpuLost state');
  let sampled = 0;
  src.onGpuSamples((b) => {
    sampled += b.length;
  });
  appendFileSync(gpu, '1763737200.5, 0, NVIDIA A100-SXM4-40GB, 37, 12, 10240, 40960, 45, [N/A], 400.00, 1410\n');
  await until(() => sampled > 0, 'the late sample');
  const last = states[states.length - 1];
  assert.ok(last?.kind === 'gpuLost' && /fell off the bus/.test(last.detail), JSON.stringify(last));
  src.dispose();
});
