// The host-side TensorBoard scripts run here under dash (Debian's /bin/sh) in a scratch run folder: the pid
// file is the run's to write, and only a number above 1 is ever taken for a live TensorBoard or signalled.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  TensorboardNotLoggedError,
  parseTensorboardStart,
  tensorboardLogdirs,
  tensorboardStartScript,
  tensorboardStopScript,
  tensorboardUnavailable,
} from '../../../src/core/runs/outputs/tensorboard';

/** A run folder that logged to TensorBoard the built-in trainer's way (report_to tensorboard). */
function loggedRunDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rft-tb-'));
  mkdirSync(join(dir, 'tensorboard'));
  writeFileSync(join(dir, 'tensorboard', 'events.out.tfevents.1.host'), '');
  return dir;
}

// Without tensorboard anywhere, a start that does not reuse says RFT_TB_MISSING.
const PATH_WITHOUT_TENSORBOARD = '/usr/bin:/bin';
const shRun = (script: string): string =>
  spawnSync('dash', ['-c', script], { encoding: 'utf8', env: { PATH: PATH_WITHOUT_TENSORBOARD }, timeout: 20_000 }).stdout;

test('TensorBoard start: a pid file of 0, 1, -1 or junk is no live TensorBoard, so its port file is not reused', (t) => {
  if (spawnSync('python3', ['-c', 'import tensorboard'], { env: { PATH: PATH_WITHOUT_TENSORBOARD } }).status === 0)
    return t.skip('the system python3 has tensorboard: the start would launch one instead of saying RFT_TB_MISSING');
  const dir = loggedRunDir();
  writeFileSync(join(dir, 'tensorboard.port'), '22\n');
  for (const pid of ['0', '1', '-1', '$$', 'x']) {
    writeFileSync(join(dir, 'tensorboard.pid'), `${pid}\n`);
    const out = shRun(tensorboardStartScript(dir, undefined));
    assert.doesNotMatch(out, /RFT_TB_PORT/, `pid file ${pid}: ${out}`);
    assert.match(out, /RFT_TB_MISSING/, `pid file ${pid}`);
  }
});

test('TensorBoard start reuses a live one, and stop signals only the pid of its file when it is a real pid', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-tb-'));
  const sleeper = spawn('sleep', ['30'], { stdio: 'ignore' });
  const exited = new Promise((r) => sleeper.once('exit', r));
  writeFileSync(join(dir, 'tensorboard.port'), '6006\n');
  writeFileSync(join(dir, 'tensorboard.pid'), `${sleeper.pid}\n`);
  assert.match(shRun(tensorboardStartScript(dir, undefined)), /RFT_TB_PORT 6006/);
  // A pid file of 0 would have `kill 0` end the stop script's own process group: it is left alone. (The script
  // runs in a session of its own, so a regression ends only it, not this test runner's group.)
  writeFileSync(join(dir, 'tensorboard.pid'), '0\n');
  const r = spawnSync('setsid', ['-w', 'dash', '-c', `${tensorboardStopScript(dir)}; echo stop-script-finished`], { encoding: 'utf8' });
  assert.match(r.stdout, /stop-script-finished/);
  assert.ok(!existsSync(join(dir, 'tensorboard.pid')));
  writeFileSync(join(dir, 'tensorboard.pid'), `${sleeper.pid}\n`);
  shRun(tensorboardStopScript(dir));
  await exited;
  assert.ok(!existsSync(join(dir, 'tensorboard.port')));
});

test('TensorBoard start on a run that wrote no event files says RFT_TB_NONE (not an empty TensorBoard over the workspace)', (t) => {
  if (spawnSync('find', ['--version']).status !== 0) return t.skip('no find on this machine: the host script needs it');
  // A host layout: <root>/runs/<id> and <root>/workspaces/<name>.
  const root = mkdtempSync(join(tmpdir(), 'rft-tb-root-'));
  const runDir = join(root, 'runs', 'r1');
  mkdirSync(runDir, { recursive: true });
  const wsLocal = '/home/me/project';
  const dirs = tensorboardLogdirs(runDir, wsLocal);
  mkdirSync(join(dirs.workspace, 'runs', 'exp1'), { recursive: true });
  writeFileSync(join(dirs.workspace, 'train.py'), 'print(1)\n');
  const none = shRun(tensorboardStartScript(runDir, wsLocal));
  assert.match(none, /RFT_TB_NONE/, none);
  assert.throws(
    () => parseTensorboardStart(none),
    (e: unknown) => e instanceof TensorboardNotLoggedError && /add tensorboard to trainer\.report_to/.test(e.message),
  );
  // An own script's event files in the workspace (HF's output_dir/runs/…) are found there.
  writeFileSync(join(dirs.workspace, 'runs', 'exp1', 'events.out.tfevents.2.host'), '');
  assert.doesNotMatch(shRun(tensorboardStartScript(runDir, wsLocal)), /RFT_TB_NONE/);
});

test('Open TensorBoard explains itself for a run that never reached a host, or whose instance went with its files', () => {
  const base = { name: 'sft-0112', remoteDir: '/h/.remote-finetune/runs/r', host: 'gpu-box' };
  assert.equal(tensorboardUnavailable(base), undefined);
  assert.match(tensorboardUnavailable({ ...base, host: undefined }) ?? '', /^sft-0112 never reached a host/);
  assert.match(
    tensorboardUnavailable({ ...base, instanceId: 'i-1', finishedAction: 'terminated' }) ?? '',
    /instance was terminated .* TensorBoard event files went with it/,
  );
  assert.equal(tensorboardUnavailable({ ...base, instanceId: 'i-1', finishedAction: 'kept' }), undefined);
});
