// Multi-node starts (issue 19.2): what each machine's spec says, the rendezvous probe's reading, which specs
// may start on several machines, and which rank's failure ends the run.
import { looseRunSpec } from '../../../src/core/config/runSpecDefaults';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  decisiveFailure,
  fixedRendezvous,
  hostsOf,
  machinesOf,
  multiNodeProblem,
  parseRendezvousProbe,
  rendezvousProbe,
  specForMachine,
} from '../../../src/core/runs/lifecycle/multiNode';
import { typedSpec } from '../../support/typedSpec';

const spec = {
  version: 1,
  command: 'python train.py',
  launcher: { type: 'torchrun', num_processes: 4, num_machines: 2 },
  target: { provider: 'ssh', gpu: 'A100-40GB', hosts: ['gpu-a', 'me@10.0.0.2:2222'] },
};
const typed = typedSpec(spec);

test('each machine gets its machine_rank and the one rendezvous; the rest of the spec is untouched', () => {
  const rdv = { address: '10.0.0.1', port: 40123 };
  const s0 = specForMachine(spec, 0, rdv);
  const s1 = specForMachine(spec, 1, rdv);
  assert.deepEqual(s0.launcher, {
    type: 'torchrun',
    num_processes: 4,
    num_machines: 2,
    machine_rank: 0,
    main_process_ip: '10.0.0.1',
    main_process_port: 40123,
  });
  assert.deepEqual(s1.launcher, { ...(s0.launcher as object), machine_rank: 1 });
  assert.equal(s1.command, spec.command);
  assert.deepEqual(s1.target, spec.target);
  assert.equal((spec.launcher as Record<string, unknown>).machine_rank, undefined, 'the caller’s spec is not changed');
});

test('machines and hosts are read from the spec', () => {
  assert.equal(machinesOf(typed), 2);
  assert.equal(machinesOf(typedSpec()), 1);
  assert.deepEqual(hostsOf(typed), ['gpu-a', 'me@10.0.0.2:2222']);
  assert.equal(hostsOf(typedSpec()), undefined);
});

test('a multi-node start needs torchrun or accelerate and one distinct host per machine', () => {
  assert.equal(multiNodeProblem(typed, hostsOf(typed)), undefined);
  assert.equal(multiNodeProblem(typedSpec({ launcher: { type: 'python' } }), undefined), undefined, 'one machine: nothing to check');
  assert.match(multiNodeProblem(typedSpec({ ...spec, launcher: { type: 'python', num_machines: 2 } }), hostsOf(typed))!, /torchrun or accelerate/);
  assert.match(multiNodeProblem(typed, ['gpu-a'])!, /target.hosts must list 2 SSH hosts.*lists 1/);
  assert.match(multiNodeProblem(typed, undefined)!, /lists 0/);
  assert.match(multiNodeProblem(typed, ['gpu-a', 'gpu-a'])!, /twice/);
});

test('the spec may fix the rendezvous address and port (a private network the SSH address is not on)', () => {
  assert.deepEqual(fixedRendezvous(looseRunSpec(spec)), {});
  assert.deepEqual(fixedRendezvous({ launcher: { main_process_ip: '192.168.1.5', main_process_port: 29500 } }), { address: '192.168.1.5', port: 29500 });
});

test('the rendezvous probe: SSH_CONNECTION’s server address and a kernel-chosen port', () => {
  assert.match(rendezvousProbe("'/opt/py/bin/python'"), /SSH_CONNECTION.*'\/opt\/py\/bin\/python' -c 'import socket/);
  assert.deepEqual(parseRendezvousProbe('10.213.9.254 51234 10.213.9.1 22\n40123\n'), { address: '10.213.9.1', port: 40123 });
  assert.deepEqual(parseRendezvousProbe('::1 5 fe80::1 22\n29500\n'), { address: 'fe80::1', port: 29500 });
  // A host's odd output is never taken as an address or port.
  assert.deepEqual(parseRendezvousProbe('\nnope\n'), {});
  assert.deepEqual(parseRendezvousProbe('a b $(reboot) 22\n70000\n'), {});
});

test('the failure that ends the run: a known signature first, then the earliest rank to end', () => {
  const r0 = { rank: 0, failure: { message: 'Connection closed by peer' }, endedAt: 1000 };
  const r1 = { rank: 1, failure: { message: 'CUDA out of memory', signature: 'cuda-oom' }, endedAt: 2000 };
  const r2 = { rank: 2, failure: { message: 'exit 1' }, endedAt: 500 };
  assert.equal(decisiveFailure([r0, r1, r2])?.rank, 1);
  assert.equal(decisiveFailure([r0, r2])?.rank, 2);
  assert.equal(decisiveFailure([{ rank: 0 }, { rank: 1, endedAt: 3 }]), undefined);
});
