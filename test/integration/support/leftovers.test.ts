// test:leftovers relies on recognising the processes the suites start. Here a real sshd, Chromium and a
// watchdog-shaped process are started, found by their folder, stopped, and then no longer found; the
// argv shapes of code-server and of unrelated processes are classified from their real command lines.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { alive, classify, leftoverProcesses, stopPids } from '../../support/leftovers';
import { startSshd } from '../../support/sshd';
import { launchChromium } from '../../harness/chromium';

test('classify: the argv of each kind the suites start, and nothing else', () => {
  assert.deepEqual(classify(['/usr/sbin/sshd', '-D', '-f', '/tmp/rft-sshd-1/sshd_config', '-E', '/tmp/rft-sshd-1/sshd.log']), {
    kind: 'sshd',
    dir: '/tmp/rft-sshd-1',
  });
  assert.deepEqual(
    classify([
      '/usr/bin/node',
      '/root/.cache/remote-finetune/code-server-4.100.3/node_modules/code-server/out/node/entry.js',
      '--auth',
      'none',
      '--user-data-dir',
      '/tmp/cs-x/user',
      '/ws',
    ]),
    { kind: 'code-server', dir: '/tmp/cs-x/user' },
  );
  assert.deepEqual(classify(['/usr/lib/chromium/chromium', '--headless', '--user-data-dir=/tmp/playwright_chromiumdev_profile-AbC']), {
    kind: 'chromium',
    dir: '/tmp/playwright_chromiumdev_profile-AbC',
  });
  assert.deepEqual(classify(['/venv/bin/python', '-m', 'remote_finetune', 'watchdog', '--root', '/tmp/h/.remote-finetune']), {
    kind: 'watchdog',
    dir: '/tmp/h/.remote-finetune',
  });
  assert.deepEqual(
    classify(['/h/.remote-finetune/venv/bin/python', '-m', 'tensorboard.main', '--logdir', '/tmp/rft-sshd-3/home/runs/r1/tensorboard', '--port', '0']),
    { kind: 'tensorboard', dir: '/tmp/rft-sshd-3/home/runs/r1/tensorboard' },
    'TensorBoard as "Open TensorBoard" starts it on a host',
  );
  assert.equal(classify(['/usr/bin/python3', '-m', 'tensorboard.main']), undefined, 'no --logdir: not one of ours');
  assert.deepEqual(
    classify(['sshd: /usr/sbin/sshd -D -f /tmp/rft-sshd-2/sshd_config -E /tmp/rft-sshd-2/sshd.log [listener] 0 of 10-100 startups']),
    { kind: 'sshd', dir: '/tmp/rft-sshd-2' },
    "the listener's process title",
  );
  assert.equal(classify(['/usr/sbin/sshd', '-D']), undefined, 'the system sshd has no test folder');
  assert.equal(classify(['sshd: root@notty']), undefined, 'a connection child is stopped with its listener');
  assert.equal(classify(['/usr/bin/python3', '-m', 'remote_finetune', 'run']), undefined);
  assert.equal(classify(['/usr/bin/chromium-browser-helper', '--user-data-dir=/tmp/x']), undefined);
});

test("a test sshd's stop() also stops the watchdog and TensorBoard its host runs left detached", async () => {
  const sshd = await startSshd();
  const opts = { stdio: 'ignore', detached: true } as const;
  // Processes with the runner's and TensorBoard's argv (python -c that sleeps), under the host's HOME.
  const wd = spawn('python3', ['-c', 'import time; time.sleep(60)', '-m', 'remote_finetune', 'watchdog', '--root', join(sshd.home, '.remote-finetune')], opts);
  const tb = spawn('python3', ['-c', 'import time; time.sleep(60)', '-m', 'tensorboard.main', '--logdir', join(sshd.home, 'runs/r1/tensorboard')], opts);
  // One outside it stays: stop() touches only what lies under its own folder.
  const other = mkdtempSync(join(tmpdir(), 'rft-leftover-tb-'));
  const foreign = spawn('python3', ['-c', 'import time; time.sleep(60)', '-m', 'tensorboard.main', '--logdir', other], opts);
  try {
    await new Promise((r) => setTimeout(r, 200));
    const found = leftoverProcesses(sshd.home).map((p) => `${p.kind} ${p.pid}`);
    assert.ok(found.includes(`watchdog ${wd.pid}`) && found.includes(`tensorboard ${tb.pid}`), JSON.stringify(found));
    await sshd.stop();
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(alive(wd.pid!), false, 'watchdog stopped');
    assert.equal(alive(tb.pid!), false, 'TensorBoard stopped');
    assert.equal(alive(foreign.pid!), true, 'a TensorBoard outside the host left alone');
  } finally {
    for (const c of [wd, tb, foreign]) c.kill('SIGKILL');
    rmSync(other, { recursive: true, force: true });
  }
});

test('a real sshd, Chromium and watchdog are found under their folder, and gone after stopPids', async () => {
  const sshd = await startSshd();
  const browser = await launchChromium();
  const root = mkdtempSync(join(tmpdir(), 'rft-leftover-wd-'));
  // A process with a watchdog's argv (python -c that sleeps, named as the runner names it).
  const wd = spawn('python3', ['-c', 'import time; time.sleep(60)', '-m', 'remote_finetune', 'watchdog', '--root', root], { stdio: 'ignore' });
  try {
    const found = leftoverProcesses(tmpdir());
    const kinds = new Set(found.map((p) => p.kind));
    for (const k of ['sshd', 'chromium', 'watchdog'] as const) assert.ok(kinds.has(k), `${k} found among ${JSON.stringify(found)}`);
    assert.ok(
      found.some((p) => p.kind === 'sshd' && p.pid === sshd.pid),
      'the sshd by its pid',
    );
    assert.ok(found.some((p) => p.kind === 'watchdog' && p.pid === wd.pid));
    assert.deepEqual(leftoverProcesses(join(tmpdir(), 'no-such-folder')), [], 'nothing outside the folder');
    const mine = found.filter((p) => p.pid === sshd.pid || p.pid === wd.pid || p.kind === 'chromium');
    await stopPids(mine.map((p) => p.pid));
    const after = leftoverProcesses(tmpdir()).filter((p) => mine.some((m) => m.pid === p.pid));
    assert.deepEqual(after, []);
  } finally {
    wd.kill('SIGKILL');
    await browser.close().catch(() => undefined);
    await sshd.stop();
    rmSync(root, { recursive: true, force: true });
  }
});
