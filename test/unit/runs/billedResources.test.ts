import { test } from 'node:test';
import assert from 'node:assert/strict';
import { billedResources } from '../../../src/core/runs/cost/billedResources';
import { typedSpec } from '../../support/typedSpec';

const offer = (provider: 'ec2' | 'gcp' | 'lambda', instanceType: string, gpu: string, gpuCount: number, spot = false, zone?: string) => ({
  provider,
  instanceType,
  gpu,
  gpuCount,
  spot,
  region: provider === 'gcp' ? 'us-central1' : provider === 'lambda' ? 'us-west-1' : 'us-east-1',
  ...(zone ? { zone } : {}),
});

test('EC2, 4 GPUs on spot with a volume: the instances in all, the root disk deleted with the instance, the volume kept by teardown', () => {
  const spec = typedSpec({
    target: { provider: 'ec2', gpu: 'A10G', gpu_count: 4, spot: true, max_attempts: 2, disk_gb: 500, volume: { name: 'llama-cache', size_gb: 300 } },
  });
  assert.deepEqual(
    billedResources({ offer: offer('ec2', 'g5.12xlarge', 'A10G', 4, true, 'us-east-1b'), spec, teardown: { policy: 'terminate' }, canStop: true }),
    [
      'Instance: 1 × g5.12xlarge (4× A10G, spot) in us-east-1/us-east-1b, terminated when the run ends; after a spot reclaim a replacement is launched, up to 2 instances in all, one at a time.',
      'Root disk: 500 GB gp3 EBS (encrypted), deleted with the instance.',
      'Volume llama-cache: 300 GB gp3 EBS (made when none has that name; an existing one keeps its size), NOT deleted by teardown: it bills until you delete it.',
    ],
  );
});

test('EC2 with teardown stop: the root disk is kept (and billed) while the instance is stopped; the default disk is 200 GB', () => {
  const lines = billedResources({
    offer: offer('ec2', 'p4d.24xlarge', 'A100-40GB', 8),
    spec: typedSpec({ target: { provider: 'ec2' } }),
    teardown: { policy: 'stop' },
    canStop: true,
  });
  assert.deepEqual(lines, [
    'Instance: 1 × p4d.24xlarge (8× A100-40GB) in us-east-1, stopped when the run ends (no GPU charge while stopped).',
    'Root disk: 200 GB gp3 EBS (encrypted), kept while the instance is stopped, billed per GB-month until you terminate it.',
  ]);
  // A spot instance cannot be stopped: teardown terminates it, and its disk goes with it.
  assert.match(
    billedResources({
      offer: offer('ec2', 'g5.xlarge', 'A10G', 1, true),
      spec: typedSpec({ target: { provider: 'ec2', spot: true } }),
      teardown: { policy: 'stop' },
      canStop: true,
    })[1]!,
    /deleted with the instance/,
  );
});

test('GCP, 2 GPUs kept with the idle watchdog: boot disk size and its fate; a volume is not made there', () => {
  const spec = typedSpec({ target: { provider: 'gcp', gpu: 'L4', gpu_count: 2, volume: { name: 'v', size_gb: 100 } } });
  assert.deepEqual(
    billedResources({
      offer: offer('gcp', 'g2-standard-24', 'L4', 2, false, 'us-central1-a'),
      spec,
      teardown: { policy: 'keep', idleMinutes: 30 },
      canStop: true,
    }),
    [
      'Instance: 1 × g2-standard-24 (2× L4) in us-central1/us-central1-a, kept running when the run ends, billed until the watchdog shuts it down after 30 idle minutes.',
      'Boot disk: 200 GB (more if the image needs it) pd-balanced, kept with the running instance.',
      'Volume v: not made on gcp (persistent volumes are EC2 only).',
    ],
  );
  // keep without the watchdog armed is a terminate (teardown.ts).
  assert.match(
    billedResources({
      offer: offer('gcp', 'a2-highgpu-2g', 'A100-40GB', 2),
      spec: typedSpec({ target: { provider: 'gcp', disk_gb: 300 } }),
      teardown: { policy: 'keep' },
      canStop: true,
    })[1]!,
    /^Boot disk: 300 GB pd-balanced, deleted with the instance\.$/,
  );
});

test('Lambda, 8 GPUs: no separate disk, and stop becomes terminate (Lambda cannot stop)', () => {
  assert.deepEqual(
    billedResources({
      offer: offer('lambda', 'gpu_8x_h100_sxm5', 'H100', 8),
      spec: typedSpec({ target: { provider: 'lambda' } }),
      teardown: { policy: 'stop' },
      canStop: false,
    }),
    [
      'Instance: 1 × gpu_8x_h100_sxm5 (8× H100) in us-west-1, terminated when the run ends.',
      'Root disk: part of the instance (no separate charge), gone when it is terminated.',
    ],
  );
});
