// The run store writes only what is shown (issue 38.4), on a real sshd host: a live run whose log streams a line
// every 50 ms for about 5 s but logs a loss only twice is written to the store for what its row shows (its step and
// loss, the hardware), not for every batch of log bytes; each change event names its run and the fields that
// changed, and the Hosts view (which re-reads ~/.ssh/config) is refreshed for none of them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunChange } from '../../../src/core/runs/store/runStore';
import { runHostsOf } from '../../../src/core/runs/hosts/runHosts';
import { ownScriptWorkspace, runFinished, sshStartRequest, testRunManager, standInHost } from '../../support/runHosts';

const host = standInHost();

/** 100 log lines, 50 ms apart; a loss dict (a metrics event) after the 50th and the 100th only. */
const CHATTY = `import time
for i in range(1, 101):
    print("working on batch %d of the epoch" % i, flush=True)
    if i % 50 == 0:
        print(str({"loss": round(3.0 / i, 4), "learning_rate": 0.0002, "epoch": i / 100}), flush=True)
    time.sleep(0.05)
`;

test(
  'store writes: a live run is written for what its row shows, each change names its fields, the Hosts view is not refreshed',
  { timeout: 180_000 },
  async () => {
    const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
    const m = testRunManager(storage, host.connectOptions());
    const ws = ownScriptWorkspace();
    writeFileSync(join(ws, 'chatty.py'), CHATTY);
    const changes: RunChange[] = [];
    const sub = m.store.onDidChange((c) => changes.push(c));
    let hostRefreshes = 0;
    const hostsSub = runHostsOf(m.store).onDidChange(() => hostRefreshes++);
    const rec = await m.start(sshStartRequest(host.sshd(), ws, 'store-writes', 'python3 chatty.py'));
    assert.equal(rec.status, 'running');
    const before = { changes: changes.length, hostRefreshes };
    const f = await runFinished(m, rec.id);
    assert.equal(f.record.status, 'completed', JSON.stringify(f.failure));
    sub.dispose();
    hostsSub.dispose();
    // While it ran: changes of a running record that did not change its state.
    const live = changes.slice(before.changes).filter((c) => c.run.id === rec.id && c.run.status === 'running' && !c.fields.has('status'));
    const fields = live.map((c) => [...c.fields].sort().join('+'));
    // Two losses (step and loss each time), the hardware the runner's gpu.csv names, its progress: a handful.
    assert.ok(live.length <= 6, `${live.length} writes while the run was live: ${JSON.stringify(fields)}`);
    assert.ok(
      live.some((c) => c.fields.has('lastLoss')),
      `a loss was written: ${JSON.stringify(fields)}`,
    );
    for (const c of live) assert.equal(c.kind, 'updated');
    assert.equal(f.record.lastStep !== undefined, true);
    // The whole run, start to end, never touched the host list.
    assert.equal(hostRefreshes - before.hostRefreshes, 0, 'the Hosts view refreshed during the run');
    assert.ok(!('offsets' in f.record), 'no offsets in the record: the local files are the truth');
    await m.dispose();
  },
);
