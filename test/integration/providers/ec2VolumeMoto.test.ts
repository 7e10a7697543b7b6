// The persistent EBS volume (target.volume) with the EC2 provider's real @aws-sdk/client-ec2 against moto in
// server mode (PyPI moto[server]: EC2's Query API implemented by others), checked through moto's own view of the
// account (DescribeVolumes with the same SDK): made once in the instance's zone, tagged, encrypted gp3, attached as
// /dev/sdf, left alone by teardown and found again by a later run in the same zone; a run in another zone is refused.
// Not covered here: the device appearing on a real instance and the mount (mountVolumeScript), which need EC2 itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DescribeVolumesCommand } from '@aws-sdk/client-ec2';
import { VOLUME_TAG, mountVolumeScript } from '../../../src/core/providers/ec2/volume';
import { ProviderError } from '../../../src/core/providers/provider';
import { motoEc2 } from '../../support/motoEc2';

const PUB = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl rft-moto';
const aws = motoEc2();
const provider = aws.provider;

async function volumesNamed(name: string) {
  return (await aws.sdk().send(new DescribeVolumesCommand({ Filters: [{ Name: `tag:${VOLUME_TAG}`, Values: [name] }] }))).Volumes ?? [];
}

test('moto: a named volume is made in the instance zone, attached, kept after terminate and re-attached by the next run there', async () => {
  const p = provider();
  const name = `seed004-${Date.now().toString(36)}`;
  assert.equal(await p.volumeZone(name), undefined, 'no volume yet');
  const first = await p.launch({
    runId: 'rft-20261125-200000-vol1',
    instanceType: 'g4dn.xlarge',
    region: 'us-east-1',
    zone: 'us-east-1a',
    spot: false,
    sshPublicKey: PUB,
    ownerId: 'owner-1',
  });
  assert.equal(first.zone, 'us-east-1a');
  const a = await p.attachVolume(first, { name, sizeGiB: 120 });
  assert.equal(a.created, true);
  const [v] = await volumesNamed(name);
  assert.equal(v?.VolumeId, a.volumeId);
  assert.equal(v?.Size, 120);
  assert.equal(v?.VolumeType, 'gp3');
  assert.equal(v?.Encrypted, true);
  assert.equal(v?.AvailabilityZone, 'us-east-1a');
  assert.deepEqual(
    (v?.Attachments ?? []).map((x) => [x.InstanceId, x.Device, x.State]),
    [[first.id, '/dev/sdf', 'attached']],
  );
  const tags = new Map((v?.Tags ?? []).map((t) => [t.Key, t.Value]));
  assert.equal(tags.get('Name'), `rft-volume-${name}`);
  assert.equal(tags.get('rft-owner'), 'owner-1');

  await p.terminate(first.id);
  const after = await volumesNamed(name);
  assert.equal(after.length, 1, 'teardown left the volume');
  assert.equal(await p.volumeZone(name), 'us-east-1a', 'the next launch is sent to the volume zone');

  const second = await p.launch({
    runId: 'rft-20261125-200000-vol2',
    instanceType: 'g4dn.xlarge',
    region: 'us-east-1',
    zone: 'us-east-1a',
    spot: false,
    sshPublicKey: PUB,
  });
  const b = await p.attachVolume(second, { name, sizeGiB: 500 });
  assert.equal(b.created, false);
  assert.equal(b.volumeId, a.volumeId, 'the same volume, data and all');
  assert.equal(b.sizeGiB, 120, 'an existing volume keeps its size');
  assert.equal((await volumesNamed(name)).length, 1);

  const elsewhere = await p.launch({
    runId: 'rft-20261125-200000-vol3',
    instanceType: 'g4dn.xlarge',
    region: 'us-east-1',
    zone: 'us-east-1b',
    spot: false,
    sshPublicKey: PUB,
  });
  await assert.rejects(
    p.attachVolume(elsewhere, { name, sizeGiB: 120 }),
    (e: unknown) => e instanceof ProviderError && /only in its own zone.*target\.zone: us-east-1a/.test(e.message),
  );
  await p.terminate(second.id);
  await p.terminate(elsewhere.id);
});

test('the mount script finds the NVMe name of the volume, formats only an empty disk and refuses odd input', () => {
  const s = mountVolumeScript('vol-0abc123');
  assert.match(s, /\/dev\/disk\/by-id\/nvme-Amazon_Elastic_Block_Store_vol0abc123 /);
  assert.match(s, /blkid "\$dev" .*\|\| sudo -n mkfs\.ext4/);
  assert.throws(() => mountVolumeScript('vol-1; rm -rf /'));
  assert.throws(() => mountVolumeScript('vol-0abc', '/mnt/x y'));
});
