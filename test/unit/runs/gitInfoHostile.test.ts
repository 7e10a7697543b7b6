// gitSnapshot on a repository whose config, in every scope git reads inside a repository (.git/config, a file
// it includes, config.worktree under extensions.worktreeConfig), names commands git would run during a status
// or diff (core.fsmonitor, a clean filter, a textconv): none runs, and the commit, branch, dirty state, diff
// and untracked files still match what real git says of the same repository before the hostile config was
// added. Also HEAD read from packed-refs, a detached HEAD and a linked worktree, against real git.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gitSnapshot } from '../../../src/core/runs/sync/gitInfo';

function repo(): { d: string; g: (...a: string[]) => string } {
  const d = mkdtempSync(join(tmpdir(), 'rft-githostile-'));
  const g = (...a: string[]): string => execFileSync('git', a, { cwd: d, encoding: 'utf8' });
  g('init', '-q', '-b', 'main');
  g('config', 'user.email', 't@example.com');
  g('config', 'user.name', 'T');
  mkdirSync(join(d, 'proj'));
  writeFileSync(join(d, 'proj', 'train.py'), 'print("v1")\n');
  writeFileSync(join(d, 'proj', 'notes.txt'), 'a\n');
  g('add', '-A');
  g('commit', '-q', '-m', 'first');
  return { d, g };
}

test('gitInfo: commands named in .git/config, an included file and config.worktree never run; commit, branch, dirty and diff are still right', async () => {
  const { d, g } = repo();
  writeFileSync(join(d, 'proj', 'train.py'), 'print("v2")\n');
  writeFileSync(join(d, 'proj', 'new.txt'), 'n\n');
  // What real git says while the repository is still safe.
  const want = {
    commit: g('rev-parse', 'HEAD').trim(),
    branch: g('symbolic-ref', '--short', 'HEAD').trim(),
    diff: execFileSync('git', ['diff', 'HEAD', '--relative', '--no-color', '--binary', '--', '.'], { cwd: join(d, 'proj'), encoding: 'utf8' }),
    untracked: execFileSync('git', ['ls-files', '--others', '--exclude-standard', '--', '.'], { cwd: join(d, 'proj'), encoding: 'utf8' })
      .split('\n')
      .filter(Boolean),
  };
  assert.ok(want.diff.length > 0);

  const marker = join(d, 'ran');
  const cmd = `sh -c 'echo ran >> ${marker}; cat'`;
  g('config', 'core.fsmonitor', cmd);
  g('config', 'filter.evil.clean', cmd);
  g('config', 'filter.evil.required', 'true');
  g('config', 'diff.evil.textconv', cmd);
  writeFileSync(join(d, 'included.cfg'), `[core]\n\tfsmonitor = ${cmd}\n[filter "inc"]\n\tclean = ${cmd}\n`);
  g('config', 'include.path', join(d, 'included.cfg'));
  g('config', 'extensions.worktreeConfig', 'true');
  g('config', '--worktree', 'core.fsmonitor', cmd);
  writeFileSync(join(d, '.git', 'info', 'attributes'), '* filter=evil diff=evil\n');
  writeFileSync(join(d, 'proj', '.gitattributes'), '* filter=inc\n');
  // The hostile repository does run the command under plain git: the test would see it.
  execFileSync('git', ['status', '--porcelain'], { cwd: d });
  assert.equal(existsSync(marker), true, 'the fixture is hostile under plain git');
  execFileSync('rm', ['-f', marker]);
  // .gitattributes is itself untracked now; real git would list it too.
  want.untracked = [...want.untracked, '.gitattributes'].sort();

  const s = await gitSnapshot(join(d, 'proj'));
  assert.equal(existsSync(marker), false, 'no command the repository named ran');
  assert.equal(s.state.repo, true);
  assert.equal(s.state.commit, want.commit);
  assert.equal(s.state.branch, want.branch);
  assert.equal(s.state.dirty, true);
  assert.deepEqual([...(s.state.untracked ?? [])].sort(), want.untracked);
  assert.equal(s.diff, want.diff);
  assert.equal(s.state.note, undefined);
});

test('gitInfo: HEAD from packed-refs, a detached HEAD and a linked worktree match real git', async () => {
  const { d, g } = repo();
  g('pack-refs', '--all');
  assert.equal(existsSync(join(d, '.git', 'refs', 'heads', 'main')), false, 'the branch lives in packed-refs only');
  let s = await gitSnapshot(join(d, 'proj'));
  assert.equal(s.state.commit, g('rev-parse', 'HEAD').trim());
  assert.equal(s.state.branch, 'main');
  assert.equal(s.state.dirty, false);

  const wt = join(mkdtempSync(join(tmpdir(), 'rft-gitwt-')), 'wt');
  g('worktree', 'add', '-q', '-b', 'side', wt);
  writeFileSync(join(wt, 'proj', 'train.py'), 'print("wt")\n');
  s = await gitSnapshot(join(wt, 'proj'));
  assert.equal(s.state.branch, 'side');
  assert.equal(s.state.commit, g('rev-parse', 'HEAD').trim());
  assert.equal(s.state.dirty, true);
  assert.match(s.diff ?? '', /^\+print\("wt"\)$/m);

  g('checkout', '-q', '--detach');
  s = await gitSnapshot(join(d, 'proj'));
  assert.equal(s.state.branch, undefined);
  assert.equal(s.state.commit, g('rev-parse', 'HEAD').trim());
});

test('gitInfo: core.fsmonitor set only in config.worktree (a scope `git config --local` does not list) never runs', async () => {
  const { d, g } = repo();
  writeFileSync(join(d, 'proj', 'train.py'), 'print("v2")\n');
  const marker = join(d, 'ran');
  g('config', 'extensions.worktreeConfig', 'true');
  g('config', '--worktree', 'core.fsmonitor', `sh -c 'echo ran >> ${marker}'`);
  const s = await gitSnapshot(join(d, 'proj'));
  assert.equal(existsSync(marker), false, 'the worktree-scope fsmonitor did not run');
  assert.equal(s.state.dirty, true);
});
