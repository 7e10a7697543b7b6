// EC2 provider through the real @aws-sdk/client-ec2 (endpoint override, credentials from the default
// chain's environment step) against the EC2 Query API emulator (test double for the cloud), continuing
// into a real loopback OpenSSH server as the instance.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Ec2Provider } from '../../../src/core/providers/ec2/instances';
import { ProviderError, RUN_ID_TAG } from '../../../src/core/providers/provider';
import { AMI, Ec2Emulator } from '../../emulators/ec2';
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

async function setup(consistencyMs = 150, windowMs = 5000): Promise<{ emu: Ec2Emulator; provider: Ec2Provider }> {
  const emu = await new Ec2Emulator({ consistencyMs }).start();
  const provider = new Ec2Provider({
    region: 'us-east-1',
    endpoint: emu.url,
    maxAttempts: 3,
    requestTimeoutMs: 2000,
    callerIp: async () => '203.0.113.7',
    sshPort: sshd.port,
    consistency: { baseMs: 20, maxMs: 200, windowMs },
  });
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
    assert.deepEqual(
      h100.map((o) => [o.instanceType, o.gpuCount, o.pricePerHour]),
      [['p5.48xlarge', 8, 55.04]],
    );
    assert.equal(emu.unsigned, 0, 'every request SigV4-signed by the SDK');
  } finally {
    await emu.stop();
  }
});

test('ec2: launch uses the newest DLAMI, an imported key pair, port 22 open to the caller only, sized root disk, tags, terminate-on-shutdown; SSH answers', async () => {
  const { emu, provider } = await setup();
  try {
    const inst = await provider.launch({
      runId: 'rft-20261121-150000-ec21',
      instanceType: 'g5.xlarge',
      region: 'us-east-1',
      spot: true,
      sshPublicKey: pub,
      diskGiB: 300,
    });
    const raw = emu.instances.get(inst.id)!;
    const r = raw.request as Map<string, string>;
    assert.equal(r.get('ImageId'), AMI.pt27, 'the DLAMI its SSM parameter names');
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
    // Same run, same request again: same ClientToken, same instance; same key and group reused.
    const again = await provider.launch({
      runId: 'rft-20261121-150000-ec21',
      instanceType: 'g5.xlarge',
      region: 'us-east-1',
      spot: true,
      sshPublicKey: pub,
      diskGiB: 300,
    });
    assert.equal(again.id, inst.id);
    assert.equal(emu.instances.size, 1);
    assert.equal(emu.keyPairs.length, 1);
    assert.equal(emu.groups.length, 1);
    const ready = await provider.waitForSsh(inst.id, { timeoutMs: 5000, intervalMs: 20 });
    assert.equal(ready.publicIp, '127.0.0.1');
    assert.equal(ready.spot, true);
    assert.deepEqual(
      (await provider.listOwned()).map((i) => i.id),
      [inst.id],
    );
    await provider.terminate(inst.id);
    assert.equal(emu.billing().length, 0);
    assert.deepEqual(await provider.listOwned(), []);
  } finally {
    await emu.stop();
  }
});

test('ec2: a spot reclaim is read as interrupted; capacity, spot quota and throttling map to typed errors', async () => {
  const { emu, provider } = await setup();
  try {
    const inst = await provider.launch({ runId: 'spot-1', instanceType: 'g4dn.xlarge', region: 'us-east-1', spot: true, sshPublicKey: pub });
    emu.reclaim(inst.id);
    const d = await provider.describe(inst.id);
    assert.equal(d?.state, 'terminated');
    assert.equal(d?.interrupted, true);
    emu.inject('RunInstances', { kind: 'capacity' }, 10);
    await assert.rejects(
      provider.launch({ runId: 'cap-1', instanceType: 'p4d.24xlarge', region: 'us-east-1', spot: false, sshPublicKey: pub }),
      (e: unknown) => e instanceof ProviderError && e.code === 'capacity',
    );
    emu.faults.length = 0;
    // A spot request over the account's spot limit is a quota to raise, not capacity to wait for
    // (EC2 error codes: "You've reached the limit on the number of Spot Instances that you can launch").
    emu.inject('RunInstances', Ec2Emulator.errorFault(400, 'MaxSpotInstanceCountExceeded', 'Max spot instance count exceeded'), 10);
    await assert.rejects(
      provider.launch({ runId: 'quota-1', instanceType: 'g5.xlarge', region: 'us-east-1', spot: true, sshPublicKey: pub }),
      (e: unknown) => e instanceof ProviderError && e.code === 'quota' && /MaxSpotInstanceCountExceeded/.test(e.message),
    );
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

test('ec2: a reused security group is verified: a half-made one gets its SSH rule, one opened wider is narrowed back before use', async () => {
  const { emu, provider } = await setup();
  try {
    // Eventual consistency left a group without its rule (CreateSecurityGroup succeeded, Authorize did not).
    emu.groups.push({
      id: 'sg-halfmade',
      name: 'remote-finetune-ssh-203-0-113-7',
      description: 'Remote Fine-Tune: SSH from 203.0.113.7 only',
      cidrs: [],
      visibleAt: 0,
      tags: {},
    });
    const inst = await provider.launch({ runId: 'rft-20261121-150000-sg01', instanceType: 'g5.xlarge', region: 'us-east-1', spot: false, sshPublicKey: pub });
    assert.equal((emu.instances.get(inst.id)!.request as Map<string, string>).get('SecurityGroupId.1'), 'sg-halfmade');
    assert.deepEqual(emu.ingressOf('sg-halfmade'), [{ proto: 'tcp', from: 22, to: 22, cidr: '203.0.113.7/32' }], 'the missing rule was added before launch');
    // Someone opened the group to the world: the extra rule is revoked before an instance uses the group.
    emu.groups.find((g) => g.id === 'sg-halfmade')!.cidrs.push({ proto: 'tcp', from: 0, to: 65535, cidr: '0.0.0.0/0' });
    await provider.launch({ runId: 'rft-20261121-150000-sg02', instanceType: 'g5.xlarge', region: 'us-east-1', spot: false, sshPublicKey: pub });
    assert.deepEqual(emu.ingressOf('sg-halfmade'), [{ proto: 'tcp', from: 22, to: 22, cidr: '203.0.113.7/32' }], 'SSH open to the caller only again');
    // IMDSv2 only and an encrypted root volume on every launch.
    const r = emu.instances.get(inst.id)!.request as Map<string, string>;
    assert.equal(r.get('MetadataOptions.HttpTokens'), 'required');
    assert.equal(r.get('BlockDeviceMapping.1.Ebs.Encrypted'), 'true');
  } finally {
    await emu.stop();
  }
});

// AWS, "Eventual consistency in the Amazon EC2 API" (docs.aws.amazon.com/ec2/latest/devguide/eventual-consistency.html):
// after RunInstances, DescribeInstances and TerminateInstances may answer InvalidInstanceID.NotFound ("doesn't
// mean the instance does not exist"; after TerminateInstances it "doesn't mean the instance was or will be
// terminated"); after CreateSecurityGroup the next call may answer InvalidGroup.NotFound. The emulator keeps
// each new resource invisible for consistencyMs; these fail with a client that takes NotFound at its word.
test('ec2 consistency: key pair, group and instance NotFound right after creation are waited out; the launch completes with port 22 open', async () => {
  const { emu, provider } = await setup(400);
  try {
    const inst = await provider.launch({ runId: 'rft-20261121-150000-cons', instanceType: 'g5.xlarge', region: 'us-east-1', spot: false, sshPublicKey: pub });
    const seen = await provider.describe(inst.id);
    assert.equal(seen?.id, inst.id, 'not "disappeared"');
    assert.ok(emu.lagAnswers.includes('InvalidGroup.NotFound'), `lag answers ${emu.lagAnswers.join(',')}`);
    assert.ok(emu.lagAnswers.includes('InvalidInstanceID.NotFound'));
    const r = emu.instances.get(inst.id)!.request as Map<string, string>;
    assert.deepEqual(emu.ingressOf(r.get('SecurityGroupId.1')!), [{ proto: 'tcp', from: 22, to: 22, cidr: '203.0.113.7/32' }]);
    const ready = await provider.waitForSsh(inst.id, { timeoutMs: 5000, intervalMs: 20 });
    assert.equal(ready.state, 'running');
    await provider.terminate(inst.id);
    assert.equal(emu.billing().length, 0);
  } finally {
    await emu.stop();
  }
});

test('ec2 consistency: RunInstances right after ImportKeyPair answers InvalidKeyPair.NotFound; the launch retries with the same ClientToken', async () => {
  const { emu, provider } = await setup(300);
  try {
    // The group exists already and is visible: only the key pair is new.
    emu.groups.push({
      id: 'sg-0ready',
      name: 'remote-finetune-ssh-203-0-113-7',
      description: 'x',
      cidrs: [{ proto: 'tcp', from: 22, to: 22, cidr: '203.0.113.7/32' }],
      visibleAt: 0,
      tags: {},
    });
    const inst = await provider.launch({ runId: 'rft-20261121-150000-keyp', instanceType: 'g5.xlarge', region: 'us-east-1', spot: false, sshPublicKey: pub });
    assert.ok(emu.lagAnswers.includes('InvalidKeyPair.NotFound'), `lag answers ${emu.lagAnswers.join(',')}`);
    assert.equal(emu.instances.size, 1, 'one instance, whatever the retries');
    await provider.terminate(inst.id);
  } finally {
    await emu.stop();
  }
});

test('ec2 consistency: terminate right after launch is not done until EC2 confirms; the instance stops billing', async () => {
  const { emu, provider } = await setup(400);
  try {
    emu.consistencyMs = 0;
    await provider.launch({ runId: 'warm', instanceType: 'g5.xlarge', region: 'us-east-1', spot: false, sshPublicKey: pub });
    emu.consistencyMs = 400;
    const inst = await provider.launch({ runId: 'rft-20261121-150000-term', instanceType: 'g5.xlarge', region: 'us-east-1', spot: false, sshPublicKey: pub });
    const before = emu.lagAnswers.length;
    await provider.terminate(inst.id);
    assert.ok(emu.lagAnswers.slice(before).includes('InvalidInstanceID.NotFound'), 'TerminateInstances answered NotFound at first');
    assert.ok(['terminating', 'terminated'].includes(emu.instances.get(inst.id)!.state), `state ${emu.instances.get(inst.id)!.state}`);
    assert.deepEqual(
      emu.billing().map((i) => i.tags[RUN_ID_TAG]),
      ['warm'],
    );
  } finally {
    await emu.stop();
  }
});

test('ec2 consistency: a NotFound that outlasts the consistency window is an error, never "terminated"', async () => {
  const { emu, provider } = await setup(10_000, 300);
  try {
    emu.consistencyMs = 0;
    await provider.launch({ runId: 'warm2', instanceType: 'g5.xlarge', region: 'us-east-1', spot: false, sshPublicKey: pub });
    emu.consistencyMs = 10_000;
    const inst = await provider.launch({ runId: 'rft-20261121-150000-long', instanceType: 'g5.xlarge', region: 'us-east-1', spot: false, sshPublicKey: pub });
    await assert.rejects(provider.terminate(inst.id), (e: unknown) => e instanceof ProviderError && e.code === 'timeout' && /may be running/.test(e.message));
    assert.equal(emu.billing().filter((i) => i.id === inst.id).length, 1, 'still billing: the caller must not record it as terminated');
    // An id this provider never launched, unknown to EC2: gone (EC2 forgets terminated instances after about an hour).
    await provider.terminate('i-0123456789abcdef0');
  } finally {
    await emu.stop();
  }
});

test('ec2: a reused security group is checked: a group left without the port 22 rule gets it, and wider rules are revoked', async () => {
  const { emu, provider } = await setup(0);
  try {
    // A first launch cut short between CreateSecurityGroup and AuthorizeSecurityGroupIngress.
    emu.inject('AuthorizeSecurityGroupIngress', { kind: 'status', status: 400 }, 10);
    await assert.rejects(provider.launch({ runId: 'sg-1', instanceType: 'g5.xlarge', region: 'us-east-1', spot: false, sshPublicKey: pub }));
    emu.faults.length = 0;
    assert.equal(emu.groups.length, 1);
    assert.equal(emu.groups[0]!.cidrs.length, 0, 'left with no rule');
    // And someone opened it to the world meanwhile.
    emu.groups[0]!.cidrs.push({ proto: 'tcp', from: 22, to: 22, cidr: '0.0.0.0/0' }, { proto: 'tcp', from: 8888, to: 8888, cidr: '203.0.113.7/32' });
    const inst = await provider.launch({ runId: 'sg-2', instanceType: 'g5.xlarge', region: 'us-east-1', spot: false, sshPublicKey: pub });
    const r = emu.instances.get(inst.id)!.request as Map<string, string>;
    assert.equal(r.get('SecurityGroupId.1'), emu.groups[0]!.id, 'the same group, reused');
    assert.deepEqual(emu.ingressOf(emu.groups[0]!.id), [{ proto: 'tcp', from: 22, to: 22, cidr: '203.0.113.7/32' }]);
    // IMDSv2 and encrypted EBS on the launch (issue 15.9).
    assert.equal(r.get('MetadataOptions.HttpTokens'), 'required');
    assert.equal(r.get('BlockDeviceMapping.1.Ebs.Encrypted'), 'true');
    await provider.terminate(inst.id);
  } finally {
    await emu.stop();
  }
});
