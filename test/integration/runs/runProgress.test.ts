// Issue 39.3 against a real OpenSSH server on loopback: a run whose training loop reports through the runner's
// real callback core (the Trainer's max_steps included) is followed by the real run lifecycle, and while it trains
// the record's progress gives the Runs row "step N of 8, ≈ T left"; the record keeps the total when it ends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runFinished, sshStartRequest, testRunManager, standInHost, until } from '../../support/runHosts';
import { runDescription } from '../../../src/core/runs/view/runSummary';

const host = standInHost();

// Eight optimizer steps of 0.4 s, each logged with the Trainer state's max_steps, as the runner's callback does.
const TRAIN_PY = `
import os, time
from remote_finetune.callback import EventsCallbackCore
from remote_finetune.events import EventWriter
core = EventsCallbackCore(EventWriter(os.environ["RFT_EVENTS_FILE"]), run_id="progress", model="stand-in", method="own-script",
                          marker_dir=os.environ["RFT_RUN_DIR"])
core.train_begin(True, None, None, 0, None)
for step in range(1, 9):
    time.sleep(0.4)
    core.step_end(step)
    core.log(True, {"loss": 2.0 - step / 10}, step, None, 8)
os.makedirs("outputs/adapter", exist_ok=True)
`;

test('runs: a followed run shows step N of M and the time left from its own step rate; the record keeps the total', { timeout: 180_000 }, async () => {
  const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
  const ws = mkdtempSync(join(tmpdir(), 'rft-ws-'));
  writeFileSync(join(ws, 'train.py'), TRAIN_PY);
  const m = testRunManager(storage, host.connectOptions());
  const rec = await m.start(sshStartRequest(host.sshd(), ws, 'progress-run', 'python3 train.py'));
  const done = runFinished(m, rec.id);
  const seen: string[] = [];
  // Seen while it trains: a total, and once two steps are in, a time left.
  await until('a time left in the row', () => {
    const r = m.store.get(rec.id);
    if (r?.status === 'running' && r.lastStep !== undefined) seen.push(runDescription(r));
    return seen.some((d) => / · step [2-7] of 8, ≈ \d+s left · /.test(d)) || r?.status !== 'running';
  });
  const f = await done;
  assert.equal(f.record.status, 'completed', JSON.stringify(f.failure));
  assert.ok(
    seen.some((d) => / · step [2-7] of 8, ≈ \d+s left · /.test(d)),
    `the row while it trained: ${[...new Set(seen)].join(' | ')}`,
  );
  const p = m.store.get(rec.id)?.progress;
  assert.equal(p?.maxSteps, 8);
  assert.equal(m.store.get(rec.id)?.lastStep, 8);
  assert.ok(p && p.fromStep >= 1 && p.lastAt > p.fromAt, JSON.stringify(p));
  // Ended: the last step, no time left promised.
  assert.match(runDescription(m.store.get(rec.id)!), / · completed · step 8 · /);
  await m.dispose();
});
