// EC2 provider through the real @aws-sdk/client-ec2 (endpoint override, credentials from the default
// chain's environment step) against the EC2 Query API emulator (test double for the cloud), continuing
// into a real loopback OpenSSH server as the instance.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Ec2Provider } from '../../../src/core/providers/ec2';
import { ProviderError, RUN_ID_TAG } from '../../../src/core/providers/types';
import { Ec2Emulator } from '../../emulators/ec2';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';

let sshd: Sshd;
let pub: string;

before(async () => {
  // The SDK's default credential chain reads these first; fake values, the emulator checks only the signature header's presence.
  process.env.AWS_ACCESS_KEY_ID = 'AKIAEMULATOR000000';
  process.env.AWS_SECRET_ACCESS_KEY = 'emulator-secret';
  delete process.env.AWS_PROFILE;
  sshd = await startSshd();
  pub = readFileSync(`${sshd.userKeyPath}.pub`, 'utf8');
});
after(async () => {
  await sshd.stop();
});

async function setup(): Promise<{ emu: Ec2Emulator; provider: Ec2Provider }> {
  const emu = await new Ec2Emulator().start();
  const provider = new Ec2Provider({ region: 'us-east-1', endpoint: emu.url, maxAttempts: 3, requestTimeoutMs: 2000, callerIp: async () => '203.0.113.7', sshPort: sshd.port });
  return { emu, provider };
}

test('ec2: offers list the GPU table with on-demand prices and the latest spot price of the cheapest zone', async () => {
  const { emu, provider } = await setup();
  try {
    const offers = await provider.listOffers({ gpu: 'T4' });
    const od = offers.find((o) => o.instanceType === 'g4dn.xlarge' && !o.spot);
    assert.deepEqual([od?.gpu, od?.gpuCount, od?.vramGiB, od?.pricePerHour, od?.capacity], ['T4', 1, 16, 0.526, 'unknown']);
    assert.equal(offers.find((o) => o.instanceType === 'g4dn.2xlarge' && !o.spot)?.capacity, 'unavailable', 'not offered in the region');
    const spot = offers.find((o) => o.instanceType === 'g4dn.xlarge' && o.spot);
    assert.equal(spot?.zone, 'us-east-1b');
    assert.equal(spot?.pricePerHour, 0.22, 'latest quote per zone, then the cheapest zone');
    const h100 = await provider.listOffers({ gpu: 'H100', spot: false });
    assert.deepEqual(h100.map((o) => [o.instanceType, o.gpuCount, o.pricePerHour]), [['p5.48xlarge', 8, 55.04]]);
    assert.equal(emu.unsigned, 0, 'every request SigV4-signed by the SDK');
  } finally {
    await emu.stop();
  }
});

test('ec2: launch uses the newest DLAMI, an imported key pair, port 22 open to the caller only, sized root disk, tags, terminate-on-shutdown; SSH answers', async () => {
  const { emu, provider } = await setup();
  try {
    const inst = await provider.launch({ runId: 'rft-20261121-150000-ec21', instanceType: 'g5.xlarge', region: 'us-east-1', spot: true, sshPublicKey: pub, diskGiB: 300 });
    const raw = emu.instances.get(inst.id)!;
    const r = raw.request as Map<string, string>;
    assert.equal(r.get('ImageId'), 'ami-0new');
    assert.equal(r.get('InstanceInitiatedShutdownBehavior'), 'terminate');
    assert.equal(r.get('BlockDeviceMapping.1.Ebs.VolumeSize'), '300');
    assert.equal(r.get('BlockDeviceMapping.1.Ebs.DeleteOnTermination'), 'true');
    assert.equal(r.get('InstanceMarketOptions.MarketType'), 'spot');
    assert.equal(r.get('InstanceMarketOptions.SpotOptions.SpotInstanceType'), 'one-time');
    assert.equal(r.get('InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior'), 'terminate');
    assert.equal(raw.tags[RUN_ID_TAG], 'rft-20261121-150000-ec21');
    assert.equal(raw.tags.Name, 'rft-20261121-150000-ec21');
    assert.equal(emu.keyPairs.length, 1);
    assert.equal(emu.keyPairs[0]!.material, pub.trim());
    assert.deepEqual(emu.ingressOf(r.get('SecurityGroupId.1')!), [{ proto: 'tcp', from: 22, to: 22, cidr: '203.0.113.7/32' }]);
    // Same run again: same ClientToken, same instance; same key and group reused.
    const again = await provider.launch({ runId: 'rft-20261121-150000-ec21', instanceType: 'g5.xlarge', region: 'us-east-1', spot: true, sshPublicKey: pub });
    assert.equal(again.id, inst.id);
    assert.equal(emu.instances.size, 1);
    assert.equal(emu.keyPairs.length, 1);
    assert.equal(emu.groups.length, 1);
    const ready = await provider.waitForSsh(inst.id, { timeoutMs: 5000, intervalMs: 20 });
    assert.equal(ready.publicIp, '127.0.0.1');
    assert.equal(ready.spot, true);
    assert.deepEqual((await provider.listOwned()).map((i) => i.id), [inst.id]);
    await provider.terminate(inst.id);
    assert.equal(emu.billing().length, 0);
    assert.deepEqual(await provider.listOwned(), []);
  } finally {
    await emu.stop();
  }
});

test('ec2: a spot reclaim is read as interrupted; capacity and throttling map to typed errors', async () => {
  const { emu, provider } = await setup();
  try {
    const inst = await provider.launch({ runId: 'spot-1', instanceType: 'g4dn.xlarge', region: 'us-east-1', spot: true, sshPublicKey: pub });
    emu.reclaim(inst.id);
    const d = await provider.describe(inst.id);
    assert.equal(d?.state, 'terminated');
    assert.equal(d?.interrupted, true);
    emu.inject('RunInstances', { kind: 'capacity' }, 10);
    await assert.rejects(provider.launch({ runId: 'cap-1', instanceType: 'p4d.24xlarge', region: 'us-east-1', spot: false, sshPublicKey: pub }), (e: unknown) => e instanceof ProviderError && e.code === 'capacity');
    emu.faults.length = 0;
    emu.inject('DescribeInstances', { kind: 'status', status: 503 }, 1);
    assert.equal((await provider.describe(inst.id))?.id, inst.id, 'the SDK retries one throttle');
    emu.inject('DescribeInstances', { kind: 'status', status: 503 }, 10);
    await assert.rejects(provider.describe(inst.id), (e: unknown) => e instanceof ProviderError && e.code === 'rate-limited');
    emu.faults.length = 0;
    assert.equal(await provider.describe('i-0000000000000000'), undefined);
  } finally {
    await emu.stop();
  }
});

test('ec2: a reused security group is verified: a half-made one gets its SSH rule, one opened wider is refused', async () => {
  const { emu, provider } = await setup();
  try {
    // Eventual consistency left a group without its rule (CreateSecurityGroup succeeded, Authorize did not).
    emu.groups.push({ id: 'sg-halfmade', name: 'remote-finetune-ssh-203-0-113-7', description: 'Remote Fine-Tune: SSH from 203.0.113.7 only', cidrs: [] });
    const inst = await provider.launch({ runId: 'rft-20261121-150000-sg01', instanceType: 'g5.xlarge', region: 'us-east-1', spot: false, sshPublicKey: pub });
    assert.equal((emu.instances.get(inst.id)!.request as Map<string, string>).get('SecurityGroupId.1'), 'sg-halfmade');
    assert.deepEqual(emu.ingressOf('sg-halfmade'), [{ proto: 'tcp', from: 22, to: 22, cidr: '203.0.113.7/32' }], 'the missing rule was added before launch');
    // Someone opened the group to the world: the launch is refused, nothing is started in it.
    emu.groups.find((g) => g.id === 'sg-halfmade')!.cidrs.push({ proto: 'tcp', from: 0, to: 65535, cidr: '0.0.0.0/0' });
    const before = emu.instances.size;
    await assert.rejects(provider.launch({ runId: 'rft-20261121-150000-sg02', instanceType: 'g5.xlarge', region: 'us-east-1', spot: false, sshPublicKey: pub }),
      (e: unknown) => e instanceof ProviderError && /opens SSH to 0\.0\.0\.0\/0/.test(e.message));
    assert.equal(emu.instances.size, before);
    // IMDSv2 only and an encrypted root volume on every launch.
    const r = emu.instances.get(inst.id)!.request as Map<string, string>;
    assert.equal(r.get('MetadataOptions.HttpTokens'), 'required');
    assert.equal(r.get('BlockDeviceMapping.1.Ebs.Encrypted'), 'true');
  } finally {
    await emu.stop();
  }
});
