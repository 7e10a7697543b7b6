// A check that kills its process (the extension host died of std::bad_alloc on a spec naming /dev/zero) must
// not run again on the restart that follows, or VS Code's three restarts end with the extension disabled.
// The process here really dies inside the guarded check (process.abort), as the host did.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CheckGuard } from '../../../src/core/config/checkGuard';

const GUARD = join(__dirname, '../../../src/core/config/checkGuard.ts');

function dieInsideCheck(mark: string, key: string): number | null {
  const script = `const { CheckGuard } = require(${JSON.stringify(GUARD)}); new CheckGuard(${JSON.stringify(mark)}).run(${JSON.stringify(key)}, () => process.abort());`;
  return spawnSync(process.execPath, ['--require', 'tsx/cjs', '-e', script], { cwd: join(__dirname, '../../..'), encoding: 'utf8' }).status;
}

test('a check that aborted the process leaves its document marked: the next start does not check it again until cleared', () => {
  const mark = join(mkdtempSync(join(tmpdir(), 'rft-guard-')), 'storage', 'config-check-in-progress');
  const key = 'file:///ws/zero/finetune.yaml';
  assert.notEqual(dieInsideCheck(mark, key), 0, 'the child was meant to die inside the check');
  const next = new CheckGuard(mark);
  assert.equal(next.isSuspect(key), true);
  assert.equal(next.isSuspect('file:///ws/other/finetune.yaml'), false);
  // The mark is consumed at start-up: a third start (after this one ran cleanly) trusts the file again.
  assert.equal(existsSync(mark), false);
  assert.equal(new CheckGuard(mark).isSuspect(key), false);
  next.clear(key);
  assert.equal(next.isSuspect(key), false);
});

test('a check that finishes, or throws, leaves no mark', () => {
  const mark = join(mkdtempSync(join(tmpdir(), 'rft-guard-')), 'config-check-in-progress');
  const g = new CheckGuard(mark);
  assert.equal(
    g.run('k', () => 42),
    42,
  );
  assert.throws(() =>
    g.run('k', () => {
      throw new Error('boom');
    }),
  );
  assert.equal(existsSync(mark), false);
  assert.equal(new CheckGuard(mark).isSuspect('k'), false);
});
