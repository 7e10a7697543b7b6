// The host-side TensorBoard scripts run here under dash (Debian's /bin/sh) in a scratch run folder: the pid
// file is the run's to write, and only a number above 1 is ever taken for a live TensorBoard or signalled.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tensorboardStartScript, tensorboardStopScript } from '../../../src/core/runs/tensorboard';

// Without tensorboard anywhere, a start that does not reuse says RFT_TB_MISSING.
const PATH_WITHOUT_TENSORBOARD = '/usr/bin:/bin';
const shRun = (script: string): string =>
  spawnSync('dash', ['-c', script], { encoding: 'utf8', env: { PATH: PATH_WITHOUT_TENSORBOARD }, timeout: 20_000 }).stdout;

test('TensorBoard start: a pid file of 0, 1, -1 or junk is no live TensorBoard, so its port file is not reused', (t) => {
  if (spawnSync('python3', ['-c', 'import tensorboard'], { env: { PATH: PATH_WITHOUT_TENSORBOARD } }).status === 0)
    return t.skip('the system python3 has tensorboard: the start would launch one instead of saying RFT_TB_MISSING');
  const dir = mkdtempSync(join(tmpdir(), 'rft-tb-'));
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
