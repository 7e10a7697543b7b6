import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runnerCommand, remoteWorkspaceName } from '../../../src/core/runs/lifecycle/runManager';

// A fake `python` that records its argv and, for bootstrap, prints the runner's JSON answer.
function fakePython(dir: string): string {
  const py = join(dir, 'python3');
  writeFileSync(py, `#!/bin/sh\nprintf '%s\\n' "$@" >> "${dir}/argv.log"\nif [ "$3" = bootstrap ]; then echo '{"python": "${dir}/venv-python"}'; fi\n`, {
    mode: 0o755,
  });
  writeFileSync(join(dir, 'venv-python'), `#!/bin/sh\nprintf 'VENV %s\\n' "$@" >> "${dir}/argv.log"\n`, { mode: 0o755 });
  return py;
}

test('runnerCommand: an own script runs the runner under the host python with the workdir, quoted', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-cmd-'));
  const py = fakePython(dir);
  const runDir = join(dir, 'run dir');
  mkdirSync(runDir);
  const cmd = runnerCommand(py, '/opt/runner $(x)', '/home/u/ws; rm -rf /', true);
  const r = spawnSync('sh', ['-c', cmd], { env: { ...process.env, RFT_RUN_DIR: runDir } });
  assert.equal(r.status, 0, r.stderr.toString());
  const argv = readFileSync(join(dir, 'argv.log'), 'utf8').trim().split('\n');
  assert.deepEqual(argv, ['-m', 'remote_finetune', 'run', '--workdir', '/home/u/ws; rm -rf /', '--run-dir', runDir]);
});

test('runnerCommand: the built-in trainer bootstraps first, then runs under the interpreter bootstrap chose', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-cmd-'));
  const py = fakePython(dir);
  const runDir = join(dir, 'run');
  mkdirSync(runDir);
  const r = spawnSync('sh', ['-c', runnerCommand(py, '/opt/runner', '/ws', false)], { env: { ...process.env, RFT_RUN_DIR: runDir } });
  assert.equal(r.status, 0, r.stderr.toString());
  const log = readFileSync(join(dir, 'argv.log'), 'utf8');
  assert.match(log, /bootstrap\n--workdir\n\/ws\n--run-dir/);
  assert.match(log, /VENV -m\nVENV remote_finetune\nVENV run/);
});

test('remoteWorkspaceName: stable per folder, distinct across folders, path-safe', () => {
  assert.equal(remoteWorkspaceName('/a/my proj'), remoteWorkspaceName('/a/my proj'));
  assert.notEqual(remoteWorkspaceName('/a/proj'), remoteWorkspaceName('/b/proj'));
  assert.match(remoteWorkspaceName('/a/we ird$(x)'), /^[A-Za-z0-9._-]+$/);
});

test("runnerCommand: a repository's own remote_finetune/ or json.py never runs in place of the runner (the synced workspace is the cwd)", () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-cmd-'));
  const ws = join(dir, 'ws');
  const runDir = join(dir, 'run');
  mkdirSync(join(ws, 'remote_finetune'), { recursive: true });
  mkdirSync(runDir);
  const marker = join(dir, 'pwned');
  const evil = `open(${JSON.stringify(marker)}, 'a').write('ran\\n')\n`;
  writeFileSync(join(ws, 'remote_finetune', '__init__.py'), evil);
  writeFileSync(join(ws, 'remote_finetune', '__main__.py'), evil);
  writeFileSync(join(ws, 'json.py'), evil);
  const runner = join(__dirname, '../../../python-runner');
  // command.sh starts in the workspace, as startDetached writes it; the old command was run from there.
  const old = `cd ${JSON.stringify(ws)} && PYTHONPATH=${JSON.stringify(runner)} python3 -m remote_finetune plan --run-dir "$RFT_RUN_DIR"`;
  spawnSync('sh', ['-c', old], { env: { ...process.env, RFT_RUN_DIR: runDir } });
  assert.ok(existsSync(marker), 'the attack: python -m puts the working directory first on sys.path');
  rmSync(marker);
  const r = spawnSync('sh', ['-c', `cd ${JSON.stringify(ws)}\n${runnerCommand('python3', runner, ws, true).replace(' run --workdir', ' plan --workdir')}`], {
    env: { ...process.env, RFT_RUN_DIR: runDir },
    encoding: 'utf8',
  });
  assert.equal(existsSync(marker), false, `the repository's code ran: ${r.stdout}${r.stderr}`);
  assert.match(r.stdout, /errors|spec\.json/, 'the real runner answered');
});
