// The run manager's per-run host state (issue 38.3) on a real sshd host: a live run whose host goes silent (its
// sshd processes SIGSTOPped, as the keepalive test in test/integration/ssh/connect.test.ts does) is reconnecting,
// then unreachable, then connected again when the host answers, and ended when its follow ends; the run itself
// completes with every log line once, and the host state is never written to the store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { HostLink } from '../../../src/core/runs/sync/hostLink';
import { ownScriptWorkspace, runFinished, sshStartRequest, testRunManager, standInHost, until } from '../../support/runHosts';

const host = standInHost();

/** The listener's per-connection sshd processes at every depth (privilege separation forks twice); not the run's jobs. */
function sshdDescendants(root: number): number[] {
  const rows = execFileSync('ps', ['-e', '-o', 'pid=,ppid=,comm='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .map(([pid, ppid, comm]) => ({ pid: Number(pid), ppid: Number(ppid), comm: comm ?? '' }));
  const out: number[] = [];
  const walk = (p: number): void => {
    for (const r of rows.filter((x) => x.ppid === p && x.comm.startsWith('sshd'))) {
      out.push(r.pid);
      walk(r.pid);
    }
  };
  walk(root);
  return out;
}

/** 150 numbered lines, 0.1 s apart: about 15 s of a live run. */
const TICKER = `import time
for i in range(1, 151):
    print("tick %d" % i, flush=True)
    time.sleep(0.1)
`;

test("a live run's host goes silent and comes back: reconnecting, unreachable, connected, ended", { timeout: 120_000 }, async () => {
  const storage = mkdtempSync(join(tmpdir(), 'rft-hostlink-'));
  const s = host.sshd();
  const m = testRunManager(
    storage,
    { ...host.connectOptions(), keepaliveIntervalMs: 1000, keepaliveCountMax: 1, readyTimeoutMs: 1500 },
    { hostUnreachableMs: 2500 },
  );
  const ws = ownScriptWorkspace();
  writeFileSync(join(ws, 'ticker.py'), TICKER);
  const seen: Array<{ readonly link: HostLink; readonly at: number }> = [];
  let runId = '';
  const sub = m.onHostLink((id, link) => {
    if (id === runId) seen.push({ link, at: Date.now() });
  });
  const rec = await m.start(sshStartRequest(s, ws, 'host-link', 'python3 ticker.py'));
  runId = rec.id;
  const finished = runFinished(m, rec.id, 110_000);
  // Silent once the tails stream (the first lines are in the local mirror), not while the follow is still starting.
  const localLog = join(rec.localDir ?? m.localDirOf(rec.id), 'output.log');
  await until('the first mirrored lines', () => existsSync(localLog) && readFileSync(localLog, 'utf8').includes('tick 5\n'), 30_000);
  assert.equal(m.hostLink(rec.id)?.kind, 'connected');
  const conn = sshdDescendants(s.pid);
  const t0 = Date.now();
  for (const p of [s.pid, ...conn]) process.kill(p, 'SIGSTOP');
  try {
    await until('unreachable', () => m.hostLink(rec.id)?.kind === 'unreachable', 30_000);
  } catch (e) {
    throw new Error(`${(e as Error).message}; saw ${JSON.stringify(seen.map((x) => x.link.kind))}`);
  } finally {
    for (const p of conn) process.kill(p, 'SIGKILL');
    process.kill(s.pid, 'SIGCONT');
  }
  const tBack = Date.now();
  await until('connected again', () => m.hostLink(rec.id)?.kind === 'connected', 30_000);
  const f = await finished;
  sub.dispose();
  assert.equal(f.record.status, 'completed', JSON.stringify(f.failure));
  const kinds = seen.map((x) => x.link.kind);
  // From the silence on (the follow's first 'connected' came before the run id was known here).
  assert.deepEqual(kinds, ['reconnecting', 'unreachable', 'connected', 'ended']);
  const lost = seen[0]!.link;
  assert.ok(lost.kind === 'reconnecting' && lost.since >= t0, 'reconnecting since the drop');
  assert.equal((seen[1]!.link as { since: number }).since, lost.since, 'unreachable since the same moment');
  const log = readFileSync(join(f.record.localDir ?? m.localDirOf(rec.id), 'output.log'), 'utf8');
  const ticks = log.split('\n').filter((l) => /^tick \d+$/.test(l));
  assert.deepEqual(
    ticks,
    Array.from({ length: 150 }, (_, i) => `tick ${i + 1}`),
    'every line once, in order, across the gap',
  );
  assert.doesNotMatch(readFileSync(join(storage, 'runs.json'), 'utf8'), /unreachable|reconnecting/, 'host state stays out of the store');
  console.log(
    `# drop noticed after ${seen[0]!.at - t0} ms, unreachable after ${seen[1]!.at - t0} ms; connected ${seen[2]!.at - tBack} ms after the host answered`,
  );
  await m.dispose();
});
