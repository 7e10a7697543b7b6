import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, readFileSync, statSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunStore, touches } from '../../../src/core/runs/store/runStore';
import type { RunChange } from '../../../src/core/runs/store/runStore';
import type { RunRecord } from '../../../src/core/runs/store/runRecord';
import { canTransition } from '../../../src/core/runs/lifecycle/lifecycle';
import { newRunId } from '../../../src/core/runs/store/runId';

function record(id: string): RunRecord {
  const now = new Date().toISOString();
  return {
    id,
    name: 'n',
    specPath: '/w/finetune.yaml',
    specHash: 'abc',
    createdAt: now,
    updatedAt: now,
    status: 'planned',
    provider: 'ssh',
    host: 'gpu',
  };
}

test('runStore: records survive a reload (a new store on the same file) with their fields and status', () => {
  const file = join(mkdtempSync(join(tmpdir(), 'rft-store-')), 'runs.json');
  const a = new RunStore(file);
  a.add(record('r1'));
  a.update('r1', { status: 'connecting' });
  a.update('r1', { status: 'running', lastStep: 1234, lastLoss: 0.56 });
  const b = new RunStore(file);
  const r = b.get('r1');
  assert.equal(r?.status, 'running');
  assert.deepEqual([r?.lastStep, r?.lastLoss], [1234, 0.56]);
  assert.equal(b.live().length, 1);
  b.update('r1', { status: 'completed', exitCode: 0 });
  assert.equal(new RunStore(file).live().length, 0);
});

test('runStore: an illegal transition throws and changes nothing', () => {
  const file = join(mkdtempSync(join(tmpdir(), 'rft-store-')), 'runs.json');
  const s = new RunStore(file);
  s.add(record('r2'));
  s.update('r2', { status: 'connecting' });
  s.update('r2', { status: 'running' });
  s.update('r2', { status: 'completed' });
  assert.throws(() => s.update('r2', { status: 'syncing' }), /cannot go from completed to syncing/);
  assert.equal(new RunStore(file).get('r2')?.status, 'completed');
  assert.equal(canTransition('interrupted', 'provisioning'), true);
});

test('runStore: a corrupt file or a bad entry is reported, never thrown, and good entries survive', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-store-'));
  const bad = join(dir, 'bad.json');
  writeFileSync(bad, '{not json');
  const problems = new RunStore(bad).problems;
  assert.match(problems[0] ?? '', /not readable JSON/);
  assert.match(problems[1] ?? '', /copy of the file as it was is kept in .*bad\.json\.bad-/);
  const mixed = join(dir, 'mixed.json');
  writeFileSync(mixed, JSON.stringify({ version: 1, runs: [record('ok'), { id: 'x' }] }));
  const s = new RunStore(mixed);
  assert.equal(s.all().length, 1);
  assert.match(s.problems[0] ?? '', /run #1 ignored/);
});

test("runStore: two windows (two stores on one file) never drop each other's runs, updates or removals", () => {
  const file = join(mkdtempSync(join(tmpdir(), 'rft-store-')), 'runs.json');
  const a = new RunStore(file);
  a.add(record('shared'));
  const b = new RunStore(file); // the second window, opened after the first run was recorded
  a.add(record('from-a'));
  b.add(record('from-b'));
  const ids = (): string[] => (JSON.parse(readFileSync(file, 'utf8')) as { runs: RunRecord[] }).runs.map((r) => r.id).sort();
  assert.deepEqual(ids(), ['from-a', 'from-b', 'shared'], "b's write kept a's new run");
  // b follows the shared run; a's next write (of its own run) must not put back a's older copy of it.
  b.update('shared', { status: 'connecting' });
  b.update('shared', { status: 'running', lastStep: 99 });
  a.update('from-a', { status: 'connecting' });
  const shared = new RunStore(file).get('shared');
  assert.equal(shared?.status, 'running');
  assert.equal(shared?.lastStep, 99);
  assert.equal(a.get('shared')?.status, 'running', 'a took in the newer record');
  // A run removed in one window stays removed when the other writes; a run removed here is not brought back.
  b.remove('from-a');
  a.update('shared', { lastStep: 120 });
  assert.deepEqual(ids(), ['from-b', 'shared']);
  a.remove('from-b');
  b.update('shared', { lastStep: 130 });
  assert.deepEqual(ids(), ['shared']);
  assert.equal(new RunStore(file).get('shared')?.lastStep, 130);
});

test('runStore: a window still following a run that another window finished does not write it back as running', () => {
  const file = join(mkdtempSync(join(tmpdir(), 'rft-store-')), 'runs.json');
  const a = new RunStore(file);
  a.add(record('r'));
  a.update('r', { status: 'connecting' });
  a.update('r', { status: 'running' });
  const b = new RunStore(file); // a reloaded window, which reattached and saw the run end
  b.update('r', { status: 'completed', exitCode: 0 });
  // The old window's next write (its mirror's last step) lands on the finished record.
  a.update('r', { lastStep: 10 });
  const r = new RunStore(file).get('r');
  assert.equal(r?.status, 'completed');
  assert.equal(r?.exitCode, 0);
  assert.equal(r?.lastStep, 10);
  assert.throws(() => a.update('r', { status: 'failed' }), /cannot go from completed to failed/);
  assert.equal(new RunStore(file).get('r')?.status, 'completed');
  // The same within one millisecond (timestamps cannot order those writes): fifty rounds, most in the same ms.
  for (let i = 0; i < 50; i++) {
    const f = join(mkdtempSync(join(tmpdir(), 'rft-store-')), 'runs.json');
    const old = new RunStore(f);
    old.add({ ...record(`q${i}`), status: 'running' });
    new RunStore(f).update(`q${i}`, { status: 'completed' });
    old.update(`q${i}`, { lastStep: i });
    assert.equal(new RunStore(f).get(`q${i}`)?.status, 'completed', `round ${i}`);
  }
});

test('runStore: an unreadable file is copied aside before the next write replaces it, and the copy is named', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-store-'));
  const file = join(dir, 'runs.json');
  const original = JSON.stringify({ version: 1, runs: [record('good'), { id: 'half-written' }] });
  writeFileSync(file, original);
  const s = new RunStore(file);
  assert.match(s.problems.join('\n'), /run #1 ignored/);
  const copyNote = s.problems.find((p) => /copy of the file/.test(p)) ?? '';
  new RunStore(file); // read again (as each orphan sweep does) before anything is written: no second copy
  s.add(record('next'));
  const copies = readdirSync(dir).filter((f) => f.startsWith('runs.json.bad-'));
  assert.equal(copies.length, 1);
  assert.ok(copyNote.includes(copies[0]!), copyNote);
  assert.equal(readFileSync(join(dir, copies[0]!), 'utf8'), original, 'the copy holds the file as it was');
  assert.deepEqual(
    new RunStore(file)
      .all()
      .map((r) => r.id)
      .sort(),
    ['good', 'next'],
  );
});

test('runStore: the file is written 0600 and holds no field named like a secret', () => {
  const file = join(mkdtempSync(join(tmpdir(), 'rft-store-')), 'runs.json');
  const s = new RunStore(file);
  s.add(record('r3'));
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.doesNotMatch(readFileSync(file, 'utf8'), /token|api_key|password/i);
});

test('runId: sortable, unique, shell- and path-safe', () => {
  const ids = new Set(Array.from({ length: 200 }, () => newRunId(new Date(Date.UTC(2026, 10, 21, 12, 0, 0)))));
  assert.ok(ids.size > 150);
  for (const id of ids) assert.match(id, /^rft-20261121-120000-[0-9a-f]{4}$/);
});

test('runStore: an update that changes no value writes nothing and tells no one; a change names its run and fields', () => {
  const file = join(mkdtempSync(join(tmpdir(), 'rft-store-')), 'runs.json');
  const s = new RunStore(file);
  const seen: RunChange[] = [];
  s.onDidChange((c) => seen.push(c));
  s.add(record('w'));
  s.update('w', { status: 'connecting' });
  s.update('w', { status: 'running', lastStep: 5 });
  const written = readFileSync(file, 'utf8');
  const inode = statSync(file).ino;
  assert.equal(s.update('w', { lastStep: 5 }).lastStep, 5);
  s.update('w', {});
  assert.equal(statSync(file).ino, inode, 'the file was not replaced');
  assert.equal(readFileSync(file, 'utf8'), written);
  assert.deepEqual(
    seen.map((c) => [c.kind, c.run.id, [...c.fields].sort().join('+')]),
    [
      ['added', 'w', Object.keys(record('w')).sort().join('+')],
      ['updated', 'w', 'status'],
      ['updated', 'w', 'lastStep+status'],
    ],
  );
  s.update('w', { lastLoss: 1.5 });
  const last = seen[seen.length - 1]!;
  assert.deepEqual([...last.fields], ['lastLoss']);
  assert.equal(touches(last, 'lastLoss'), true);
  assert.equal(touches(last, 'host', 'provider'), false);
  s.remove('w');
  assert.equal(touches(seen[seen.length - 1]!, 'host'), true, 'a removal touches every field');
});
