// The metrics panel's Compare… lists this extension's recorded runs (newest first) with each one's events.jsonl
// in its local mirror: the run store read through RunPanelsContext.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunStore } from '../../../src/core/runs/store/runStore';
import { RunPanelsContext } from '../../../src/features/runs/runPanelsContext';
import type { RunRecord } from '../../../src/core/runs/store/runRecord';

test('comparable runs: every recorded run, newest first, its mirror events.jsonl, GPU, host and state in the detail', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-compare-'));
  const store = new RunStore(join(dir, 'runs.json'));
  const base = {
    specPath: '/ws/finetune.yaml',
    specHash: 'h',
    updatedAt: '2026-11-24T10:00:00.000Z',
    provider: 'ssh',
    workspaceDir: '/ws',
    origin: 'here',
    teardownPolicy: 'terminate',
  } as const;
  store.add({
    ...base,
    id: 'r-old',
    name: 'first',
    createdAt: '2026-11-24T09:00:00.000Z',
    status: 'completed',
    host: 'gpu-box',
    gpu: 'A100-80GB',
  } as RunRecord);
  store.add({
    ...base,
    id: 'r-new',
    name: 'second',
    createdAt: '2026-11-24T11:00:00.000Z',
    status: 'running',
    host: 'gpu-box',
    localDir: join(dir, 'elsewhere'),
  } as RunRecord);
  const ctx = new RunPanelsContext(store, (id) => join(dir, 'runs', id));
  const runs = ctx.comparableRuns();
  assert.deepEqual(
    runs.map((r) => [r.id, r.label.split(' · ')[0], r.eventsPath]),
    [
      ['r-new', 'second', join(dir, 'elsewhere', 'events.jsonl')],
      ['r-old', 'first', join(dir, 'runs', 'r-old', 'events.jsonl')],
    ],
  );
  // The legend's name carries the start time (issue 39.5): runs of one spec are told apart.
  for (const r of runs) assert.match(r.label, /^\w+ · (\d\d:\d\d:\d\d|[A-Z][a-z]{2} \d+ \d\d:\d\d)$/);
  assert.match(runs[1]!.detail ?? '', /A100-80GB · gpu-box · completed$/);
  ctx.dispose?.();
});
