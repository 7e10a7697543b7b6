// When the last run panel closes, what was opened alongside the runs' panels (TensorBoard forwards) is told.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunStore } from '../../../src/core/runs/store/runStore';
import { RunPanelsContext } from '../../../src/features/runs/runPanelsContext';

test('panelsClosed reaches every listener until it unsubscribes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-panels-'));
  const ctx = new RunPanelsContext(new RunStore(join(dir, 'runs.json')), (id) => join(dir, id));
  let a = 0;
  let b = 0;
  ctx.onPanelsClosed(() => a++);
  const sub = ctx.onPanelsClosed(() => b++);
  ctx.panelsClosed();
  sub.dispose();
  ctx.panelsClosed();
  assert.deepEqual([a, b], [2, 1]);
  ctx.dispose();
});
