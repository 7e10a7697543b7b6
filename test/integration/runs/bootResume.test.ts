// The host resumes a run by itself after a restart (issue 36.2), on a real OpenSSH server on loopback. A run is
// started through the RunManager with an own script that checkpoints every 5 steps
// (test/fixtures/own-scripts/checkpointing_train.py); once it has saved one, VS Code goes away (the manager is
// disposed) and the host "reboots": every process of the run (the wrapper's group, the training process's own
// session) and the host's watchdog are killed with SIGKILL, so nothing is written on the way out. Then the boot
// hook runs as the boot unit would run it (`python -m remote_finetune boot-resume` from the host's runner copy),
// with no client connected. The run finishes on its own; a new manager reconnecting shows the whole history:
// interrupted → resumed (by the host, from the checkpoint) → completed, the mirrored events equal to the host's
// byte for byte, the steps going on from the checkpoint. The GPU is an nvidia-smi STAND-IN (no GPU here).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { runFinished, sshStartRequest, testRunManager, trustingConnectOptions, until } from '../../support/runHosts';
import { parseEventLine } from '../../../src/core/telemetry/events';
import type { RunEvent } from '../../../src/core/telemetry/events';
import { endStatesLine, runTooltipLines } from '../../../src/core/runs/view/runSummary';
import type { ConnectOptions } from '../../../src/core/ssh/session';

const REPO = resolve(__dirname, '../../..');
const STANDINS = join(REPO, 'test/support/standins');
let sshd: Sshd;
let connectOptions: ConnectOptions;

before(async () => {
  sshd = await startSshd({ pathPrepend: [STANDINS] });
  connectOptions = trustingConnectOptions([sshd]);
});
after(async () => {
  await sshd?.stop();
});

function eventsOf(text: string): RunEvent[] {
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => {
      const p = parseEventLine(l);
      assert.ok(p.ok, l);
      return p.event;
    });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(')').pop()!.trim()[0] !== 'Z';
  } catch {
    return false;
  }
}

const pidIn = (file: string): number => Number(readFileSync(file, 'utf8').trim().split(/\s+/)[0]);

test(
  'boot resume: a run whose host restarted is resumed by the host from its checkpoint with no client, and the reconnecting extension shows interrupted → resumed → completed',
  { timeout: 240_000 },
  async () => {
    const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
    const ws = mkdtempSync(join(tmpdir(), 'rft-ws-'));
    copyFileSync(join(REPO, 'test/fixtures/own-scripts/checkpointing_train.py'), join(ws, 'train.py'));
    const first = testRunManager(storage, connectOptions);
    const rec = await first.start(sshStartRequest(sshd, ws, 'reboot-run', 'python3 train.py --steps 40 --sleep 0.15 --save-every 5'));
    const root = join(sshd.home, '.remote-finetune');
    const runDir = join(root, 'runs', rec.id);
    const hostEvents = (): RunEvent[] => (existsSync(join(runDir, 'events.jsonl')) ? eventsOf(readFileSync(join(runDir, 'events.jsonl'), 'utf8')) : []);
    await until('a checkpoint at step 10 or later', () => hostEvents().some((e) => e.type === 'checkpoint' && e.step >= 10), 90_000);
    await first.dispose(); // VS Code closed

    // The "reboot": SIGKILL to the run's process groups and the host's watchdog; nothing ends cleanly.
    const groups = [pidIn(join(runDir, 'pid')), pidIn(join(runDir, 'train.pgid'))];
    const pids = [...groups, pidIn(join(runDir, 'runner.pid'))];
    for (const g of groups) process.kill(-g, 'SIGKILL');
    if (existsSync(join(root, 'watchdog.pid'))) {
      const w = pidIn(join(root, 'watchdog.pid'));
      if (alive(w)) process.kill(w, 'SIGKILL');
    }
    await until('every process of the run gone', () => !pids.some(alive), 10_000);
    const before = hostEvents();
    assert.ok(!before.some((e) => e.type === 'finished'), 'a SIGKILL leaves no finished line');
    assert.ok(!existsSync(join(runDir, 'exit_code')));
    const saved = Math.max(...before.flatMap((e) => (e.type === 'checkpoint' ? [e.step] : [])));
    const killedAt = Math.max(...before.flatMap((e) => (e.type === 'metrics' ? [e.step] : [])));

    // The boot hook, as the unit calls it: the host's runner copy, the user's environment, no client.
    const m = /PYTHONPATH=(?:'([^']+)'|(\S+))/.exec(readFileSync(join(runDir, 'command.sh'), 'utf8'));
    const runnerDir = m?.[1] ?? m?.[2];
    assert.ok(runnerDir, 'the runner copy named in command.sh');
    const t0 = Date.now();
    const hook = spawnSync('python3', ['-m', 'remote_finetune', 'boot-resume', '--root', root], {
      cwd: '/',
      env: { HOME: sshd.home, PATH: [STANDINS, '/usr/local/bin', '/usr/bin', '/bin'].join(':'), PYTHONPATH: runnerDir, RFT_POWEROFF_CMD: 'true' },
      timeout: 60_000,
    });
    assert.equal(hook.status, 0, hook.stdout.toString() + hook.stderr.toString());
    await until('the resumed run to end on the host', () => existsSync(join(runDir, 'exit_code')), 120_000);
    const recoveredS = (Date.now() - t0) / 1000;

    // VS Code again: a new manager reattaches and follows the run to its end.
    const second = testRunManager(storage, connectOptions);
    const done = runFinished(second, rec.id, 120_000);
    assert.equal(second.reattachAll(), 1);
    const f = await done;
    const r = f.record;
    assert.equal(r.id, rec.id);
    assert.equal(r.status, 'completed');
    assert.deepEqual(
      r.resumes?.map((x) => ({ from: x.from, by: x.by, fromStep: x.fromStep })),
      [{ from: 'interrupted', by: 'host', fromStep: saved }],
    );
    assert.equal(endStatesLine(r), 'interrupted → resumed → completed');
    assert.ok(runTooltipLines(r).includes('History: interrupted → resumed → completed'));
    assert.equal(r.lastStep, 40);
    // Nothing lost or repeated: the mirror is the host's file, and after `resumed` the steps go on at the checkpoint + 1.
    const hostText = readFileSync(join(runDir, 'events.jsonl'), 'utf8');
    assert.equal(readFileSync(join(second.localDirOf(rec.id), 'events.jsonl'), 'utf8'), hostText);
    assert.equal(readFileSync(join(second.localDirOf(rec.id), 'output.log'), 'utf8'), readFileSync(join(runDir, 'output.log'), 'utf8'));
    const all = eventsOf(hostText);
    const at = all.findIndex((e) => e.type === 'resumed');
    assert.equal(at, before.length, 'the resumed line follows the last line written before the restart');
    const stepsAfter = all.slice(at).flatMap((e) => (e.type === 'metrics' && e.loss !== undefined ? [e.step] : []));
    assert.deepEqual(
      stepsAfter,
      Array.from({ length: 40 - saved }, (_, i) => saved + 1 + i),
    );
    assert.equal(all.filter((e) => e.type === 'started').length, 2, 'one started per start of the runner, same run id');
    console.log(`boot resume: killed at step ${killedAt} (checkpoint ${saved}); from the boot hook to the run's end on the host ${recoveredS.toFixed(1)} s`);
    await second.dispose();
  },
);
