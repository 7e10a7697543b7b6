import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { holderAlive, Ledger } from '../../../src/core/runs/store/ledger';

const fresh = (): Ledger => new Ledger(join(mkdtempSync(join(tmpdir(), 'rft-ledger-')), 'sub', 'ledger.json'));
const base = { provider: 'ec2' as const, region: 'us-east-1', instanceType: 'g5.xlarge', spot: false };

test('ledger: entries merge by run id and survive re-reading; the file is private (0600)', async () => {
  const l = fresh();
  await l.update('r1', { ...base, state: 'launching' });
  await l.update('r1', { instanceId: 'i-1', state: 'active' });
  const again = new Ledger(l.path);
  const e = await again.get('r1');
  assert.equal(e?.instanceId, 'i-1');
  assert.equal(e?.state, 'active');
  assert.equal(e?.instanceType, 'g5.xlarge');
  assert.equal(e?.holderPid, process.pid);
  assert.equal(statSync(l.path).mode & 0o777, 0o600);
});

test('ledger: concurrent updates from two ledger objects on one file lose nothing (lock file)', async () => {
  const a = fresh();
  const b = new Ledger(a.path);
  await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).update(`r${i}`, { ...base, state: 'launching' })));
  assert.equal((await a.entries()).length, 20);
});

test('ledger: a corrupt or foreign file reads as empty and is never thrown on', async () => {
  const l = fresh();
  await l.update('r1', { ...base, state: 'active' });
  writeFileSync(l.path, '{not json');
  assert.deepEqual(await l.entries(), []);
  writeFileSync(
    l.path,
    JSON.stringify({ version: 1, entries: [{ runId: 'x' }, { ...base, runId: 'ok', state: 'active', holderPid: 1, holderHost: 'h', updatedAt: 1 }] }),
  );
  assert.deepEqual(
    (await l.entries()).map((e) => e.runId),
    ['ok'],
  );
  await assert.rejects(l.update('bad', { state: 'active' }), /needs provider/);
  assert.match(readFileSync(l.path, 'utf8'), /"ok"/);
});

test('ledger: a holder is alive while its process runs on this machine, gone after it exits', () => {
  assert.equal(holderAlive({ holderPid: process.pid, holderHost: hostname() }), true);
  const dead = Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout);
  assert.equal(holderAlive({ holderPid: dead, holderHost: hostname() }), false);
  assert.equal(holderAlive({ holderPid: dead, holderHost: 'another-machine' }), true, 'a holder elsewhere cannot be checked: assume live');
});
