// Accounts without a default VPC (deleted, or never created): EC2 refuses a launch or a security group that
// names no VPC (VPCIdNotSpecified). The provider (real @aws-sdk/client-ec2) must pick a public subnet itself
// (one whose route table sends 0.0.0.0/0 to an internet gateway, in a zone that offers the type) and launch
// there with a public address, or say exactly what to create. Against the EC2 emulator (test double) whose
// networks behave as EC2's: an instance in a subnet without such a route gets an address nothing reaches.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Ec2Provider } from '../../../src/core/providers/ec2/instances';
import { ProviderError } from '../../../src/core/providers/provider';
import { Ec2Emulator } from '../../emulators/ec2';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';

let sshd: Sshd;
let pub: string;

before(async () => {
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
  const emu = await new Ec2Emulator({ consistencyMs: 0 }).start();
  emu.net.removeDefaultVpc();
  const provider = new Ec2Provider({
    region: 'us-east-1',
    endpoint: emu.url,
    maxAttempts: 2,
    requestTimeoutMs: 2000,
    callerIp: async () => '203.0.113.7',
    sshPort: sshd.port,
    consistency: { baseMs: 10, maxMs: 50, windowMs: 1000 },
  });
  return { emu, provider };
}

test('ec2 network: without a default VPC the launch goes to a public subnet (route to an internet gateway) with a public address; the group is made in that VPC; SSH answers', async () => {
  const { emu, provider } = await setup();
  try {
    const priv = emu.net.addVpc({ zones: ['a'], public: false, mapPublicIp: true });
    const pubNet = emu.net.addVpc({ zones: ['b'], public: true });
    const inst = await provider.launch({ runId: 'rft-20261121-150000-net1', instanceType: 'g5.xlarge', region: 'us-east-1', spot: false, sshPublicKey: pub });
    const r = emu.instances.get(inst.id)!.request as Map<string, string>;
    assert.equal(r.get('NetworkInterface.1.SubnetId'), pubNet.subnets[0]!.id, 'the public subnet, not the private one');
    assert.equal(r.get('NetworkInterface.1.AssociatePublicIpAddress'), 'true', 'the subnet does not hand out addresses by itself');
    const group = emu.groups.find((g) => g.id === r.get('NetworkInterface.1.SecurityGroupId.1'));
    assert.equal(group?.vpcId, pubNet.vpc.id);
    assert.deepEqual(emu.ingressOf(group!.id), [{ proto: 'tcp', from: 22, to: 22, cidr: '203.0.113.7/32' }]);
    assert.notEqual(priv.vpc.id, pubNet.vpc.id);
    const ready = await provider.waitForSsh(inst.id, { timeoutMs: 5000, intervalMs: 20 });
    assert.equal(ready.publicIp, '127.0.0.1');
    assert.equal(ready.zone, 'us-east-1b');
    await provider.terminate(inst.id);
  } finally {
    await emu.stop();
  }
});

test("ec2 network: the requested zone picks among public subnets; a second launch reuses the VPC's group", async () => {
  const { emu, provider } = await setup();
  try {
    const net = emu.net.addVpc({ zones: ['a', 'b'], public: true, mapPublicIp: true });
    const a = await provider.launch({
      runId: 'rft-20261121-150000-net2',
      instanceType: 'g5.xlarge',
      region: 'us-east-1',
      zone: 'us-east-1b',
      spot: false,
      sshPublicKey: pub,
    });
    const ra = emu.instances.get(a.id)!.request as Map<string, string>;
    assert.equal(ra.get('NetworkInterface.1.SubnetId'), net.subnets[1]!.id);
    assert.equal(ra.get('Placement.AvailabilityZone'), undefined, 'the subnet decides the zone');
    const b = await provider.launch({ runId: 'rft-20261121-150000-net3', instanceType: 'g5.xlarge', region: 'us-east-1', spot: false, sshPublicKey: pub });
    assert.equal(emu.groups.length, 1);
    assert.equal((emu.instances.get(b.id)!.request as Map<string, string>).get('NetworkInterface.1.SecurityGroupId.1'), emu.groups[0]!.id);
  } finally {
    await emu.stop();
  }
});

test('ec2 network: without a default VPC and without a public subnet the launch fails saying what to create, and nothing is launched', async () => {
  const { emu, provider } = await setup();
  try {
    emu.net.addVpc({ zones: ['a', 'b'], public: false, mapPublicIp: true });
    await assert.rejects(
      provider.launch({ runId: 'rft-20261121-150000-net4', instanceType: 'g5.xlarge', region: 'us-east-1', spot: false, sshPublicKey: pub }),
      (e: unknown) =>
        e instanceof ProviderError &&
        e.code === 'invalid' &&
        /no default VPC/i.test(e.message) &&
        /create-default-vpc/.test(e.message) &&
        /internet gateway/.test(e.message),
    );
    assert.equal(emu.instances.size, 0);
    // A public subnet only in a zone that does not offer the type is no better, and is named as such.
    emu.net.addVpc({ zones: ['f'], public: true });
    await assert.rejects(
      provider.launch({ runId: 'rft-20261121-150000-net5', instanceType: 'g5.xlarge', region: 'us-east-1', spot: false, sshPublicKey: pub }),
      (e: unknown) => e instanceof ProviderError && e.code === 'invalid' && /us-east-1f/.test(e.message) && /g5\.xlarge/.test(e.message),
    );
    assert.equal(emu.instances.size, 0);
  } finally {
    await emu.stop();
  }
});
