// RFT830 (issue 19.2): a multi-node spec names one SSH host per machine rank in target.hosts and starts its
// ranks with torchrun or accelerate; the Problems panel says so before Start Training does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateText } from '../../../src/core/config/validate';

const spec = (launcher: string, target: string): string =>
  `version: 1\nname: mn\ncommand: python train.py\nlauncher:\n${launcher}\ntarget:\n  gpu: A100-80GB\n  gpu_count: 2\n${target}\n`;

function rft830(text: string): Array<{ line: number; message: string }> {
  return validateText(text, { fileName: '/ws/finetune.yaml' })
    .diagnostics.filter((d) => d.code === 'RFT830')
    .map((d) => ({ line: text.slice(0, d.start).split('\n').length, message: d.message }));
}

const torchrun = '  type: torchrun\n  num_processes: 4\n  num_machines: 2';

test('two machines with two hosts listed: no RFT830', () => {
  assert.deepEqual(rft830(spec(torchrun, '  provider: ssh\n  hosts: [gpu-a, gpu-b]')), []);
  assert.deepEqual(rft830(spec('  type: torchrun\n  num_processes: 2', '  provider: ssh\n  host: gpu-a')), [], 'one machine: nothing asked');
});

test('missing hosts, the wrong count, a provider that launches no machines, or the python launcher are each an error at the right key', () => {
  const missing = rft830(spec(torchrun, '  provider: ssh\n  host: gpu-a'));
  assert.equal(missing.length, 1);
  assert.match(missing[0]!.message, /list 2 SSH hosts in target.hosts/);
  assert.equal(missing[0]!.line, 7, 'at launcher.num_machines');
  const count = rft830(spec(torchrun, '  provider: ssh\n  hosts: [gpu-a, gpu-b, gpu-c]'));
  assert.match(count[0]!.message, /lists 3 hosts but launcher.num_machines is 2/);
  assert.equal(count[0]!.line, 12, 'at target.hosts');
  assert.match(rft830(spec(torchrun, '  provider: local'))[0]!.message, /local does not launch several machines/);
  assert.match(rft830(spec('  type: python\n  num_machines: 2', '  provider: ssh\n  hosts: [a, b]'))[0]!.message, /torchrun or accelerate/);
});

test('a cloud launches the machines itself (issue 36.5): no hosts asked; spot, a kept or stopped teardown and a volume are each an error at their key', () => {
  for (const provider of ['ec2', 'gcp', 'lambda']) assert.deepEqual(rft830(spec(torchrun, `  provider: ${provider}`)), [], provider);
  const spot = rft830(spec(torchrun, '  provider: ec2\n  spot: true'));
  assert.equal(spot.length, 1);
  assert.match(spot[0]!.message, /on-demand instances; a reclaimed spot node is not recovered/);
  assert.equal(spot[0]!.line, 12, 'at target.spot');
  const kept = rft830(spec(torchrun, '  provider: gcp') + 'teardown:\n  policy: keep\n  idle_minutes: 30\n');
  assert.equal(kept.length, 1);
  assert.match(kept[0]!.message, /teardown.policy keep is not supported/);
  assert.equal(kept[0]!.line, 13, 'at teardown.policy');
  assert.deepEqual(rft830(spec(torchrun, '  provider: lambda') + 'teardown:\n  policy: terminate\n'), []);
  const volume = rft830(spec(torchrun, '  provider: ec2\n  volume: { name: data, size_gb: 100 }'));
  assert.match(volume[0]?.message ?? '', /target.volume attaches to one instance/);
  assert.equal(volume[0]!.line, 12, 'at target.volume');
  assert.match(rft830(spec('  type: python\n  num_machines: 2', '  provider: ec2'))[0]!.message, /torchrun or accelerate/);
});
