import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunRecord } from '../../../src/core/runs/store/runRecord';
import { RunStore } from '../../../src/core/runs/store/runStore';
import {
  afterReclaimAdvice,
  mayOfferResume,
  newestCheckpoint,
  relaunchStartNote,
  resumeCheck,
  runAgainChoices,
} from '../../../src/core/runs/lifecycle/runResume';
import { runAdapterPath } from '../../../src/core/runs/sync/runOutputs';
import { runTooltipLines } from '../../../src/core/runs/view/runSummary';
import { typedSpec } from '../../support/typedSpec';

function rec(over: Partial<RunRecord> = {}): RunRecord {
  const now = new Date().toISOString();
  return {
    id: 'rft-20261127-180000-abcd',
    name: 'tiny',
    specPath: '/w/finetune.yaml',
    specHash: 'h',
    createdAt: now,
    updatedAt: now,
    status: 'stopped',
    provider: 'ssh',
    host: 'gpu-box',
    remoteDir: '/home/u/.remote-finetune/runs/rft-20261127-180000-abcd',
    ...over,
  };
}

function eventsDir(lines: readonly object[]): string {
  const d = mkdtempSync(join(tmpdir(), 'rft-resume-'));
  writeFileSync(join(d, 'events.jsonl'), lines.map((l) => JSON.stringify({ v: 1, ts: 1, ...l })).join('\n') + '\nnot json\n');
  return d;
}

test('resume: the newest checkpoint is the highest step the run reported, not the last line', () => {
  const d = eventsDir([
    { type: 'checkpoint', step: 20, path: 'outputs/checkpoints/r/checkpoint-20' },
    { type: 'checkpoint', step: 40, path: 'outputs/checkpoints/r/checkpoint-40' },
    { type: 'checkpoint', step: 30, path: 'outputs/checkpoints/r/checkpoint-30' },
  ]);
  assert.deepEqual(newestCheckpoint(d), { step: 40, path: 'outputs/checkpoints/r/checkpoint-40' });
  assert.equal(newestCheckpoint(eventsDir([{ type: 'metrics', step: 3, loss: 1 }])), undefined);
  assert.equal(newestCheckpoint(undefined), undefined);
});

test('resume: offered on a stopped, failed or interrupted run whose host still holds its folder and a checkpoint', () => {
  const ck = { step: 7, path: 'outputs/checkpoints/r/checkpoint-7' };
  for (const status of ['stopped', 'failed', 'interrupted'] as const) assert.deepEqual(resumeCheck(rec({ status }), ck, true), { ok: true, checkpoint: ck });
  const why = (r: RunRecord, c: typeof ck | 'none' = ck, spec = true): string => {
    const v = resumeCheck(r, c === 'none' ? undefined : c, spec);
    assert.equal(v.ok, false);
    return (v as { why: string }).why;
  };
  assert.match(why(rec({ status: 'completed' })), /completed/);
  assert.match(why(rec({ status: 'running' })), /running/);
  assert.match(why(rec(), 'none'), /no checkpoint/);
  assert.match(why(rec(), ck, false), /spec/);
  assert.match(why(rec({ remoteDir: undefined })), /never started/);
  assert.match(why(rec({ machines: [{ rank: 1, host: 'b' }] })), /several machines/);
  // A cloud run's terminated instance took its disk (and the checkpoints on it); a kept one still has them.
  assert.match(why(rec({ provider: 'ec2', instanceId: 'i-1', finishedAction: 'terminated' })), /i-1 is terminated/);
  assert.equal(resumeCheck(rec({ provider: 'ec2', instanceId: 'i-1', finishedAction: 'kept' }), ck, true).ok, true);
  assert.equal(mayOfferResume(rec()), true);
  assert.equal(mayOfferResume(rec({ status: 'completed' })), false);
});

test('run again: a run with checkpoint-N asks "Resume from checkpoint-N" or "Start fresh"', () => {
  const items = runAgainChoices({ step: 12, path: 'x' });
  assert.deepEqual(
    items.map((i) => [i.label, i.choice]),
    [
      ['Resume from checkpoint-12', 'resume'],
      ['Start fresh', 'fresh'],
    ],
  );
  assert.match(items[0]!.detail, /step 13/);
});

test('resume: a stopped or failed run may start again (connecting), a completed one may not', () => {
  const store = new RunStore(join(mkdtempSync(join(tmpdir(), 'rft-resume-store-')), 'runs.json'));
  for (const status of ['stopped', 'failed', 'interrupted'] as const) {
    const id = `r-${status}`;
    store.add(rec({ id, status: 'running' }));
    store.update(id, { status });
    const again = store.update(id, { status: 'connecting', finishedAt: undefined, resumes: [{ at: 'now', from: status, fromStep: 5 }] });
    assert.equal(again.status, 'connecting');
    assert.equal(again.finishedAt, undefined);
  }
  store.add(rec({ id: 'r-done', status: 'running' }));
  store.update('r-done', { status: 'completed' });
  assert.throws(() => store.update('r-done', { status: 'connecting' }), /cannot go from completed to connecting/);
});

test('a reclaimed run that is not relaunched is told what is true: no "run it again to resume"', () => {
  const withStore = afterReclaimAdvice(typedSpec({ outputs: { checkpoints: 's3://b/ckpt/' } }), 'rft-1');
  assert.equal(withStore, 'Its newest uploaded checkpoint stays in s3://b/ckpt/rft-1/; Run Again starts a new run from step 0.');
  assert.match(afterReclaimAdvice(typedSpec(), 'rft-1'), /were on the reclaimed instance's disk; Run Again starts a new run from step 0/);
  assert.doesNotMatch(withStore + afterReclaimAdvice(undefined, 'x'), /to resume/i);
});

test('a relaunched spot run says it resumes only when a checkpoint survives the reclaim', () => {
  assert.equal(relaunchStartNote(typedSpec({ outputs: { checkpoints: 's3://b/c' } })), 'resuming from the newest checkpoint in outputs.checkpoints');
  assert.equal(relaunchStartNote(typedSpec({ target: { volume: { name: 'v', size_gb: 100 } } })), 'resuming from the newest checkpoint on its volume');
  assert.match(relaunchStartNote(typedSpec({ outputs: { dir: 'outputs' } })), /^starting again from step 0/);
});

test("outputs: a run's adapter is its own <outputs.dir>/<run id>/adapter unless the runner reported another folder", () => {
  assert.equal(runAdapterPath('outputs', 'rft-a', undefined), 'outputs/rft-a/adapter');
  assert.equal(runAdapterPath('out/', 'rft-b', undefined), 'out/rft-b/adapter');
  // A run from before the per-run folders reported the shared folder: it keeps working through that.
  const old = eventsDir([{ type: 'finished', status: 'completed', exit_code: 0, adapter_path: 'outputs/adapter' }]);
  assert.equal(runAdapterPath('outputs', 'rft-old', join(old, 'events.jsonl')), 'outputs/adapter');
});

test("the Runs view's tooltip says when the run was resumed, from which status and checkpoint", () => {
  const lines = runTooltipLines(rec({ status: 'completed', resumes: [{ at: '2026-11-27T18:00:00.000Z', from: 'stopped', fromStep: 5 }] }));
  assert.ok(
    lines.some((l) => l.startsWith('Resumed (was stopped) from checkpoint-5 at ')),
    lines.join('\n'),
  );
});
