// Issue 39.6, actions only where they work: the Runs view's context menu (package.json's view/item/context `when`
// clauses, evaluated against the item's contextValue as VS Code does for `viewItem =~ /…/`) offers the adapter
// actions only on runs that saved their final model, Stop only on live runs, Terminate only where an instance may
// still bill.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runContextValue } from '../../../src/core/runs/view/runContextValue';
import type { RunRecord, RunStatus } from '../../../src/core/runs/store/runRecord';
import { runsMenuOffers } from '../../support/runsMenu';

const offered = runsMenuOffers;

function record(status: RunStatus, extra: Partial<RunRecord> = {}): RunRecord {
  const now = new Date().toISOString();
  return {
    id: `r-${status}`,
    name: 'sft',
    specPath: '/w/finetune.yaml',
    specHash: 'h',
    createdAt: now,
    updatedAt: now,
    status,
    provider: 'ssh',
    host: 'gpu',
    ...extra,
  };
}

const ADAPTER_ACTIONS = ['remoteFinetune.run.revealAdapter', 'remoteFinetune.tryAdapter', 'remoteFinetune.mergeAdapter', 'remoteFinetune.pushToHub'];

test('the adapter actions are offered on runs that saved their final model, never on failed, stalled, preempted or interrupted ones', () => {
  for (const status of ['completed', 'stopped', 'budget-stopped'] as const) {
    const got = offered(runContextValue(record(status)));
    for (const c of ADAPTER_ACTIONS) assert.ok(got.has(c), `${c} on a ${status} run (${runContextValue(record(status))})`);
  }
  for (const status of ['failed', 'stalled', 'preempted', 'interrupted'] as const) {
    const got = offered(runContextValue(record(status)));
    for (const c of ADAPTER_ACTIONS) assert.ok(!got.has(c), `${c} offered on a ${status} run (${runContextValue(record(status))})`);
    assert.ok(got.has('remoteFinetune.run.showLogs'), `the logs say why a ${status} run ended`);
  }
});

test('Stop only on a live run; Terminate only while an instance may still bill', () => {
  assert.ok(offered(runContextValue(record('running'))).has('remoteFinetune.stopRun'));
  assert.ok(!offered(runContextValue(record('completed'))).has('remoteFinetune.stopRun'));
  assert.ok(!offered(runContextValue(record('running'))).has('remoteFinetune.run.revealAdapter'), 'no adapter before the end');
  const billing = record('failed', { provider: 'ec2', instanceId: 'i-0abc' });
  assert.ok(offered(runContextValue(billing)).has('remoteFinetune.terminateRunInstance'));
  assert.ok(!offered(runContextValue({ ...billing, finishedAction: 'terminated' })).has('remoteFinetune.terminateRunInstance'));
});
