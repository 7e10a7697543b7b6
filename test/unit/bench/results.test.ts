// The README's benchmark figures come from verdict lines only: the renderer turns a verdict file into the
// table, refuses a line that lacks a field, a verdict passes only when every goal is met, and the README in
// the repository matches bench/results/latest.jsonl.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseVerdict, readResults, recordVerdict, renderTable, withTable, BEGIN, END } from '../../../bench/lib/results';
import { meets } from '../../../bench/lib/pairs';

const ROOT = resolve(__dirname, '../../..');
const line = (o: Record<string, unknown>): string =>
  JSON.stringify({ bench: 'tail', metric: 'ingest MiB/s', ours: 336.2, reference: 251.9, ratio: 1.3347, goal: '>= 0.8', pass: true, date: '2026-11-24', ...o });

test('a verdict renders as a row with its ratio, goals, checks, cipher and date', () => {
  const v = parseVerdict(line({ cipher: 'aes128-gcm@openssh.com', checks: [{ name: 'p95 line latency ms', value: 1.2, goal: '< 250', pass: true }] }));
  const table = renderTable([v]);
  assert.match(
    table,
    /\| tail \| ingest MiB\/s \| 336 \| 252 \| \*\*1\.33\*\* \| >= 0\.8 \| p95 line latency ms: 1\.200 \(< 250\) met \| yes \| aes128-gcm@openssh\.com \| 2026-11-24 \|/,
  );
  const failed = renderTable([parseVerdict(line({ pass: false, ratio: 0.5 }))]);
  assert.match(failed, /\*\*no\*\*/);
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
  recordVerdict(parseVerdict(line({ bench: 'upload', ratio: 1.1 })), f);
  recordVerdict(parseVerdict(line({ bench: 'tail' })), f);
  recordVerdict(parseVerdict(line({ bench: 'upload', ratio: 1.4 })), f);
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
  const expected = withTable(readme, renderTable(readResults(join(ROOT, 'bench/results/latest.jsonl'))));
  assert.equal(readme, expected, 'run npm run bench:readme');
  assert.throws(() => withTable('no markers', ''), /no bench:begin/);
});
