// How a run is finished (runFinish.ts), with the host's side faked at the session: its status line, and an
// artifact download whose first try is cut (a channel closed without an exit status, as seen in the e2e).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunStore } from '../../../src/core/runs/store/runStore';
import { finishRun } from '../../../src/core/runs/lifecycle/runFinish';
import type { RunFinished, RunManagerContext, RunManagerDeps } from '../../../src/core/runs/lifecycle/runTypes';
import type { SshHost } from '../../../src/core/ssh/reconnect';
import type { SshSession } from '../../../src/core/ssh/session';
import type { RunRecord } from '../../../src/core/runs/store/runRecord';
import type { Provider } from '../../../src/core/providers/provider';

interface Setup {
  ctx: RunManagerContext;
  finished: RunFinished[];
  tries: () => number;
  log: string[];
  store: RunStore;
  id: string;
  reclaims: string[];
  terminated: string[];
}

function setup(
  downloadFailures: number,
  opts: { events?: ReadonlyArray<Record<string, unknown> | string>; patch?: Partial<RunRecord>; stopping?: boolean; exitCode?: number } = {},
): Setup {
  const dir = mkdtempSync(join(tmpdir(), 'rft-finish-'));
  const store = new RunStore(join(dir, 'runs.json'));
  const id = 'rft-20261125-180000-ab12';
  const localDir = join(dir, 'runs', id);
  mkdirSync(localDir, { recursive: true });
  const events = opts.events ?? [{ v: 1, ts: 1, type: 'finished', status: 'completed', exit_code: 0, adapter_path: 'outputs/adapter' }];
  writeFileSync(join(localDir, 'events.jsonl'), events.map((e) => `${typeof e === 'string' ? e : JSON.stringify(e)}\n`).join(''));
  const ws = join(dir, 'ws');
  const now = new Date().toISOString();
  store.add({
    id,
    name: 'x',
    specPath: '',
    specHash: '',
    createdAt: now,
    updatedAt: now,
    status: 'running',
    provider: 'ssh',
    host: 'h',
    remoteDir: `/home/u/.remote-finetune/runs/${id}`,
    localDir,
    workspaceDir: ws,
    outputs: { dir: 'outputs', download: ['adapter'] },
    ...opts.patch,
  });
  // The wrapper has exited with 0: the status line runStatus reads.
  const session = {
    run: async () => `${id}\t123\t0\t${opts.exitCode ?? 0}\t2026-11-25T18:00:00Z\t\t10\n`,
    exec: async () => ({ code: 0, stdout: Buffer.from('/home/u/.remote-finetune\n'), stderr: Buffer.alloc(0) }),
  } as unknown as SshSession;
  const host = { use: <T>(fn: (s: SshSession) => Promise<T>): Promise<T> => fn(session) } as unknown as SshHost;
  let n = 0;
  const finished: RunFinished[] = [];
  const log: string[] = [];
  const reclaims: string[] = [];
  const terminated: string[] = [];
  const provider = {
    kind: 'ec2',
    listOwned: async () => [],
    terminate: async (iid: string) => void terminated.push(iid),
    describe: async () => undefined,
  } as unknown as Provider;
  const ctx: RunManagerContext = {
    deps: { store, log: (l: string) => log.push(l), providerFor: () => provider } as unknown as RunManagerDeps,
    hostFor: () => host,
    localDirOf: () => localDir,
    watch: () => undefined,
    abortWatch: () => undefined,
    isStopping: () => opts.stopping === true,
    emitEvents: () => undefined,
    emitHostLink: () => undefined,
    emitLog: () => undefined,
    emitFinished: (f) => finished.push(f),
    rememberEnv: () => undefined,
    envFor: () => undefined,
    reclaimed: (rid, how) => void reclaims.push(`${rid}: ${how.detail}`),
    downloadArtifacts: async () => {
      n++;
      if (n <= downloadFailures) throw new Error('download of /x failed: exit null');
      return { bytes: 4096 };
    },
  };
  return { ctx, finished, reclaims, terminated, tries: () => n, log, store, id };
}

test('finish: an artifact download cut once is tried again and the adapter is recorded', async () => {
  const s = setup(1);
  await finishRun(s.ctx, s.id);
  assert.equal(s.tries(), 2);
  assert.equal(s.finished.length, 1);
  assert.equal(s.finished[0]!.record.status, 'completed');
  assert.match(s.finished[0]!.record.artifactsDir ?? '', /outputs.rft-20261125-180000-ab12.adapter$/);
  assert.ok(
    s.log.some((l) => /adapter download failed, trying once more: .*exit null/.test(l)),
    s.log.join('\n'),
  );
});

test('finish: a download that fails twice ends the run completed without an adapter, and says so', async () => {
  const s = setup(5);
  await finishRun(s.ctx, s.id);
  assert.equal(s.tries(), 2);
  assert.equal(s.finished[0]!.record.artifactsDir, undefined);
  assert.ok(s.log.some((l) => /adapter download failed: /.test(l)));
});

const notice = { v: 1, ts: 1, type: 'warning', code: 'spot-notice', message: 'EC2 will terminate this spot instance at 2026-11-25T18:00:00Z' };
const interrupted = { v: 1, ts: 2, type: 'finished', status: 'interrupted', exit_code: 143 };
const spotRun = { provider: 'ec2' as const, instanceId: 'i-1', maxAttempts: 3 };

test('finish: a spot run that stopped on the reclaim notice is handed to the relaunch, its instance ended now; nothing finishes', async () => {
  const s = setup(0, { events: [notice, interrupted], patch: spotRun, exitCode: 143 });
  await finishRun(s.ctx, s.id);
  assert.deepEqual(s.reclaims, [`${s.id}: ${notice.message}`]);
  assert.deepEqual(s.terminated, ['i-1']);
  assert.equal(s.finished.length, 0);
  assert.equal(s.store.get(s.id)!.status, 'running', 'the relaunch decides what comes next');
});

test('finish: a stop by the person, a crash, or a run without relaunch rules is never handed to the relaunch', async () => {
  const stopped = setup(0, { events: [notice, interrupted], patch: spotRun, stopping: true, exitCode: 143 });
  await finishRun(stopped.ctx, stopped.id);
  assert.deepEqual(stopped.reclaims, []);
  assert.equal(stopped.store.get(stopped.id)!.status, 'stopped');
  const crashed = setup(0, {
    events: [{ v: 1, ts: 1, type: 'finished', status: 'failed', exit_code: 1 }],
    patch: spotRun,
    exitCode: 1,
  });
  await finishRun(crashed.ctx, crashed.id);
  assert.deepEqual(crashed.reclaims, []);
  assert.equal(crashed.store.get(crashed.id)!.status, 'failed');
  const signalled = setup(0, { events: [interrupted], patch: spotRun, exitCode: 143 });
  await finishRun(signalled.ctx, signalled.id);
  assert.deepEqual(signalled.reclaims, [], 'a SIGTERM with no reclaim notice is not a reclaim');
  assert.equal(signalled.store.get(signalled.id)!.status, 'interrupted');
  const onDemand = setup(0, { events: [notice, interrupted], patch: { provider: 'ec2', instanceId: 'i-2' }, exitCode: 143 });
  await finishRun(onDemand.ctx, onDemand.id);
  assert.deepEqual(onDemand.reclaims, []);
});

// Issue 30 item 6: with a control key, a spot notice or a finished line counts only when the runner signed it.
const KEY = '5f'.repeat(32);
function signedLine(e: Record<string, unknown>): string {
  const body = JSON.stringify(e);
  const mac = createHmac('sha256', Buffer.from(KEY, 'hex')).update(body).digest('hex');
  return `${body.slice(0, -1)},"mac":"${mac}"}`;
}
const keyedSpotRun = { ...spotRun, controlKey: KEY };

test('finish: a spot notice the training script wrote, then a SIGTERM, is no reclaim: nothing is terminated or relaunched', async () => {
  const s = setup(0, { events: [JSON.stringify(notice), signedLine(interrupted)], patch: keyedSpotRun, exitCode: 143 });
  await finishRun(s.ctx, s.id);
  assert.deepEqual(s.reclaims, []);
  assert.deepEqual(s.terminated, []);
  assert.equal(s.store.get(s.id)!.status, 'interrupted');
});

test("finish: the runner's own signed notice still hands the run to the relaunch", async () => {
  const s = setup(0, { events: [signedLine(notice), signedLine(interrupted)], patch: keyedSpotRun, exitCode: 143 });
  await finishRun(s.ctx, s.id);
  assert.deepEqual(s.reclaims, [`${s.id}: ${notice.message}`]);
  assert.deepEqual(s.terminated, ['i-1']);
});

test('finish: a finished line appended after the runner\'s (a forged "completed", a wrong MAC) does not decide the outcome', async () => {
  const failed = { v: 1, ts: 3, type: 'finished', status: 'failed', exit_code: 1 };
  const forged = { v: 1, ts: 4, type: 'finished', status: 'completed', exit_code: 0, adapter_path: 'outputs/adapter' };
  const s = setup(0, {
    events: [signedLine(failed), JSON.stringify(forged), `${JSON.stringify(forged).slice(0, -1)},"mac":"${'0'.repeat(64)}"}`],
    patch: { controlKey: KEY },
    exitCode: 1,
  });
  await finishRun(s.ctx, s.id);
  assert.equal(s.store.get(s.id)!.status, 'failed');
  assert.equal(s.tries(), 0, 'no adapter download for a run that failed');
});

test('finish: preempted, stalled and budget-stopped runs keep their own word, with no failure attached, and a stalled one is never failed', async () => {
  const firstError = { v: 1, ts: 1, type: 'error', message: 'NCCL watchdog: collective timed out' };
  for (const status of ['preempted', 'stalled', 'budget-stopped'] as const) {
    const s = setup(0, { events: [firstError, { v: 1, ts: 2, type: 'finished', status, exit_code: 143 }], exitCode: 143 });
    await finishRun(s.ctx, s.id);
    const rec = s.store.get(s.id)!;
    assert.equal(rec.status, status);
    assert.equal(rec.failure, undefined, `${status}: an error line is not what ended it`);
    assert.equal(s.finished[0]!.record.status, status);
  }
  // A preempted spot run with relaunch rules goes to the relaunch, as an interrupted one did.
  const spot = setup(0, { events: [notice, { v: 1, ts: 2, type: 'finished', status: 'preempted', exit_code: 143 }], patch: spotRun, exitCode: 143 });
  await finishRun(spot.ctx, spot.id);
  assert.deepEqual(spot.reclaims, [`${spot.id}: ${notice.message}`]);
});

test('finish: a multi-node run that rank 0 ended as stalled stays stalled, whatever the stopped ranks said', async () => {
  const s = setup(0, {
    events: [{ v: 1, ts: 2, type: 'finished', status: 'stalled', exit_code: 143 }],
    patch: { machines: [{ rank: 1, host: 'h2', status: 'failed', exitCode: 143, failure: { message: 'the run exited with code 143' }, endedAt: 1 }] },
    exitCode: 143,
  });
  await finishRun(s.ctx, s.id);
  assert.equal(s.store.get(s.id)!.status, 'stalled');
  assert.equal(s.store.get(s.id)!.failure, undefined);
});
