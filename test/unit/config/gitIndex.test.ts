// Tracked or not, read from .git/index, checked against git itself (`git ls-files`) on real repositories:
// index versions 2, 3 (an extended flag set) and 4 (prefix-compressed paths), a SHA-256 repository, a linked
// worktree (".git" is a file), nested and non-ASCII paths. And the attack it exists for: a repository whose
// .git/config sets core.fsmonitor to a command, which `git ls-files` runs; the .env check must not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findGitDir, isTrackedInIndex, readIndexPaths } from '../../../src/core/config/gitIndex';
import { nodeFiles } from '../../../src/core/config/nodeFiles';

const noGit = spawnSync('git', ['--version']).status !== 0 ? 'git is not installed' : undefined;
const git = (cwd: string, ...args: string[]): string => execFileSync('git', ['-c', 'user.email=t@t', '-c', 'user.name=t', ...args], { cwd, encoding: 'utf8' });

function repo(opts: { objectFormat?: string } = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'rft-gitidx-'));
  git(dir, 'init', '-q', ...(opts.objectFormat ? [`--object-format=${opts.objectFormat}`] : []));
  for (const f of [
    '.env',
    'finetune.yaml',
    'configs/accelerate.yaml',
    'configs/deep/er/ds_config.json',
    'données/été.jsonl',
    'a'.repeat(120) + '/long name.txt',
  ]) {
    mkdirSync(join(dir, f, '..'), { recursive: true });
    writeFileSync(join(dir, f), 'x\n');
  }
  git(dir, 'add', 'finetune.yaml', 'configs', 'données', 'a'.repeat(120));
  writeFileSync(join(dir, '.env.local'), 'HF_TOKEN=x\n');
  return dir;
}

function agrees(dir: string): void {
  const listed = new Set(git(dir, '-c', 'core.quotepath=off', 'ls-files', '-z').split('\0').filter(Boolean));
  assert.deepEqual(readIndexPaths(findGitDir(join(dir, 'x'))!.gitDir), listed);
  for (const f of ['.env', '.env.local', 'finetune.yaml', 'configs/deep/er/ds_config.json', 'données/été.jsonl']) {
    assert.equal(isTrackedInIndex(join(dir, f)), listed.has(f), f);
  }
}

for (const version of [2, 3, 4]) {
  test(`git index v${version}: tracked files as git ls-files lists them`, (t) => {
    if (noGit) {
      t.skip(noGit);
      return;
    }
    const dir = repo();
    git(dir, 'update-index', '--index-version', String(version));
    if (version === 3) git(dir, 'update-index', '--skip-worktree', 'finetune.yaml');
    agrees(dir);
  });
}

test('git index: a SHA-256 repository and a linked worktree', (t) => {
  if (noGit) {
    t.skip(noGit);
    return;
  }
  const sha256 = repo({ objectFormat: 'sha256' });
  agrees(sha256);
  const main = repo();
  git(main, 'commit', '-q', '-m', 'x');
  const wt = join(mkdtempSync(join(tmpdir(), 'rft-gitwt-')), 'wt');
  git(main, 'worktree', 'add', '-q', wt);
  agrees(wt);
  assert.equal(isTrackedInIndex(join(tmpdir(), 'surely-not-in-a-repo-xyz', '.env')), undefined);
});

test("attack: opening a repo's .env must not run its core.fsmonitor command (git ls-files would)", (t) => {
  if (noGit) {
    t.skip(noGit);
    return;
  }
  const dir = repo();
  const marker = join(dir, '..', `pwned-${Date.now()}`);
  git(dir, 'config', 'core.fsmonitor', `touch ${marker}; false`);
  // The attack works against git itself: this is what the check used to run.
  spawnSync('git', ['ls-files', '--error-unmatch', '--', '.env'], { cwd: dir, stdio: 'ignore' });
  assert.ok(existsSync(marker), "git ls-files ran the repository's fsmonitor command");
  const marker2 = `${marker}-2`;
  git(dir, 'config', 'core.fsmonitor', `touch ${marker2}; false`);
  assert.equal(nodeFiles.isTrackedByGit?.(join(dir, '.env')), false);
  assert.equal(nodeFiles.isTrackedByGit?.(join(dir, 'finetune.yaml')), true);
  assert.equal(existsSync(marker2), false, 'the .env check ran a program of the repository');
});
