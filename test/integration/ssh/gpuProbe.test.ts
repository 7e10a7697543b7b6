// GPU probe over real SSH. The GPUs are a stand-in: an `nvidia-smi` script first on the sshd user's PATH that
// prints nvidia-smi's documented CSV (no GPU exists here).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { clientFor } from '../../support/sshClient';
import { nvidiaSmiStandIn } from '../../support/nvidiaSmiStandIn';
import { connect } from '../../../src/core/ssh/session';
import { probeGpus, describeGpus } from '../../../src/core/ssh/gpuProbe';

const servers: Sshd[] = [];
after(async () => {
  for (const s of servers) await s.stop();
});

async function probeWith(pathPrepend: string[]): Promise<ReturnType<typeof probeGpus>> {
  const s = await startSshd({ pathPrepend });
  servers.push(s);
  const c = clientFor(s);
  const session = await connect({ host: c.alias }, c.options);
  try {
    return await probeGpus(session);
  } finally {
    session.close();
  }
}

test('nvidia-smi stand-in with 2 A100s: names, count, memory, driver and CUDA version', async () => {
  const r = await probeWith([
    nvidiaSmiStandIn(
      [
        { name: 'NVIDIA A100-SXM4-40GB', memoryMiB: 40960 },
        { name: 'NVIDIA A100-SXM4-40GB', memoryMiB: 40960 },
      ],
      { driver: '535.104.05', cuda: '12.2' },
    ),
  ]);
  assert.equal(r.kind, 'nvidia');
  if (r.kind !== 'nvidia') return;
  assert.equal(r.count, 2);
  assert.deepEqual(
    r.gpus.map((g) => [g.index, g.name, g.memoryTotalMiB]),
    [
      [0, 'NVIDIA A100-SXM4-40GB', 40960],
      [1, 'NVIDIA A100-SXM4-40GB', 40960],
    ],
  );
  assert.equal(r.driverVersion, '535.104.05');
  assert.equal(r.cudaVersion, '12.2');
  assert.equal(describeGpus(r), '2 × NVIDIA A100-SXM4-40GB (40 GiB), driver 535.104.05, CUDA 12.2');
});

test('no nvidia-smi on the host: a clear "no NVIDIA GPU" result', async () => {
  const r = await probeWith([]);
  assert.deepEqual(r, { kind: 'none', reason: 'No NVIDIA GPU: nvidia-smi is not installed on this host.' });
});

test('nvidia-smi stand-in whose driver does not answer (exit 9): "no NVIDIA GPU" with the reason', async () => {
  const r = await probeWith([nvidiaSmiStandIn([], { failing: true })]);
  assert.equal(r.kind, 'none');
  if (r.kind !== 'none') return;
  assert.match(r.reason, /^No NVIDIA GPU available: nvidia-smi failed \(exit 9\): NVIDIA-SMI has failed/);
});
