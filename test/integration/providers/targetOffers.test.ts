// The run spec decides: target.provider, region, zone, spot, instance_type, gpu_count and disk_gb narrow the
// offers the Start Training picker lists and shape the launch, across the three clouds' real clients against
// their emulators (test doubles).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { launchRequestFor, offersForTarget } from '../../../src/core/runs/hosts/targetOffers';
import type { TargetSpec } from '../../../src/core/providers/targetSpec';
import { makeRig } from './harness';
import type { CloudRig } from './harness';

const PUB = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl rft-target';

before(() => {
  process.env.AWS_ACCESS_KEY_ID = 'AKIAEMULATOR000000';
  process.env.AWS_SECRET_ACCESS_KEY = 'emulator-secret';
  delete process.env.AWS_PROFILE;
});

async function rigs(): Promise<CloudRig[]> {
  return Promise.all([makeRig('lambda', 22, 2000), makeRig('ec2', 22, 2000), makeRig('gcp', 22, 2000)]);
}

async function stop(all: CloudRig[]): Promise<void> {
  for (const r of all) await r.emu.stop();
}

test('spec decides: an EC2 target with region, zone, spot, instance type and disk lists that one offer, in that zone, and launches it so', async () => {
  const all = await rigs();
  try {
    const target: TargetSpec = {
      provider: 'ec2',
      gpu: 'A10G',
      region: 'us-east-1',
      zone: 'us-east-1b',
      spot: true,
      instance_type: 'g5.xlarge',
      gpu_count: 1,
      disk_gb: 300,
    };
    const { offers, problems } = await offersForTarget(
      all.map((r) => r.provider),
      ['A10G'],
      target,
    );
    assert.deepEqual(problems, []);
    assert.deepEqual(
      offers.map(({ offer: o }) => [o.provider, o.instanceType, o.spot, o.zone]),
      [['ec2', 'g5.xlarge', true, 'us-east-1b']],
    );
    const ec2 = all[1]!;
    const inst = await ec2.provider.launch(launchRequestFor('rft-20261121-150000-spec', offers[0]!.offer, target, PUB));
    const r = ec2.emu.instances.get(inst.id)!.request as Map<string, string>;
    assert.deepEqual(
      [r.get('InstanceType'), r.get('Placement.AvailabilityZone'), r.get('InstanceMarketOptions.MarketType'), r.get('BlockDeviceMapping.1.Ebs.VolumeSize')],
      ['g5.xlarge', 'us-east-1b', 'spot', '300'],
    );
    // On-demand in a zone: the zone is kept on the offer and reaches the launch too.
    const od = await offersForTarget(
      all.map((x) => x.provider),
      ['A10G'],
      { ...target, spot: false },
    );
    assert.deepEqual(
      od.offers.map(({ offer: o }) => [o.instanceType, o.spot, o.zone, o.capacity]),
      [['g5.xlarge', false, 'us-east-1b', 'unknown']],
    );
    // Another region than the provider was made for: no offers labelled with a region they were not priced in.
    assert.deepEqual((await offersForTarget([ec2.provider], ['A10G'], { ...target, region: 'eu-west-1', zone: undefined })).offers, []);
  } finally {
    await stop(all);
  }
});

test('spec decides: a GCP target names the machine type and zone; the insert goes to that zone with that machine and disk', async () => {
  const all = await rigs();
  try {
    const target: TargetSpec = {
      provider: 'gcp',
      gpu: 'T4',
      region: 'us-central1',
      zone: 'us-central1-a',
      spot: false,
      instance_type: 'n1-standard-4',
      gpu_count: 1,
      disk_gb: 150,
    };
    const { offers } = await offersForTarget(
      all.map((r) => r.provider),
      ['T4'],
      target,
    );
    assert.deepEqual(
      offers.map(({ offer: o }) => [o.provider, o.instanceType, o.spot, o.zone]),
      [['gcp', 'n1-standard-4+nvidia-tesla-t4x1', false, 'us-central1-a']],
    );
    const gcp = all[2]!;
    await gcp.provider.launch(launchRequestFor('rft-20261121-150000-specg', offers[0]!.offer, target, PUB));
    const body = [...gcp.emu.instances.values()][0]!.request as {
      machineType: string;
      disks: Array<{ initializeParams: { diskSizeGb: string } }>;
      guestAccelerators: Array<{ acceleratorCount: number }>;
    };
    assert.equal(body.machineType, 'zones/us-central1-a/machineTypes/n1-standard-4');
    assert.equal(body.disks[0]!.initializeParams.diskSizeGb, '150');
    assert.equal(body.guestAccelerators[0]!.acceleratorCount, 1);
  } finally {
    await stop(all);
  }
});

test('spec decides: gpu_count (default 1) picks the machine size; a Lambda target lists only Lambda; an ssh target leaves every cloud open', async () => {
  const all = await rigs();
  try {
    const one = await offersForTarget(
      all.map((r) => r.provider),
      ['A100-80GB'],
      { provider: 'lambda', gpu: 'A100-80GB' },
    );
    assert.deepEqual(one.offers, [], 'Lambda has the 80 GB A100 only as 8x: none with one GPU');
    const eight = await offersForTarget(
      all.map((r) => r.provider),
      ['A100-80GB'],
      { provider: 'lambda', gpu: 'A100-80GB', gpu_count: 8 },
    );
    assert.deepEqual(
      eight.offers.map(({ offer: o }) => [o.provider, o.instanceType, o.gpuCount]),
      [['lambda', 'gpu_8x_a100_80gb_sxm4', 8]],
    );
    const open = await offersForTarget(
      all.map((r) => r.provider),
      ['A10G', 'T4'],
      { provider: 'ssh', host: 'me@box', gpu: 'T4' },
    );
    assert.deepEqual([...new Set(open.offers.map(({ offer: o }) => o.provider))].sort(), ['ec2', 'gcp']);
    assert.ok(open.offers.every(({ offer: o }) => o.gpuCount === 1));
  } finally {
    await stop(all);
  }
});
