// The README's benchmark figures come from verdict lines only: the renderer turns a verdict file into the
// table, refuses a line that lacks a field or contradicts itself (ratio not ours / reference, pass not the goals),
// every recorded verdict carries its pairs, reference command, covered code and commit, stale verdicts are
// named, and the README in the repository matches bench/results/latest.jsonl.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { incompleteness, parseVerdict, readResults, recordVerdict, renderTable, staleVerdicts, withTable, BEGIN, END } from '../../../bench/lib/results';
import { meets } from '../../../bench/lib/pairs';

const ROOT = resolve(__dirname, '../../..');
const line = (o: Record<string, unknown>): string =>
  JSON.stringify({ bench: 'tail', metric: 'ingest MiB/s', ours: 336.2, reference: 251.9, ratio: 1.3347, goal: '>= 0.8', pass: true, date: '2026-11-24', ...o });

test('a verdict renders as a row with its ratio, pair spread, goals, checks, cipher, date, commit and staleness', () => {
  const v = parseVerdict(
    line({
      cipher: 'aes128-gcm@openssh.com',
      checks: [{ name: 'p95 line latency ms', value: 1.2, goal: '< 250', pass: true }],
      samples: { ours: [300, 336.2, 350], reference: [260, 251.9, 250] },
      commit: 'a'.repeat(40),
    }),
  );
  const table = renderTable([v]);
  assert.match(
    table,
    /\| tail \| ingest MiB\/s \| 336 \| 252 \| \*\*1\.33\*\* \| 1\.15–1\.40 \(3\) \| >= 0\.8 \| p95 line latency ms: 1\.200 \(< 250\) met \| yes \| aes128-gcm@openssh\.com \| 2026-11-24 at aaaaaaa \|/,
  );
  assert.match(renderTable([v], new Map([['tail', 'changed']])), /2026-11-24 at aaaaaaa · \*\*stale\*\* \|/);
  const failed = renderTable([parseVerdict(line({ pass: false, ours: 0.5, reference: 1, ratio: 0.5 }))]);
  assert.match(failed, /\*\*no\*\*/);
});

test('a verdict that contradicts itself is refused: ratio not ours / reference, or pass not what the goals give', () => {
  // The lie the file could hold before: ratio 0.90 against a <= 0.5 goal, recorded as a pass.
  assert.throws(() => parseVerdict(line({ ours: 0.9, reference: 1, ratio: 0.9, goal: '<= 0.5', pass: true })), /pass is true but ratio 0\.9 against <= 0\.5/);
  assert.throws(() => parseVerdict(line({ ratio: 2 })), /ratio 2 is not ours \/ reference \(1\.3347\)/);
  assert.throws(
    () => parseVerdict(line({ checks: [{ name: 'p95', value: 300, goal: '< 250', pass: true }] })),
    /check "p95" says pass true but 300 < 250 is false/,
  );
  assert.throws(() => parseVerdict(line({ checks: [{ name: 'p95', value: 300, goal: '< 250', pass: false }] })), /pass is true but/);
});

test('a verdict without its pairs, reference command, covered code or commit is named incomplete', () => {
  assert.deepEqual(incompleteness(parseVerdict(line({}))), ['no per-pair samples of both sides', 'no reference command line', 'no covered code', 'no commit']);
  const whole = parseVerdict(
    line({ samples: { ours: [1, 2], reference: [1, 2] }, reference_command: 'ssh h cat x', covers: ['src/core/ssh'], commit: 'b'.repeat(40) }),
  );
  assert.deepEqual(incompleteness(whole), []);
  assert.deepEqual(
    incompleteness(parseVerdict(line({ samples: { ours: [1, 2], reference: [1] }, reference_command: 'x', covers: ['y'], commit: 'c'.repeat(40) }))),
    ['no per-pair samples of both sides'],
  );
});

test('staleness: a verdict goes stale when a covered path changes after its commit, not when other code does', () => {
  const repo = mkdtempSync(join(tmpdir(), 'rft-stale-'));
  const git = (...a: string[]): string => execFileSync('git', ['-C', repo, '-c', 'user.email=t@t', '-c', 'user.name=t', ...a], { encoding: 'utf8' }).trim();
  git('init', '-q');
  mkdirSync(join(repo, 'src/core/ssh'), { recursive: true });
  writeFileSync(join(repo, 'src/core/ssh/sync.ts'), 'a');
  writeFileSync(join(repo, 'other.ts'), 'a');
  git('add', '.');
  git('commit', '-qm', 'one');
  const measured = git('rev-parse', 'HEAD');
  const v = (o: Record<string, unknown>) => parseVerdict(line({ covers: ['src/core/ssh'], commit: measured, ...o }));
  writeFileSync(join(repo, 'other.ts'), 'b');
  git('commit', '-qam', 'elsewhere');
  assert.deepEqual([...staleVerdicts([v({})], repo)], [], 'a change outside the covered code leaves it current');
  assert.match(staleVerdicts([v({ dirty: true })], repo).get('tail') ?? '', /uncommitted/);
  assert.match(staleVerdicts([v({ commit: 'd'.repeat(40) })], repo).get('tail') ?? '', /not in this history/);
  assert.match(staleVerdicts([parseVerdict(line({}))], repo).get('tail') ?? '', /no commit/);
  writeFileSync(join(repo, 'src/core/ssh/sync.ts'), 'b');
  git('commit', '-qam', 'sync changed');
  assert.match(staleVerdicts([v({})], repo).get('tail') ?? '', /1 later commit\(s\) changed src\/core\/ssh/);
});

test('every recorded verdict is consistent and complete: pairs, reference command, covered code and commit', () => {
  const all = readResults(join(ROOT, 'bench/results/latest.jsonl'));
  assert.ok(all.length > 0);
  for (const v of all) assert.deepEqual(incompleteness(v), [], `${v.bench}: re-run npm run bench -- ${v.bench}`);
});

test('a verdict line missing a field, or with a non-number figure, is refused', () => {
  assert.throws(() => parseVerdict(JSON.stringify({ bench: 'x', metric: 'm', ours: 1, reference: 1, ratio: 1, goal: '>= 1', pass: true })), /lacks date/);
  assert.throws(() => parseVerdict(line({ ratio: 'fast' })), /ratio is not a finite number/);
  assert.throws(() => parseVerdict(line({ pass: 'yes' })), /pass is not true\/false/);
  assert.throws(() => parseVerdict('not json'), /not a JSON verdict line/);
});

test("recording replaces the bench's own line and keeps the others, sorted", () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-results-'));
  const f = join(dir, 'latest.jsonl');
  recordVerdict(parseVerdict(line({ bench: 'upload', ours: 1.1, reference: 1, ratio: 1.1 })), f);
  recordVerdict(parseVerdict(line({ bench: 'tail' })), f);
  recordVerdict(parseVerdict(line({ bench: 'upload', ours: 1.4, reference: 1, ratio: 1.4 })), f);
  const all = readResults(f);
  assert.deepEqual(
    all.map((v) => [v.bench, v.ratio]),
    [
      ['tail', 1.3347],
      ['upload', 1.4],
    ],
  );
  writeFileSync(f, `${line({})}\n{"bench":"broken"}\n`);
  assert.throws(() => readResults(f), /verdict of broken lacks/);
});

test('goals: every comparison the verdicts use, and a bad goal is an error', () => {
  assert.equal(meets(0.49, '<= 0.5'), true);
  assert.equal(meets(2.1, '>= 2.0'), true);
  assert.equal(meets(250, '< 250'), false);
  assert.equal(meets(1, '> 0'), true);
  assert.throws(() => meets(1, 'about 1'), /bad goal/);
});

test("the README's benchmark table is the rendering of bench/results/latest.jsonl", () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  assert.ok(readme.includes(BEGIN) && readme.includes(END), 'markers present');
  const results = readResults(join(ROOT, 'bench/results/latest.jsonl'));
  const expected = withTable(readme, renderTable(results, staleVerdicts(results, ROOT)));
  // Compared as a table, not as the whole README: assert's diff of two 100 KB texts takes minutes.
  const table = (t: string): string => t.slice(t.indexOf(BEGIN), t.indexOf(END));
  assert.equal(table(readme), table(expected), 'run npm run bench:readme');
  assert.throws(() => withTable('no markers', ''), /no bench:begin/);
});
