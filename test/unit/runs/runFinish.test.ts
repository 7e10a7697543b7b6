// How a run is finished (runFinish.ts), with the host's side faked at the session: its status line, and an
// artifact download whose first try is cut (a channel closed without an exit status, as seen in the e2e).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunStore } from '../../../src/core/runs/runStore';
import { finishRun } from '../../../src/core/runs/runFinish';
import type { RunFinished, RunManagerContext, RunManagerDeps } from '../../../src/core/runs/runTypes';
import type { SshHost } from '../../../src/core/ssh/reconnect';
import type { SshSession } from '../../../src/core/ssh/session';

function setup(downloadFailures: number): { ctx: RunManagerContext; finished: RunFinished[]; tries: () => number; log: string[]; store: RunStore; id: string } {
  const dir = mkdtempSync(join(tmpdir(), 'rft-finish-'));
  const store = new RunStore(join(dir, 'runs.json'));
  const id = 'rft-20261125-180000-ab12';
  const localDir = join(dir, 'runs', id);
  mkdirSync(localDir, { recursive: true });
  writeFileSync(
    join(localDir, 'events.jsonl'),
    `${JSON.stringify({ v: 1, ts: 1, type: 'finished', status: 'completed', exit_code: 0, adapter_path: 'outputs/adapter' })}\n`,
  );
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
    offsets: { output_log: 0, events: 0, gpu: 0 },
    localDir,
    workspaceDir: ws,
    outputs: { dir: 'outputs', download: ['adapter'] },
  });
  // The wrapper has exited with 0: the status line runStatus reads.
  const session = {
    run: async () => `${id}\t123\t0\t0\t2026-11-25T18:00:00Z\t\t10\n`,
    exec: async () => ({ code: 0, stdout: Buffer.from('/home/u/.remote-finetune\n'), stderr: Buffer.alloc(0) }),
  } as unknown as SshSession;
  const host = { use: <T>(fn: (s: SshSession) => Promise<T>): Promise<T> => fn(session) } as unknown as SshHost;
  let n = 0;
  const finished: RunFinished[] = [];
  const log: string[] = [];
  const ctx: RunManagerContext = {
    deps: { store, log: (l: string) => log.push(l) } as unknown as RunManagerDeps,
    hostFor: () => host,
    localDirOf: () => localDir,
    watch: () => undefined,
    abortWatch: () => undefined,
    isStopping: () => false,
    emitEvents: () => undefined,
    emitFinished: (f) => finished.push(f),
    rememberEnv: () => undefined,
    envFor: () => undefined,
    reclaimed: () => undefined,
    downloadArtifacts: async () => {
      n++;
      if (n <= downloadFailures) throw new Error('download of /x failed: exit null');
      return { bytes: 4096 };
    },
  };
  return { ctx, finished, tries: () => n, log, store, id };
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
