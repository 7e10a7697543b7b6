// Host commands never import a `remote_finetune/` or `tensorboard/` planted in the run folder (issue 30 item 2):
// the run's own training script can write there. Each command runs here, under sh with this machine's python3,
// as Python 3.10 would run it: 3.11 is what this machine has, so the flag 3.10 ignores is emptied in the command
// (PYTHONSAFEPATH=1 → PYTHONSAFEPATH=), which gives 3.11 the 3.10 rule: the working folder first on sys.path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runnerOpCommand } from '../../../src/core/runs/hosts/hostOps';
import { remoteGenerateCommand } from '../../../src/core/runs/outputs/tryAdapter';
import { tensorboardStartScript } from '../../../src/core/runs/outputs/tensorboard';

const RUNNER = resolve(__dirname, '../../../python-runner');
const PYTHON = spawnSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).stdout.trim();

function plantedRunDir(): { runDir: string; marker: string } {
  const base = mkdtempSync(join(tmpdir(), 'rft-entry-'));
  const runDir = join(base, 'runs', 'R1');
  const marker = join(base, 'planted-code-ran');
  for (const pkg of ['remote_finetune', 'tensorboard']) {
    mkdirSync(join(runDir, pkg), { recursive: true });
    for (const f of ['__init__.py', '__main__.py', 'main.py']) writeFileSync(join(runDir, pkg, f), `open(${JSON.stringify(marker)}, "a").write("${pkg}\\n")\n`);
  }
  writeFileSync(join(runDir, 'spec.json'), JSON.stringify({ version: 1, name: 'x', command: 'python train.py' }));
  writeFileSync(join(runDir, 'bootstrap.json'), JSON.stringify({ python: PYTHON }));
  return { runDir, marker };
}

function asPython310(command: string): { status: number | null; out: string } {
  const env = { ...process.env };
  delete env.PYTHONSAFEPATH;
  const r = spawnSync('sh', ['-c', command.replace(/PYTHONSAFEPATH=1/g, 'PYTHONSAFEPATH=')], { encoding: 'utf8', env, timeout: 60_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

test('merge/publish (runnerOpCommand): our runner runs, not the run folder’s remote_finetune', () => {
  const { runDir, marker } = plantedRunDir();
  const at = { root: join(runDir, '../..'), runDir, workspace: runDir, runner: RUNNER, python: PYTHON };
  const r = asPython310(runnerOpCommand(at, ['plan', '--run-dir', runDir, '--workdir', runDir]));
  assert.equal(existsSync(marker), false, r.out);
  assert.equal(r.status, 0, r.out);
  assert.match(r.out, /"mode": "own-script"/);
});

test('generate (remoteGenerateCommand): our generate.py runs, not the run folder’s remote_finetune', () => {
  const { runDir, marker } = plantedRunDir();
  const r = asPython310(remoteGenerateCommand({ runDir, runnerDir: RUNNER, adapterPath: join(runDir, 'adapter'), fallbackPython: PYTHON }) + ' </dev/null');
  assert.equal(existsSync(marker), false, r.out);
  assert.match(r.out, /"type": "error", "fatal": true, "message": "cannot load the adapter/, 'our generate.py answered');
});

test('TensorBoard: the probe and the start never import a tensorboard package from the run folder', () => {
  const { runDir, marker } = plantedRunDir();
  const r = asPython310(tensorboardStartScript(runDir, undefined));
  assert.equal(existsSync(marker), false, r.out);
});
