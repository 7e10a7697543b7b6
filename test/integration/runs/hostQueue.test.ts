// The host's queue (python-runner gpuqueue.py) through the run lifecycle, against real OpenSSH servers on
// loopback: a run started on a busy one-GPU host waits on the host (queued, position) and starts when the GPU
// frees, also with no VS Code watching in between (the manager is disposed and a new one reattaches); a
// queued run is cancelled with Stop and never trains; a two-GPU host runs two single-GPU runs side by side on
// different devices. The GPUs are an nvidia-smi STAND-IN (test/support/standins/nvidia-smi; no GPU here).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import type { RunManager, RunFinished } from '../../../src/core/runs/lifecycle/runManager';
import type { RunRecord } from '../../../src/core/runs/store/runRecord';
import { ownScriptWorkspace, runFinished, sshStartRequest, testRunManager, trustingConnectOptions, until } from '../../support/runHosts';
import type { ConnectOptions } from '../../../src/core/ssh/session';

const REPO = resolve(__dirname, '../../..');
let oneGpu: Sshd;
let twoGpus: Sshd;
let connectOptions: ConnectOptions;

before(async () => {
  const standins = [join(REPO, 'test/support/standins')];
  oneGpu = await startSshd({ pathPrepend: standins, env: { RFT_QUEUE_POLL_S: '0.2' } });
  twoGpus = await startSshd({ pathPrepend: standins, env: { RFT_QUEUE_POLL_S: '0.2', RFT_STANDIN_GPU_COUNT: '2' } });
  connectOptions = trustingConnectOptions([oneGpu, twoGpus]);
});
after(async () => {
  await oneGpu?.stop();
  await twoGpus?.stop();
});

const manager = (storage: string): RunManager => testRunManager(storage, connectOptions);

const req = (sshd: Sshd, ws: string, name: string, steps: number): Parameters<RunManager['start']>[0] =>
  sshStartRequest(sshd, ws, name, `python3 train.py --steps ${steps} --sleep 0.2`);
const workspace = ownScriptWorkspace;

const finished = (m: RunManager, id: string): Promise<RunFinished> => runFinished(m, id, 120_000);

interface Ev {
  type: string;
  ts: number;
  position?: number;
  gpus?: number[];
  status?: string;
  waited_s?: number;
}
function events(m: RunManager, id: string): Ev[] {
  return readFileSync(join(m.localDirOf(id), 'events.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Ev);
}
const at = (evs: Ev[], type: string): Ev => {
  const e = evs.find((x) => x.type === type);
  assert.ok(e, `no ${type} event`);
  return e;
};

test('host queue: a run on a busy GPU waits on the host, also with VS Code gone, and starts when the GPU frees', { timeout: 240_000 }, async () => {
  const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
  const ws = workspace();
  const first = manager(storage);
  const a = await first.start(req(oneGpu, ws, 'first', 20));
  const b = await first.start(req(oneGpu, ws, 'second', 3));
  let rec: RunRecord | undefined;
  await until('the second run queued', () => {
    rec = first.store.get(b.id);
    return rec?.queuePosition === 1;
  });
  assert.equal(rec?.status, 'running');
  await first.dispose(); // the laptop closes: the queue lives on the host

  await new Promise((r) => setTimeout(r, 1500));
  const second = manager(storage);
  const doneA = finished(second, a.id);
  const doneB = finished(second, b.id);
  assert.equal(second.reattachAll(), 2);
  const [fa, fb] = await Promise.all([doneA, doneB]);
  assert.equal(fa.record.status, 'completed');
  assert.equal(fb.record.status, 'completed');
  assert.deepEqual(fb.record.gpuIndices, [0]);
  assert.equal(fb.record.queuePosition, undefined);
  const ea = events(second, a.id);
  const eb = events(second, b.id);
  assert.ok(at(eb, 'assigned').ts >= at(ea, 'finished').ts - 0.05, 'the second run got the GPU before the first finished');
  assert.equal(at(eb, 'queued').position, 1);
  await second.dispose();
});

test('host queue: Stop on a queued run cancels it before it trains; the run ahead goes on', { timeout: 240_000 }, async () => {
  const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
  const ws = workspace();
  const m = manager(storage);
  const a = await m.start(req(oneGpu, ws, 'ahead', 15));
  const b = await m.start(req(oneGpu, ws, 'waiting', 3));
  await until('the waiting run queued', () => m.store.get(b.id)?.queuePosition === 1);
  const doneA = finished(m, a.id);
  const doneB = finished(m, b.id);
  await m.stop(b.id, 10_000);
  const fb = await doneB;
  assert.equal(fb.record.status, 'stopped');
  const log = join(m.localDirOf(b.id), 'output.log');
  assert.ok(!existsSync(log) || !/line 1 of the run/.test(readFileSync(log, 'utf8')), 'the cancelled run trained');
  assert.equal(events(m, b.id).at(-1)?.status, 'stopped');
  const fa = await doneA;
  assert.equal(fa.record.status, 'completed');
  await m.dispose();
});

test('host queue: a two-GPU host runs two single-GPU runs side by side on different GPUs', { timeout: 240_000 }, async () => {
  const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
  const ws = workspace();
  const m = manager(storage);
  const a = await m.start(req(twoGpus, ws, 'left', 10));
  const doneA = finished(m, a.id);
  const b = await m.start(req(twoGpus, ws, 'right', 10));
  const [fa, fb] = await Promise.all([doneA, finished(m, b.id)]);
  assert.equal(fa.record.status, 'completed');
  assert.equal(fb.record.status, 'completed');
  assert.deepEqual([...(fa.record.gpuIndices ?? []), ...(fb.record.gpuIndices ?? [])].sort(), [0, 1]);
  const ea = events(m, a.id);
  const eb = events(m, b.id);
  for (const e of [ea, eb]) assert.ok((at(e, 'assigned').waited_s ?? 99) < 1, 'a run waited with a GPU free');
  assert.ok(Math.max(at(ea, 'assigned').ts, at(eb, 'assigned').ts) < Math.min(at(ea, 'finished').ts, at(eb, 'finished').ts), 'the runs did not overlap');
  await m.dispose();
});
