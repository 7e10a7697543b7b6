// Honest end states (issue 36.4): preempted, stalled, budget-stopped, stopped, failed (with its recognised cause)
// and completed are distinct words in the events schema, the run record, the lifecycle, the Runs view's row and
// status bar, the end-of-run notification and the history line; a preempted or stalled run never reads as failed
// or completed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FINISHED_STATUSES, parseEventLine } from '../../../src/core/telemetry/events';
import { RUN_STATUSES, isTerminal, runRecordSchema } from '../../../src/core/runs/store/runRecord';
import type { RunRecord, RunStatus } from '../../../src/core/runs/store/runRecord';
import { canTransition } from '../../../src/core/runs/lifecycle/lifecycle';
import { endStatesLine, finishedMessage, runDescription, runTooltipLines, stalledMessage, statusBarState } from '../../../src/core/runs/view/runSummary';
import { mayOfferResume } from '../../../src/core/runs/lifecycle/runResume';
import { buildComparison } from '../../../src/core/runs/view/runCompare';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const NOW = Date.parse('2026-11-27T12:00:00Z');

function rec(status: RunStatus, patch: Partial<RunRecord> = {}): RunRecord {
  return runRecordSchema.parse({
    id: 'rft-1',
    name: 'ft',
    specPath: '/w/finetune.yaml',
    specHash: 'h',
    createdAt: '2026-11-27T11:00:00Z',
    updatedAt: '2026-11-27T11:59:00Z',
    finishedAt: '2026-11-27T11:59:00Z',
    status,
    provider: 'ssh',
    host: 'gpu-box',
    remoteDir: '/home/u/.remote-finetune/runs/rft-1',
    lastStep: 120,
    ...patch,
  });
}

test('end states: every finished status of the events is a terminal run status reachable from running', () => {
  for (const s of FINISHED_STATUSES) {
    assert.ok((RUN_STATUSES as readonly string[]).includes(s), s);
    assert.ok(isTerminal(s), s);
    assert.ok(canTransition('running', s), s);
    const line = JSON.stringify({ v: 1, ts: 1, type: 'finished', status: s, exit_code: 0 });
    assert.equal(parseEventLine(line).ok, true, s);
  }
  for (const s of ['preempted', 'stalled', 'budget-stopped'] as const) assert.ok(FINISHED_STATUSES.includes(s));
});

test('end states: each has its own word in the row, the status bar and the notification; preempted and stalled never read failed or completed', () => {
  const seenRow = new Set<string>();
  const seenBar = new Set<string>();
  for (const s of ['completed', 'failed', 'stopped', 'interrupted', 'preempted', 'stalled', 'budget-stopped'] as const) {
    const r = rec(s);
    const row = runDescription(r, NOW).split(' · ')[1]!;
    assert.equal(row, s);
    seenRow.add(row);
    const bar = statusBarState(r, undefined, NOW)!;
    assert.ok(bar.text.includes(s === 'completed' ? 'finished' : s), bar.text);
    assert.ok(!bar.text.startsWith(' '), 'every end has its own icon');
    seenBar.add(bar.text.split(' ')[0]!);
  }
  assert.equal(seenRow.size, 7);
  assert.equal(seenBar.size, 7, 'seven ends, seven icons');
  for (const s of ['preempted', 'stalled'] as const) {
    const m = finishedMessage({ record: rec(s) });
    assert.match(m.text, new RegExp(`^ft ${s}: `));
    assert.doesNotMatch(m.text, /failed|completed/);
    assert.equal(m.error, s === 'stalled', 'a stall wants a look; a reclaim is the cloud, not an error');
  }
  assert.match(finishedMessage({ record: rec('budget-stopped') }).text, /^ft budget-stopped: the budget was reached, so the host stopped it at step 120\./);
});

test('end states: a failure the runner recognised is named with the word', () => {
  const r = rec('failed', { failure: { signature: 'cuda-oom', message: 'CUDA out of memory' } });
  assert.match(runDescription(r, NOW), / · failed \(cuda-oom\) · /);
  assert.match(runDescription(rec('failed'), NOW), / · failed · /);
});

test('end states: a run its host restarted by itself shows interrupted → resumed → completed, and the preempted/stalled ones resume', () => {
  const r = rec('completed', { resumes: [{ at: '2026-11-27T11:30:00Z', from: 'interrupted', fromStep: 60, by: 'host' }] });
  assert.equal(endStatesLine(r), 'interrupted → resumed → completed');
  const lines = runTooltipLines(r, NOW);
  assert.ok(
    lines.some((l) => /^Resumed by the host after a restart \(was interrupted\) from checkpoint-60 at /.test(l)),
    lines.join('\n'),
  );
  assert.ok(lines.includes('History: interrupted → resumed → completed'));
  assert.equal(endStatesLine(rec('completed')), undefined);
  for (const s of ['preempted', 'stalled', 'budget-stopped'] as const) assert.equal(mayOfferResume(rec(s)), true, s);
});

test('stall: the warning says the last step, how long and the limit, what the host saw and what it does', () => {
  const line = JSON.stringify({
    v: 1,
    ts: 1,
    type: 'stalled',
    stalled_s: 725,
    threshold_s: 600,
    action: 'stop',
    last_step: 812,
    process_state: 'sleeping',
    gpu_util_pct: 0,
  });
  const p = parseEventLine(line);
  assert.ok(p.ok && p.event.type === 'stalled');
  assert.equal(
    stalledMessage({ name: 'ft' }, p.event),
    'ft stalled at step 812: no optimizer step for 12m 05s (limit 10m 00s); the training process is sleeping, GPU 0% busy; the host is saving what it can and stopping the run.',
  );
  const bare = parseEventLine(JSON.stringify({ v: 1, ts: 1, type: 'stalled', stalled_s: 3, threshold_s: 3, action: 'notify' }));
  assert.ok(bare.ok && bare.event.type === 'stalled');
  assert.equal(
    stalledMessage({ name: 'ft' }, bare.event),
    'ft stalled: no optimizer step for 3s (limit 3s); the run goes on (watchdog.on_stall: stop would end it).',
  );
});

test('end states: the run history (Compare Runs) keeps each end word', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-ends-'));
  const runs = (['preempted', 'stalled', 'budget-stopped', 'completed'] as const).map((s, i) => ({ record: rec(s, { id: `rft-${i}` }), localDir: dir }));
  assert.deepEqual(
    buildComparison(runs, NOW).runs.map((c) => c.status),
    ['preempted', 'stalled', 'budget-stopped', 'completed'],
  );
});
