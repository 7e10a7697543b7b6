// EC2 recovering a spot run by itself (target.spot_recovery: cloud), through the real @aws-sdk/client-ec2
// against the EC2 EMULATOR (test/emulators/ec2.ts + ec2SpotRequests.ts, a test double of EC2's Query API with
// the spot request lifecycle AWS documents). The instance is a real loopback OpenSSH server whose HOME stands
// for the instance's root volume: the interruption takes the server down (the instance is stopped), and when
// capacity returns the same instance starts again with the same disk (a server on the same port and host key,
// the same HOME). Checked: the RunInstances request shape (persistent, stop), the request states (active
// fulfilled → marked-for-stop → disabled instance-stopped-no-capacity → active fulfilled), that the extension
// sees the same instance alive and launches no replacement, how long the recovery took, and that teardown and
// the orphan sweep cancel the request before terminating (else EC2 launches a new instance for it).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeSpotInstanceRequestsCommand, EC2Client } from '@aws-sdk/client-ec2';
import type { SpotInstanceRequest } from '@aws-sdk/client-ec2';
import { Ec2Provider } from '../../../src/core/providers/ec2/instances';
import type { LaunchRequest } from '../../../src/core/providers/provider';
import { RUN_ID_TAG } from '../../../src/core/providers/provider';
import { Ledger } from '../../../src/core/runs/store/ledger';
import { checkInstance, reconcile, terminateOrphans } from '../../../src/core/runs/lifecycle/teardown';
import { decideRelaunch, relaunchPolicyOf } from '../../../src/core/runs/lifecycle/runAttempts';
import { Ec2Emulator } from '../../emulators/ec2';
import { g5SpotLaunch } from '../../support/ec2SpotOffer';
import { opensshArgs, startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { typedSpec } from '../../support/typedSpec';

const SPEC = { target: { provider: 'ec2', gpu: 'A10G', spot: true, spot_recovery: 'cloud', region: 'us-east-1' } } as const;

let volume: string;
let sshd: Sshd | undefined;
let knownHosts: string;

async function bootInstance(port?: number, hostKeyPath?: string): Promise<Sshd> {
  return startSshd({ env: { HOME: volume }, ...(port ? { port } : {}), ...(hostKeyPath ? { hostKeyPath } : {}) });
}

before(async () => {
  process.env.AWS_ACCESS_KEY_ID = 'AKIAEMULATOR000000';
  process.env.AWS_SECRET_ACCESS_KEY = 'emulator-secret';
  delete process.env.AWS_PROFILE;
  volume = mkdtempSync(join(tmpdir(), 'rft-root-volume-'));
  sshd = await bootInstance();
  knownHosts = `${volume}-known_hosts`;
  writeFileSync(knownHosts, `${sshd.knownHostsLine}\n`);
});
after(async () => {
  await sshd?.stop();
  rmSync(volume, { recursive: true, force: true });
  rmSync(`${volume}-known_hosts`, { force: true });
  rmSync(`${volume}-host_key`, { force: true });
  rmSync(`${volume}-host_key.pub`, { force: true });
});

async function setup(): Promise<{ emu: Ec2Emulator; provider: Ec2Provider; sdk: EC2Client; fresh: () => Ec2Provider }> {
  const emu = await new Ec2Emulator({ consistencyMs: 50 }).start();
  const fresh = (): Ec2Provider =>
    new Ec2Provider({
      region: 'us-east-1',
      endpoint: emu.url,
      maxAttempts: 3,
      requestTimeoutMs: 2000,
      callerIp: async () => '203.0.113.7',
      sshPort: sshd!.port,
      consistency: { baseMs: 20, maxMs: 200, windowMs: 2000 },
    });
  const sdk = new EC2Client({ region: 'us-east-1', endpoint: emu.url, credentials: { accessKeyId: 'AKIAEMULATOR000000', secretAccessKey: 'emulator-secret' } });
  return { emu, provider: fresh(), sdk, fresh };
}

function requestFor(runId: string): LaunchRequest {
  return g5SpotLaunch(runId, SPEC.target, readFileSync(`${sshd!.userKeyPath}.pub`, 'utf8'));
}

async function spotRequests(sdk: EC2Client, instanceId: string): Promise<SpotInstanceRequest[]> {
  const res = await sdk.send(new DescribeSpotInstanceRequestsCommand({ Filters: [{ Name: 'instance-id', Values: [instanceId] }] }));
  return res.SpotInstanceRequests ?? [];
}

function ssh(cmd: string): string {
  return execFileSync('ssh', [...opensshArgs(sshd!, knownHosts), `${sshd!.user}@127.0.0.1`, cmd], { encoding: 'utf8', timeout: 15_000 });
}

test('ec2 spot_recovery cloud: a persistent request that stops; EC2 starts the same instance with its disk when capacity returns; no replacement from the extension', async () => {
  const { emu, provider, sdk } = await setup();
  const ledger = new Ledger(join(mkdtempSync(join(tmpdir(), 'rft-ledger-')), 'ledger.json'));
  try {
    const req = requestFor('rft-20261127-211500-sr01');
    assert.equal(req.spotRecovery, 'cloud', 'the spec reaches the launch');
    const inst = await provider.launch(req);
    const r = emu.instances.get(inst.id)!.request as Map<string, string>;
    assert.equal(r.get('InstanceMarketOptions.MarketType'), 'spot');
    assert.equal(r.get('InstanceMarketOptions.SpotOptions.SpotInstanceType'), 'persistent');
    assert.equal(r.get('InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior'), 'stop');
    assert.equal(
      r.get('InstanceInitiatedShutdownBehavior'),
      'stop',
      'a guest power-off under a persistent request must not terminate (the request would relaunch)',
    );
    assert.equal(r.get('TagSpecification.3.ResourceType'), 'spot-instances-request');
    await provider.waitForSsh(inst.id, { timeoutMs: 5000, intervalMs: 20 });
    let [sr] = await spotRequests(sdk, inst.id);
    assert.deepEqual([sr?.Type, sr?.State, sr?.Status?.Code, sr?.InstanceInterruptionBehavior], ['persistent', 'active', 'fulfilled', 'stop']);
    assert.equal(sr?.Tags?.find((t) => t.Key === RUN_ID_TAG)?.Value, 'rft-20261127-211500-sr01');
    ssh('mkdir -p outputs/checkpoints/checkpoint-40 && echo 40 > outputs/checkpoints/checkpoint-40/step');

    // The interruption: EC2 marks the request, stops the instance; the machine is down.
    const interruptedAt = Date.now();
    emu.reclaim(inst.id);
    const port = sshd!.port;
    const hostKeyCopy = `${volume}-host_key`;
    writeFileSync(hostKeyCopy, readFileSync(sshd!.hostKeyPath), { mode: 0o600 });
    writeFileSync(`${hostKeyCopy}.pub`, readFileSync(`${sshd!.hostKeyPath}.pub`));
    await sshd!.stop();
    sshd = undefined;
    const stopped = await provider.describe(inst.id);
    assert.deepEqual([stopped?.state, stopped?.interrupted], ['stopped', true]);
    [sr] = await spotRequests(sdk, inst.id);
    assert.deepEqual([sr?.State, sr?.Status?.Code], ['disabled', 'instance-stopped-no-capacity']);

    // The extension's look at the instance: alive (stopped, not gone), and no replacement is decided.
    const look = await checkInstance(provider, ledger, req.runId, inst.id);
    assert.deepEqual(look, { alive: true, interrupted: false });
    const decision = decideRelaunch('reclaimed', [], relaunchPolicyOf(typedSpec(SPEC)), false);
    assert.equal(decision.relaunch, false);
    assert.match(decision.relaunch ? '' : decision.why, /EC2 restarts the same instance itself/);

    // Capacity returns: the same instance id starts again, with the same disk.
    await new Promise((res) => setTimeout(res, 300));
    assert.equal(emu.capacityReturns(inst.id), true);
    sshd = await bootInstance(port, hostKeyCopy);
    const back = await provider.waitForSsh(inst.id, { timeoutMs: 5000, intervalMs: 20 });
    const recoveryMs = Date.now() - interruptedAt;
    assert.equal(back.id, inst.id);
    assert.equal(back.state, 'running');
    assert.equal(ssh('cat outputs/checkpoints/checkpoint-40/step').trim(), '40', 'the root volume came back with the instance');
    [sr] = await spotRequests(sdk, inst.id);
    assert.deepEqual([sr?.State, sr?.Status?.Code], ['active', 'fulfilled']);
    assert.equal(emu.calls.filter((c) => c === 'RunInstances').length, 1, 'nothing launched a second instance');
    console.log(`# spot recovery by EC2 (emulated): interruption to SSH answering on the same instance ${recoveryMs} ms (300 ms of it waiting for capacity)`);

    // Teardown: the request is cancelled before the instance is terminated, so EC2 launches nothing in its place.
    await provider.terminate(inst.id);
    const cancelAt = emu.calls.indexOf('CancelSpotInstanceRequests');
    assert.ok(cancelAt >= 0 && cancelAt < emu.calls.lastIndexOf('TerminateInstances'), emu.calls.join(' '));
    [sr] = await spotRequests(sdk, inst.id);
    assert.equal(sr?.State, 'cancelled');
    assert.deepEqual(
      emu.billing().map((i) => i.id),
      [],
      'no instance left: none relaunched by the request',
    );
  } finally {
    sdk.destroy();
    await emu.stop();
  }
});

test('ec2 spot_recovery cloud: the orphan sweep (a provider that never saw the launch) cancels the request of a stopped instance before terminating it', async () => {
  const { emu, provider, sdk, fresh } = await setup();
  const ledger = new Ledger(join(mkdtempSync(join(tmpdir(), 'rft-ledger-')), 'ledger.json'));
  try {
    const req = requestFor('rft-20261127-211500-sr02');
    await ledger.update(req.runId, { provider: 'ec2', region: 'us-east-1', instanceType: 'g5.xlarge', spot: true, state: 'launching', holderPid: 999_999_999 });
    const inst = await provider.launch(req);
    await provider.waitForSsh(inst.id, { timeoutMs: 5000, intervalMs: 20 });
    // VS Code died; later EC2 interrupted the instance (stopped, its request waiting for capacity).
    emu.reclaim(inst.id);
    const after = fresh();
    const rec = await reconcile([after], ledger);
    assert.deepEqual(
      rec.orphans.map((o) => [o.instance.id, o.instance.state]),
      [[inst.id, 'stopped']],
    );
    assert.equal(await terminateOrphans([after], ledger, rec.orphans), 1);
    const [sr] = await spotRequests(sdk, inst.id);
    assert.equal(sr?.State, 'cancelled');
    assert.deepEqual(
      emu.billing().map((i) => i.id),
      [],
      'the sweep left nothing: no instance relaunched by the request',
    );
    // A terminate by id alone, from yet another provider (teardown after a restart), finds the request too.
    const req3 = requestFor('rft-20261127-211500-sr03');
    const inst3 = await provider.launch(req3);
    await provider.waitForSsh(inst3.id, { timeoutMs: 5000, intervalMs: 20 });
    await fresh().terminate(inst3.id);
    assert.equal((await spotRequests(sdk, inst3.id))[0]?.State, 'cancelled');
    assert.deepEqual(
      emu.billing().map((i) => i.id),
      [],
    );
  } finally {
    sdk.destroy();
    await emu.stop();
  }
});

test('ec2 spot_recovery cloud: the idle watchdog powering the guest off stops it (request disabled by the user), nothing relaunched; extension mode stays one-time', async () => {
  const { emu, provider, sdk } = await setup();
  try {
    const inst = await provider.launch(requestFor('rft-20261127-211500-sr04'));
    await provider.waitForSsh(inst.id, { timeoutMs: 5000, intervalMs: 20 });
    emu.guestPowerOff(inst.id);
    assert.equal((await provider.describe(inst.id))?.state, 'stopped');
    const [sr] = await spotRequests(sdk, inst.id);
    assert.deepEqual([sr?.State, sr?.Status?.Code], ['disabled', 'instance-stopped-by-user']);
    assert.equal(emu.instances.size, 1, 'no second instance');
    await provider.terminate(inst.id);
    assert.deepEqual(emu.billing(), []);
    // The default: a one-time request, terminated on interruption, relaunched by the extension.
    const plain = await provider.launch({ ...requestFor('rft-20261127-211500-sr05'), spotRecovery: 'extension' });
    const r = emu.instances.get(plain.id)!.request as Map<string, string>;
    assert.deepEqual(
      [
        r.get('InstanceMarketOptions.SpotOptions.SpotInstanceType'),
        r.get('InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior'),
        r.get('InstanceInitiatedShutdownBehavior'),
      ],
      ['one-time', 'terminate', 'terminate'],
    );
    await provider.terminate(plain.id);
    assert.deepEqual(emu.billing(), []);
  } finally {
    sdk.destroy();
    await emu.stop();
  }
});
