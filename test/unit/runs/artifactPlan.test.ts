import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { artifactPlan, localOutputsDir } from '../../../src/core/runs/sync/artifactPlan';

const WS = '/home/me/proj';

test("artifactPlan: the adapter goes under the spec's outputs.dir, the run id and its kind", () => {
  assert.deepEqual(artifactPlan(undefined, 'r1', WS, 'outputs/adapter'), [
    { item: 'adapter', remote: 'outputs/adapter', local: join(WS, 'outputs/r1/adapter') },
  ]);
  assert.deepEqual(artifactPlan({ dir: 'runs/out' }, 'r1', WS, 'runs/out/model'), [
    { item: 'adapter', remote: 'runs/out/model', local: join(WS, 'runs/out/r1/model') },
  ]);
});

test("artifactPlan: an own script's adapter folder (found by the runner) comes back too", () => {
  const plan = artifactPlan({ dir: 'outputs', download: ['adapter'] }, 'r2', WS, 'outputs/vqa-run/final');
  assert.deepEqual(
    plan.map((p) => [p.remote, p.local]),
    [['outputs/vqa-run/final', join(WS, 'outputs/r2/adapter')]],
  );
});

test('artifactPlan: download decides what comes back; no adapter reported, none fetched', () => {
  assert.deepEqual(
    artifactPlan({ download: ['checkpoints'] }, 'r3', WS, 'outputs/adapter').map((p) => [p.item, p.remote]),
    [['checkpoints', 'outputs/checkpoints/r3']],
  );
  assert.deepEqual(artifactPlan({ download: [] }, 'r3', WS, 'outputs/adapter'), []);
  assert.deepEqual(artifactPlan(undefined, 'r3', WS, undefined), []);
});

test('artifactPlan: an absolute or escaping outputs.dir never becomes a local path outside the workspace', () => {
  for (const dir of ['/etc', '../..', '../../.ssh', 'a/../../b', '.']) {
    assert.equal(localOutputsDir(dir), 'outputs', dir);
    for (const f of artifactPlan({ dir, download: ['adapter', 'checkpoints'] }, 'r4', WS, `${dir}/adapter`)) {
      assert.ok(f.local.startsWith(`${WS}/outputs/r4/`), f.local);
    }
  }
  assert.deepEqual(artifactPlan(undefined, '..', WS, 'outputs/adapter'), [], 'a run id that escapes is refused');
});
