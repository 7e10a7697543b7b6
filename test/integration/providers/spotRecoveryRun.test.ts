// A spot run on EC2 with target.spot_recovery: cloud, end to end with the laptop closed. The cloud is the EC2
// EMULATOR (test/emulators/ec2.ts + ec2SpotRequests.ts, a test double with AWS's spot request lifecycle); the
// instance is a real loopback OpenSSH server booted with the host key from its user-data (what cloud-init
// does). The run is started through the RunManager (an own script that checkpoints every 5 steps,
// test/fixtures/own-scripts/checkpointing_train.py); once it has a checkpoint VS Code goes away, then EC2
// interrupts the instance: the network goes (sshd down), the instance is stopped, every process on it dies at
// once (SIGKILL, nothing written on the way out). Capacity returns: EC2 starts the same instance, whose disk
// (the sshd's HOME) is the one it had, and the boot hook runs as the runner's boot unit runs it
// (`python -m remote_finetune boot-resume`), with no client. Checked: the run finishes on the host by itself;
// VS Code opened again follows it to its end on the same instance and shows interrupted → resumed → completed;
// nothing was launched a second time; teardown cancels the spot request and terminates; nothing bills.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { Ec2Provider } from '../../../src/core/providers/ec2/instances';
import { endStatesLine } from '../../../src/core/runs/view/runSummary';
import type { ConnectOptions } from '../../../src/core/ssh/session';
import { parseEventLine } from '../../../src/core/telemetry/events';
import type { RunEvent } from '../../../src/core/telemetry/events';
import { Ec2Emulator } from '../../emulators/ec2';
import { runFinished, testRunManager, until } from '../../support/runHosts';
import { freePort, sshKeygen, startSshd } from '../../support/sshd';
import { G5_SPOT_OFFER } from '../../support/ec2SpotOffer';
import { isolatedConnectOptions } from '../../support/gcpOnSshd';
import { alive } from '../../support/leftovers';
import type { Sshd } from '../../support/sshd';

const REPO = resolve(__dirname, '../../..');
const STANDINS = join(REPO, 'test/support/standins');
const cleanup: Array<() => Promise<void> | void> = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

function eventsIn(path: string): RunEvent[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .flatMap((l) => {
      const p = parseEventLine(l);
      return p.ok ? [p.event] : [];
    });
}

function pidIn(path: string): number {
  return Number(readFileSync(path, 'utf8').trim());
}

test(
  'ec2 spot_recovery cloud, laptop closed: EC2 stops and restarts the same instance, the host resumes the run from its checkpoint, nothing relaunched, teardown cancels the request',
  { timeout: 300_000 },
  async () => {
    process.env.AWS_ACCESS_KEY_ID ??= 'AKIAEMULATOR000000';
    process.env.AWS_SECRET_ACCESS_KEY ??= 'emulator-secret';
    const port = await freePort();
    const emu = await new Ec2Emulator({ consistencyMs: 50 }).start();
    cleanup.push(() => emu.stop());
    const provider = new Ec2Provider({
      region: 'us-east-1',
      endpoint: emu.url,
      maxAttempts: 3,
      requestTimeoutMs: 3000,
      callerIp: async () => '198.51.100.4',
      sshPort: port,
      sshUser: userInfo().username,
      consistency: { baseMs: 10, maxMs: 100, windowMs: 3000 },
    });
    const dir = mkdtempSync(join(tmpdir(), 'rft-spotcloud-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    sshKeygen(join(dir, 'user_key'));
    const userPub = readFileSync(join(dir, 'user_key.pub'), 'utf8').trim();
    let prompts = 0;
    const connectOptions: ConnectOptions = {
      ...isolatedConnectOptions('rft-spotcloud-ssh-'),
      confirmHostKey: async () => {
        prompts++;
        return false;
      },
    };
    const storage = join(dir, 'storage');
    const manager = (): ReturnType<typeof testRunManager> =>
      testRunManager(storage, connectOptions, {
        providerFor: () => provider,
        instanceCheckMs: 300,
        ...(process.env.RFT_TEST_LOG ? { log: (l: string) => console.error(l) } : {}),
      });
    const ws = mkdtempSync(join(tmpdir(), 'rft-spotcloud-ws-'));
    cleanup.push(() => rmSync(ws, { recursive: true, force: true }));
    copyFileSync(join(REPO, 'test/fixtures/own-scripts/checkpointing_train.py'), join(ws, 'train.py'));
    const spec = {
      version: 1,
      name: 'spot-cloud',
      command: 'python3 train.py --steps 40 --sleep 0.15 --save-every 5',
      target: { provider: 'ec2', gpu: 'A10G', spot: true, spot_recovery: 'cloud' },
    };
    const offer = G5_SPOT_OFFER;

    // The instance boots: an sshd with the host key cloud-init would install from the user-data.
    let sshd: Sshd | undefined;
    const hostKey = join(dir, 'host_key');
    const booting = (async (): Promise<void> => {
      await until('the instance launched', () => emu.instances.size >= 1, 60_000);
      const inst = [...emu.instances.values()][0]!;
      const keys = (
        parse(Buffer.from((inst.request as Map<string, string>).get('UserData') ?? '', 'base64').toString('utf8')) as { ssh_keys: Record<string, string> }
      ).ssh_keys;
      writeFileSync(hostKey, keys.ed25519_private!, { mode: 0o600 });
      writeFileSync(`${hostKey}.pub`, `${keys.ed25519_public}\n`);
      sshd = await startSshd({ port, hostKeyPath: hostKey, authorizedKeys: [userPub], pathPrepend: [STANDINS] });
    })();
    const first = manager();
    const rec = await first.start({
      specPath: join(ws, 'finetune.yaml'),
      specText: JSON.stringify(spec),
      spec,
      name: 'spot-cloud',
      workspaceDir: ws,
      env: {},
      target: { kind: 'cloud', provider, offer, sshPublicKey: userPub, identityFile: join(dir, 'user_key'), sshTimeoutMs: 30_000 },
      gpu: 'A10G',
      teardown: { policy: 'terminate' },
    });
    await booting;
    const instanceId = first.store.get(rec.id)!.instanceId!;
    const raw = emu.instances.get(instanceId)!.request as Map<string, string>;
    assert.equal(raw.get('InstanceMarketOptions.SpotOptions.SpotInstanceType'), 'persistent', 'the spec reached RunInstances');
    const home = sshd!.home;
    const root = join(home, '.remote-finetune');
    const runDir = join(root, 'runs', rec.id);
    await until('a checkpoint at step 10 or later', () => eventsIn(join(runDir, 'events.jsonl')).some((e) => e.type === 'checkpoint' && e.step >= 10), 120_000);
    await first.dispose(); // VS Code closed

    // The interruption: the network goes, EC2 stops the instance, everything on it dies at once.
    const interruptedAt = Date.now();
    const keep = process.env.RFT_KEEP_SSHD;
    process.env.RFT_KEEP_SSHD = '1'; // the instance's disk (its HOME) outlives the stop
    const sshdDir = sshd!.dir;
    cleanup.push(() => rmSync(sshdDir, { recursive: true, force: true }));
    try {
      await sshd!.stop();
    } finally {
      if (keep === undefined) delete process.env.RFT_KEEP_SSHD;
      else process.env.RFT_KEEP_SSHD = keep;
    }
    emu.reclaim(instanceId);
    const groups = [pidIn(join(runDir, 'pid')), pidIn(join(runDir, 'train.pgid'))];
    const pids = [...groups, pidIn(join(runDir, 'runner.pid'))];
    for (const g of groups) {
      try {
        process.kill(-g, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    if (existsSync(join(root, 'watchdog.pid')) && alive(pidIn(join(root, 'watchdog.pid')))) process.kill(pidIn(join(root, 'watchdog.pid')), 'SIGKILL');
    await until('every process of the run gone', () => !pids.some(alive), 10_000);
    const before = eventsIn(join(runDir, 'events.jsonl'));
    const saved = Math.max(...before.flatMap((e) => (e.type === 'checkpoint' ? [e.step] : [])));
    assert.equal((await provider.describe(instanceId))?.state, 'stopped');

    // Capacity returns: EC2 starts the same instance; its boot unit resumes the run. No client anywhere.
    await new Promise((r) => setTimeout(r, 500));
    // EC2 gives a restarted instance a new public address (no Elastic IP here).
    assert.equal(emu.capacityReturns(instanceId, '127.0.0.3'), true);
    sshd = await startSshd({ port, hostKeyPath: hostKey, authorizedKeys: [userPub], pathPrepend: [STANDINS], env: { HOME: home }, listenAddress: '127.0.0.3' });
    cleanup.push(() => sshd?.stop());
    const m = /PYTHONPATH=(?:'([^']+)'|(\S+))/.exec(readFileSync(join(runDir, 'command.sh'), 'utf8'));
    const runnerDir = m?.[1] ?? m?.[2];
    assert.ok(runnerDir, 'the runner copy named in command.sh');
    const hook = spawnSync('python3', ['-m', 'remote_finetune', 'boot-resume', '--root', root], {
      cwd: '/',
      env: { HOME: home, PATH: [STANDINS, '/usr/local/bin', '/usr/bin', '/bin'].join(':'), PYTHONPATH: runnerDir, RFT_POWEROFF_CMD: 'true' },
      timeout: 60_000,
    });
    assert.equal(hook.status, 0, hook.stdout.toString() + hook.stderr.toString());
    await until('the resumed run to end on the host', () => existsSync(join(runDir, 'exit_code')), 120_000);
    const recoveredS = (Date.now() - interruptedAt) / 1000;

    // VS Code again: it follows the same instance to the run's end, then tears it down.
    const second = manager();
    cleanup.push(() => second.dispose());
    const done = runFinished(second, rec.id, 120_000);
    assert.equal(second.reattachAll(), 1);
    const f = await done;
    assert.equal(f.record.status, 'completed');
    assert.equal(f.record.instanceId, instanceId, 'the same instance, not a replacement');
    assert.equal(f.record.host, '127.0.0.3', 'followed at the address the instance came back with');
    assert.equal(endStatesLine(f.record), 'interrupted → resumed → completed');
    assert.equal(f.record.lastStep, 40);
    assert.deepEqual(
      f.record.resumes?.map((x) => ({ by: x.by, fromStep: x.fromStep })),
      [{ by: 'host', fromStep: saved }],
    );
    assert.equal(emu.calls.filter((c) => c === 'RunInstances').length, 1, 'the extension launched no replacement');
    await until('teardown done', () => second.store.get(rec.id)?.finishedAction === 'terminated', 30_000);
    const cancelAt = emu.calls.indexOf('CancelSpotInstanceRequests');
    assert.ok(cancelAt >= 0 && cancelAt < emu.calls.lastIndexOf('TerminateInstances'), 'the spot request cancelled before the terminate');
    assert.deepEqual(
      emu.billing().map((i) => i.id),
      [],
      'nothing left billing, nothing relaunched by the request',
    );
    assert.equal(prompts, 0, 'the host key came from the user-data, the same after the restart');
    console.log(
      `# spot recovery by EC2 with VS Code closed (emulated): interruption to the run completed on the host ${recoveredS.toFixed(1)} s (0.5 s of it waiting for capacity), resumed from step ${saved}`,
    );
  },
);
