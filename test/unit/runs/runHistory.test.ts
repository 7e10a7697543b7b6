// A run's history at its start, with the real git CLI on temp repositories: the commit and branch, a dirty
// folder's diff and untracked files (the synced folder only, .env files never), a folder outside git, a
// repository whose config names a command git would run (never run), and env values
// blanked out of the spec text and the diff. Final metrics from an events.jsonl.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gitSnapshot } from '../../../src/core/runs/sync/gitInfo';
import { finalMetricsFromEvents, recordStartHistory, redactEnvValues, redactUrlCredentials } from '../../../src/core/runs/store/runHistory';
import { runRecordSchema } from '../../../src/core/runs/store/runRecord';

const SECRET = 'hf_SECRETvalueForTheHistoryTest0123456789';

function repo(): string {
  const d = mkdtempSync(join(tmpdir(), 'rft-git-'));
  const g = (...a: string[]): string => execFileSync('git', a, { cwd: d, encoding: 'utf8' });
  g('init', '-q', '-b', 'main');
  g('config', 'user.email', 't@example.com');
  g('config', 'user.name', 'T');
  mkdirSync(join(d, 'proj'));
  writeFileSync(join(d, 'proj', 'train.py'), 'print("v1")\n');
  writeFileSync(join(d, 'proj', '.env'), 'HF_TOKEN=old\n');
  writeFileSync(join(d, 'other.txt'), 'outside the synced folder\n');
  g('add', '-A');
  g('commit', '-q', '-m', 'first');
  return d;
}

const head = (d: string): string => execFileSync('git', ['rev-parse', 'HEAD'], { cwd: d, encoding: 'utf8' }).trim();

test('gitInfo: a clean folder records its commit and branch, not dirty, no diff', async () => {
  const d = repo();
  const s = await gitSnapshot(join(d, 'proj'));
  assert.equal(s.state.repo, true);
  assert.equal(s.state.commit, head(d));
  assert.equal(s.state.branch, 'main');
  assert.equal(s.state.dirty, false);
  assert.deepEqual(s.state.untracked, []);
  assert.equal(s.diff, undefined);
});

test('gitInfo: a dirty folder: the diff of the synced folder only (relative paths), untracked files, never a .env', async () => {
  const d = repo();
  writeFileSync(join(d, 'proj', 'train.py'), 'print("v2")\n');
  writeFileSync(join(d, 'proj', '.env'), `HF_TOKEN=${SECRET}\n`);
  writeFileSync(join(d, 'proj', 'new_data.jsonl'), '{}\n');
  writeFileSync(join(d, 'proj', '.env.local'), `X=${SECRET}\n`);
  writeFileSync(join(d, 'other.txt'), 'changed outside\n');
  const s = await gitSnapshot(join(d, 'proj'));
  assert.equal(s.state.dirty, true);
  assert.deepEqual(s.state.untracked, ['new_data.jsonl']);
  assert.match(s.diff ?? '', /^diff --git a\/train\.py b\/train\.py/m);
  assert.match(s.diff ?? '', /^\+print\("v2"\)$/m);
  assert.ok(!(s.diff ?? '').includes('other.txt'), 'a file outside the synced folder is not in its diff');
  assert.ok(!(s.diff ?? '').includes(SECRET), 'no .env content in the diff');
  assert.ok(!(s.diff ?? '').includes('.env'), 'no .env file in the diff');
});

test('gitInfo: a folder outside any repository is recorded as such', async () => {
  const d = mkdtempSync(join(tmpdir(), 'rft-nogit-'));
  const s = await gitSnapshot(d);
  assert.deepEqual(s.state, { repo: false });
});

test('gitInfo: a repository whose config names a command (filter, textconv, fsmonitor): the command never runs, the diff is still taken', async () => {
  const d = repo();
  const marker = join(d, 'ran');
  execFileSync('git', ['config', 'filter.evil.clean', `sh -c 'touch ${marker}; cat'`], { cwd: d });
  execFileSync('git', ['config', 'core.fsmonitor', `sh -c 'touch ${marker}'`], { cwd: d });
  writeFileSync(join(d, '.gitattributes'), '* filter=evil\n');
  writeFileSync(join(d, 'proj', 'train.py'), 'print("v3")\n');
  const s = await gitSnapshot(join(d, 'proj'));
  assert.equal(s.state.commit, head(d));
  assert.equal(s.state.dirty, true);
  assert.match(s.diff ?? '', /^\+print\("v3"\)$/m);
  assert.equal(existsSync(marker), false, 'git ran no command the repository named');
});

test('runHistory: the start writes the spec text, spec.json and git.diff with env values blanked; the record keeps the git state', async () => {
  const d = repo();
  writeFileSync(join(d, 'proj', 'train.py'), `TOKEN = "${SECRET}"\n`);
  const local = mkdtempSync(join(tmpdir(), 'rft-hist-'));
  const specText = `name: hist\n# pasted by mistake: ${SECRET}\nmodel:\n  id: tiny\n`;
  const h = await recordStartHistory({
    localDir: local,
    specText,
    spec: { name: 'hist', model: { id: 'tiny' }, note: SECRET },
    workspaceDir: join(d, 'proj'),
    env: { HF_TOKEN: SECRET, SHORT: 'abc' },
  });
  assert.deepEqual(h.files, ['spec-source.yaml', 'spec.json', 'git.diff']);
  const spec = readFileSync(join(local, 'spec-source.yaml'), 'utf8');
  assert.equal(spec, specText.replace(SECRET, '[redacted HF_TOKEN]'));
  assert.ok(!readFileSync(join(local, 'spec.json'), 'utf8').includes(SECRET));
  const diff = readFileSync(join(local, 'git.diff'), 'utf8');
  assert.match(diff, /TOKEN = "\[redacted HF_TOKEN\]"/);
  assert.equal(h.git.commit, head(d));
  assert.equal(h.git.dirty, true);
  // The record accepts what the start produced.
  const now = new Date().toISOString();
  const rec = runRecordSchema.parse({
    id: 'r1',
    name: 'hist',
    specPath: 'x',
    specHash: 'y',
    createdAt: now,
    updatedAt: now,
    status: 'planned',
    provider: 'ssh',
    git: h.git,
    historyFiles: h.files,
  });
  assert.equal(rec.git?.commit, head(d));
});

test('runHistory: redaction blanks the longest values first and leaves short values alone; URL credentials in a lock', () => {
  assert.equal(redactEnvValues('a=abcdefgh b=abcdefghij c=abc', { A: 'abcdefgh', B: 'abcdefghij', C: 'abc' }), 'a=[redacted A] b=[redacted B] c=abc');
  assert.equal(
    redactUrlCredentials('pkg @ git+https://user:ghp_secret@github.com/o/r.git@abc\nplain==1.0\n'),
    'pkg @ git+https://[redacted]@github.com/o/r.git@abc\nplain==1.0\n',
  );
});

test('runHistory: final metrics are the last value of each logged number, eval metrics and runtime included', () => {
  const lines = [
    { v: 1, ts: 1, type: 'metrics', step: 1, loss: 2.5, learning_rate: 1e-4 },
    { v: 1, ts: 2, type: 'metrics', step: 2, loss: 2.1, learning_rate: 5e-5 },
    { v: 1, ts: 3, type: 'eval', step: 2, eval_loss: 2.3, metrics: { eval_runtime: 1.5 } },
    { v: 1, ts: 4, type: 'metrics', step: 2, extra: { train_loss: 2.3, train_runtime: 12.5 } },
    'not json',
    { v: 1, ts: 5, type: 'finished', status: 'completed', exit_code: 0, runtime_s: 20 },
  ];
  const m = finalMetricsFromEvents(lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n'));
  assert.deepEqual(m, { step: 2, loss: 2.1, learning_rate: 5e-5, eval_loss: 2.3, eval_runtime: 1.5, train_loss: 2.3, train_runtime: 12.5, runtime_s: 20 });
});
