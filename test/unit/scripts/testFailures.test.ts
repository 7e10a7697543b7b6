// The failure digest `npm test` prints last, read from what node:test's spec reporter and unittest really print
// (each run here on a small failing file), since CI shows only the tail of a run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// @ts-expect-error: a plain .mjs script without types
import { failureDigest } from '../../../scripts/test-failures.mjs';

const digest = failureDigest as (text: string, opts?: { perTest?: number; maxLines?: number }) => string[];

function run(cmd: string, args: string[], cwd: string): string {
  // Without the parent's NODE_TEST_CONTEXT, a child `node --test` reports as it would in a terminal.
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', env });
  return `${r.stdout}${r.stderr}`;
}

test('node:test: each failing test with its error, a failed before hook and a failing after hook included; no stack lines', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-digest-'));
  try {
    writeFileSync(
      join(dir, 'a.test.mjs'),
      [
        "import { test, before, after } from 'node:test';",
        'let host;',
        "before(() => { throw new Error('no port for the host'); });",
        'after(() => host.close());',
        "test('downloads the folder', () => {});",
        "test('refuses a link', () => {});",
      ].join('\n'),
    );
    writeFileSync(
      join(dir, 'b.test.mjs'),
      [
        "import { test } from 'node:test';",
        "import assert from 'node:assert/strict';",
        "test('adds', () => assert.equal(1 + 1, 3));",
        "test('passes', () => {});",
      ].join('\n'),
    );
    const out = run(process.execPath, ['--test', '--test-reporter=spec', 'a.test.mjs', 'b.test.mjs'], dir);
    const lines = digest(out);
    const names = lines.filter((l) => l.startsWith('✖ '));
    assert.equal(names.length, 4, lines.join('\n'));
    assert.ok(names.some((l) => l.includes('downloads the folder')));
    assert.ok(names.some((l) => l.includes('refuses a link')));
    assert.ok(
      names.some((l) => l.includes('a.test.mjs')),
      'the file whose after hook failed',
    );
    assert.ok(names.some((l) => l.includes('adds')));
    assert.ok(!names.some((l) => l.includes('passes')));
    assert.ok(
      lines.some((l) => /no port for the host/.test(l)),
      'the before hook error is shown',
    );
    assert.ok(
      lines.some((l) => /Cannot read properties of undefined/.test(l)),
      'the after hook error is shown',
    );
    assert.ok(
      lines.some((l) => /Expected values to be strictly equal|2 !== 3/.test(l)),
      lines.join('\n'),
    );
    assert.ok(!lines.some((l) => /^\s+at\s/.test(l) || /^test at /.test(l)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('unittest: each FAIL and ERROR with the exception line of its traceback', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-digest-'));
  try {
    mkdirSync(join(dir, 'tests'));
    writeFileSync(join(dir, 'tests', '__init__.py'), '');
    writeFileSync(
      join(dir, 'tests', 'test_x.py'),
      [
        'import unittest',
        'class T(unittest.TestCase):',
        '    def test_masks(self):',
        "        self.assertEqual([1, -100], [1, 2], 'prompt tokens must be masked')",
        '    def test_loads(self):',
        "        raise KeyError('gemma2')",
        '    def test_fine(self):',
        '        pass',
      ].join('\n'),
    );
    const lines = digest(run('python3', ['-m', 'unittest', 'discover', '-s', 'tests', '-t', '.', '-v'], dir));
    assert.equal(lines.filter((l) => l.startsWith('✖ ')).length, 2, lines.join('\n'));
    assert.ok(lines.some((l) => /^✖ FAIL: test_masks/.test(l)));
    assert.ok(lines.some((l) => /^✖ ERROR: test_loads/.test(l)));
    assert.ok(
      lines.some((l) => /^ {4}AssertionError: /.test(l)),
      lines.join('\n'),
    );
    assert.ok(
      lines.some((l) => /prompt tokens must be masked/.test(l)),
      lines.join('\n'),
    );
    assert.ok(lines.some((l) => /KeyError: 'gemma2'/.test(l)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a long report is cut to its first lines and says how many more there were; a clean log gives nothing', () => {
  const failing = Array.from({ length: 30 }, (_, i) => `✖ test ${i} (1ms)\n  Error: broke ${i}\n      at x (f.ts:1:1)\n`).join('\n');
  const lines = digest(`ℹ fail 30\n\n✖ failing tests:\n\n${failing}`, { maxLines: 10 });
  assert.equal(lines.length, 11);
  assert.match(lines[10]!, /and 50 more lines/);
  assert.deepEqual(digest('ℹ pass 3\nℹ fail 0\n'), []);
  assert.ok(digest(`✖ failing tests:\n\n✖ t\n  Error: ${'x'.repeat(2000)}\n`).every((l) => l.length <= 305));
});

test('the VS Code host suite (failures inline, as test/vscode/suite/index.ts writes them) and the training suite (FAIL headings only)', () => {
  const stack = new Error('the Runs view has no row').stack!.split('\n').join('\n      ');
  const vscode = ['  ✔ runs the view is contributed (3 ms)', `  ✖ runs a finished run has a row\n      ${stack}`, '1 passed, 1 failed'].join('\n');
  const lines = digest(vscode);
  assert.deepEqual(lines, ['✖ runs a finished run has a row', '    Error: the Runs view has no row']);
  const training = [
    'training (hf5, 800 s): 172 passed, 1 failed, 0 skipped',
    '  FAIL: test_gemma2_loads (tests_training.test_models.T.test_gemma2_loads)',
  ].join('\n');
  assert.deepEqual(digest(training), ['✖ FAIL: test_gemma2_loads (tests_training.test_models.T.test_gemma2_loads)']);
});

test('run as test-all.sh runs it: a failed suite named with its colon finds its log (test_integration.log) and prints its digest', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-digest-'));
  try {
    writeFileSync(join(dir, 'test_integration.log'), '✖ failing tests:\n\ntest at a.test.ts:1:1\n✖ downloads (1ms)\n  Error: refused: entry "evil"\n');
    writeFileSync(join(dir, 'test_unit.log'), 'ℹ pass 3\nℹ fail 0\n');
    const r = spawnSync(process.execPath, ['scripts/test-failures.mjs', dir, 'test:integration'], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, '-- test:integration: what failed --\n✖ downloads (1ms)\n    Error: refused: entry "evil"\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
