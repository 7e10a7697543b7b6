// Issue 39.5: runs of one spec are told apart where they sit side by side: panel tab titles, Compare columns and
// chart legends carry the start time (the Runs view's rows already do).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunStore } from '../../../src/core/runs/store/runStore';
import { RunPanelsContext } from '../../../src/features/runs/runPanelsContext';
import { buildComparison } from '../../../src/core/runs/view/runCompare';
import { runDisplayName } from '../../../src/core/runs/view/runDisplayName';
import type { RunRecord } from '../../../src/core/runs/store/runRecord';
import { runningNoticeLifetime } from '../../../src/features/runs/runningNotice';

const at = (h: number, m: number, s: number): string => new Date(2026, 10, 27, h, m, s).toISOString();
const rec = (id: string, createdAt: string): RunRecord =>
  ({
    id,
    name: 'sft-qlora',
    specPath: '/ws/finetune.yaml',
    specHash: 'h',
    createdAt,
    updatedAt: createdAt,
    status: 'completed',
    provider: 'ssh',
    host: 'gpu-box',
    workspaceDir: '/ws',
    origin: 'here',
    teardownPolicy: 'terminate',
  }) as RunRecord;

test('two runs of one spec: distinct names with their start times in tabs, Compare columns and legends', () => {
  const now = new Date(2026, 10, 27, 18, 0, 0).getTime();
  const a = rec('20261127-164105-aaaaaa', at(16, 41, 5));
  const b = rec('20261127-170231-bbbbbb', at(17, 2, 31));
  assert.equal(runDisplayName(a, now), 'sft-qlora · 16:41:05');
  assert.equal(runDisplayName(b, now), 'sft-qlora · 17:02:31');
  assert.equal(runDisplayName({ ...a, createdAt: 'not a time' }, now), 'sft-qlora · aaaaaa', 'the id tail when the time is unreadable');
  const dir = mkdtempSync(join(tmpdir(), 'rft-names-'));
  const model = buildComparison(
    [a, b].map((record) => ({ record, localDir: join(dir, record.id) })),
    now,
  );
  assert.deepEqual(
    model.runs.map((c) => c.name),
    ['sft-qlora · 16:41:05', 'sft-qlora · 17:02:31'],
  );
  const store = new RunStore(join(dir, 'runs.json'));
  store.add(a);
  store.add(b);
  const ctx = new RunPanelsContext(store, (id) => join(dir, id));
  const labels = ctx.comparableRuns().map((r) => r.label);
  assert.equal(new Set(labels).size, 2, `legends differ: ${JSON.stringify(labels)}`);
  for (const l of labels) assert.match(l, /^sft-qlora · /);
  ctx.dispose?.();
});

test('the "is running" notice ends with its run (so the end notification replaces it), not with another run, else after a while', async () => {
  const listeners: Array<(f: { record: { id: string } }) => void> = [];
  const runs = {
    onFinished(l: (f: { record: { id: string } }) => void) {
      listeners.push(l);
      return { dispose: () => listeners.splice(listeners.indexOf(l), 1) };
    },
  };
  let ended = false;
  const notice = runningNoticeLifetime(runs, 'r1', 60_000).then(() => (ended = true));
  for (const l of [...listeners]) l({ record: { id: 'other' } });
  await new Promise((r) => setTimeout(r, 5));
  assert.equal(ended, false, "another run's end leaves it");
  for (const l of [...listeners]) l({ record: { id: 'r1' } });
  await notice;
  assert.equal(listeners.length, 0, 'no listener left behind');
  const t0 = Date.now();
  // The notice's own timer does not hold the process open (unref): this one stands for the editor that does.
  const editor = setTimeout(() => undefined, 2000);
  await runningNoticeLifetime(runs, 'r2', 30);
  clearTimeout(editor);
  assert.ok(Date.now() - t0 < 1000, 'a long run does not keep it on screen');
  assert.equal(listeners.length, 0);
});
