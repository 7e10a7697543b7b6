// A multi-node run on a cloud (issue 36.5): what start refuses before anything is launched, and how each node's
// launch is named and placed (clusterLaunch.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cloudMultiNodeProblem, multiNodeProblem } from '../../../src/core/runs/lifecycle/multiNode';
import { nodeRequest } from '../../../src/core/runs/lifecycle/clusterLaunch';
import { launchNameFor } from '../../../src/core/providers/provider';
import { billedResources } from '../../../src/core/runs/cost/billedResources';
import { typedSpec } from '../../support/typedSpec';
import type { RunSpec } from '../../../src/core/config/runSpecDefaults';

const launcher = (type: string): Record<string, unknown> => ({ launcher: { type, num_processes: 2, num_machines: 2 } });
const spec = (type: string): RunSpec => typedSpec(launcher(type));

test('start refuses a spot, a kept or stopped, or a non-cloud multi-node launch, and a launcher that cannot start ranks', () => {
  assert.equal(cloudMultiNodeProblem(spec('torchrun'), false, 'terminate', 'ec2'), undefined);
  assert.equal(cloudMultiNodeProblem(typedSpec({ launcher: { type: 'python' } }), true, 'keep', 'local'), undefined, 'one machine: nothing to refuse');
  assert.match(cloudMultiNodeProblem(spec('torchrun'), true, 'terminate', 'gcp') ?? '', /on-demand instances; a spot node's reclaim is not recovered/);
  assert.match(cloudMultiNodeProblem(spec('accelerate'), false, 'stop', 'lambda') ?? '', /teardown.policy stop is not supported/);
  assert.match(cloudMultiNodeProblem(spec('torchrun'), false, 'terminate', 'local') ?? '', /local does not launch several instances/);
  assert.match(cloudMultiNodeProblem(spec('python'), false, 'terminate', 'ec2') ?? '', /torchrun or accelerate/);
});

test('node 0 is named as a single run; later nodes get their own launch key, name and token, pinned to node 0 zone', () => {
  const base = { runId: 'rft-20261128-020000-abcd', instanceType: 'g5.xlarge', region: 'us-east-1', spot: false, sshPublicKey: 'ssh-ed25519 AAAA x' };
  const n0 = nodeRequest(base, 3, 0, undefined);
  const n2 = nodeRequest(base, 3, 2, 'us-east-1b');
  assert.deepEqual(n0.cluster, { size: 3, index: 0 });
  assert.equal(n0.launchKey, undefined);
  assert.equal(n0.zonePinned, undefined);
  assert.equal(launchNameFor(n0), 'rft-20261128-020000-abcd');
  assert.deepEqual([n2.launchKey, n2.zone, n2.zonePinned], ['node2', 'us-east-1b', true]);
  assert.equal(launchNameFor(n2), 'rft-20261128-020000-abcd-node2');
});

test('a volume cannot go with several instances; the confirmation lists one instance and one disk per machine rank', () => {
  const withVolume = typedSpec({ ...launcher('torchrun'), target: { provider: 'ec2', volume: { name: 'data', size_gb: 100 } } });
  assert.match(cloudMultiNodeProblem(withVolume, false, 'terminate', 'ec2') ?? '', /target.volume attaches to one instance; a multi-node cloud run has 2/);
  const lines = billedResources({
    offer: { provider: 'ec2', instanceType: 'g5.12xlarge', gpu: 'A10G', gpuCount: 4, spot: false, region: 'us-east-1', zone: 'us-east-1a' },
    spec: typedSpec({ ...launcher('torchrun'), target: { provider: 'ec2', disk_gb: 300 } }),
    teardown: { policy: 'terminate' },
    canStop: true,
  });
  assert.equal(
    lines[0],
    'Instance: 2 × g5.12xlarge (4× A10G each, one per machine rank, with the network between them) in us-east-1/us-east-1a, terminated when the run ends.',
  );
  assert.equal(lines[1], 'Root disk: 300 GB gp3 EBS (encrypted) on each of the 2, deleted with the instance.');
});

test('Start Training lets a cloud multi-node spec through to the offer picker; on SSH hosts the hosts are still required', () => {
  const cloud = typedSpec({ ...launcher('torchrun'), target: { provider: 'gcp', gpu: 'L4' } });
  assert.equal(multiNodeProblem(cloud, undefined), undefined);
  assert.match(multiNodeProblem(cloud, undefined, true) ?? '', /target.hosts must list 2 SSH hosts/);
  assert.match(multiNodeProblem(typedSpec({ ...launcher('torchrun'), target: { provider: 'ssh' } }), undefined) ?? '', /target.hosts must list 2 SSH hosts/);
});
