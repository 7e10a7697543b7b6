// Which image an EC2 instance boots, through the real @aws-sdk/client-ec2 and @aws-sdk/client-ssm against the
// EC2 emulator (test double; it also answers SSM GetParameters as AWS does). The region's image list is as AWS
// keeps it: older PyTorch DLAMIs are rebuilt later, so "newest by creation date" is not the newest PyTorch;
// the public SSM parameter AWS recommends is.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { Ec2Provider } from '../../../src/core/providers/ec2/instances';
import { ProviderError } from '../../../src/core/providers/provider';
import { AMI, Ec2Emulator } from '../../emulators/ec2';

const PUB = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl rft-images';

before(() => {
  process.env.AWS_ACCESS_KEY_ID = 'AKIAEMULATOR000000';
  process.env.AWS_SECRET_ACCESS_KEY = 'emulator-secret';
  delete process.env.AWS_PROFILE;
});

async function setup(): Promise<{ emu: Ec2Emulator; provider: Ec2Provider }> {
  const emu = await new Ec2Emulator({ consistencyMs: 0 }).start();
  const provider = new Ec2Provider({
    region: 'us-east-1',
    endpoint: emu.url,
    maxAttempts: 2,
    requestTimeoutMs: 2000,
    callerIp: async () => '203.0.113.7',
    consistency: { baseMs: 10, maxMs: 50, windowMs: 1000 },
  });
  return { emu, provider };
}

test('ec2 image: the DLAMI comes from its public SSM parameter (newest PyTorch), asked at most ten names a call, confirmed with DescribeImages', async () => {
  const { emu, provider } = await setup();
  try {
    const inst = await provider.launch({ runId: 'rft-20261121-150000-img1', instanceType: 'g5.xlarge', region: 'us-east-1', spot: false, sshPublicKey: PUB });
    const r = emu.instances.get(inst.id)!.request as Map<string, string>;
    assert.equal(r.get('ImageId'), AMI.pt27, 'PyTorch 2.7 as its SSM parameter says, not the 2.5 rebuilt later');
    assert.equal(provider.amiSource, 'SSM /aws/service/deeplearning/ami/x86_64/oss-nvidia-driver-gpu-pytorch-2.7-ubuntu-22.04/latest/ami-id');
    assert.ok(emu.ssm.calls.length >= 1 && emu.ssm.calls.every((names) => names.length <= 10), JSON.stringify(emu.ssm.calls.map((c) => c.length)));
    assert.equal(emu.unsigned, 0, 'SSM requests SigV4-signed too');
  } finally {
    await emu.stop();
  }
});

test('ec2 image: without ssm:GetParameters (AccessDeniedException) the newest DLAMI by name is used, and the reason is kept', async () => {
  const { emu, provider } = await setup();
  try {
    emu.ssm.denied = true;
    const inst = await provider.launch({ runId: 'rft-20261121-150000-img2', instanceType: 'g4dn.xlarge', region: 'us-east-1', spot: false, sshPublicKey: PUB });
    assert.equal((emu.instances.get(inst.id)!.request as Map<string, string>).get('ImageId'), AMI.pt25);
    assert.match(provider.amiLookupNote ?? '', /AccessDeniedException/);
    assert.match(provider.amiSource ?? '', /^DescribeImages/);
  } finally {
    await emu.stop();
  }
});

test('ec2 image: a parameter naming an image the region does not have falls back to DescribeImages', async () => {
  const { emu, provider } = await setup();
  try {
    emu.ssm.values.set('/aws/service/deeplearning/ami/x86_64/oss-nvidia-driver-gpu-pytorch-2.9-ubuntu-24.04/latest/ami-id', 'ami-0dead00000000dead');
    const inst = await provider.launch({ runId: 'rft-20261121-150000-img3', instanceType: 'g6.xlarge', region: 'us-east-1', spot: false, sshPublicKey: PUB });
    assert.equal((emu.instances.get(inst.id)!.request as Map<string, string>).get('ImageId'), AMI.pt25);
  } finally {
    await emu.stop();
  }
});

test('ec2 image: V100 (P3) is not offered and a p3 launch is refused before anything is created: no current DLAMI drives it', async () => {
  const { emu, provider } = await setup();
  try {
    assert.deepEqual(await provider.listOffers({ gpu: 'V100' }), []);
    await assert.rejects(
      provider.launch({ runId: 'rft-20261121-150000-img4', instanceType: 'p3.2xlarge', region: 'us-east-1', spot: false, sshPublicKey: PUB }),
      (e: unknown) => e instanceof ProviderError && e.code === 'unsupported' && /g4dn \(T4\)/.test(e.message),
    );
    assert.equal(emu.instances.size, 0);
    assert.equal(emu.keyPairs.length, 0);
    assert.equal(emu.groups.length, 0);
  } finally {
    await emu.stop();
  }
});
