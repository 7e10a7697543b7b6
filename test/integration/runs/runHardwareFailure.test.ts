// Issues 39.1 and 39.2 against a real OpenSSH server on loopback and the real python-runner: the record keeps the
// hardware the runner itself reported (its gpu.csv's boards, or its no-gpu warning on a host without nvidia-smi)
// over the probe's word from before the start, and a run that dies of an unrecognised exception in the
// workspace's code ends with that exception line and the workspace file and line it was raised at.
// The A100 is the nvidia-smi STAND-IN (test/support/standins/nvidia-smi); the second sshd has no nvidia-smi.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { ownScriptWorkspace, runFinished, sshStartRequest, testRunManager, trustingConnectOptions } from '../../support/runHosts';
import { usedHardwareLabel } from '../../../src/core/runs/view/runHardware';
import { localSourceFile } from '../../../src/core/runs/view/failureReason';
import { runDescription } from '../../../src/core/runs/view/runSummary';

const REPO = resolve(__dirname, '../../..');
let withGpu: Sshd;
let noGpu: Sshd;

before(async () => {
  withGpu = await startSshd({ pathPrepend: [join(REPO, 'test/support/standins')] });
  noGpu = await startSshd();
});
after(async () => {
  await withGpu?.stop();
  await noGpu?.stop();
});

test("the runner's gpu.csv replaces the probe's word: a host probed as CPU-only that trains on an A100 says so", { timeout: 180_000 }, async () => {
  const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
  const m = testRunManager(storage, trustingConnectOptions([withGpu]));
  const ws = ownScriptWorkspace();
  const rec = await m.start({
    ...sshStartRequest(withGpu, ws, 'hw-runner', 'python3 train.py --steps 6 --sleep 0.3'),
    hardware: { gpus: [], source: 'probe' },
  });
  assert.deepEqual(m.store.get(rec.id)?.hardware, { gpus: [], source: 'probe' }, 'the probe is kept until the runner reports');
  const f = await runFinished(m, rec.id);
  assert.equal(f.record.status, 'completed', JSON.stringify(f.failure));
  assert.deepEqual(m.store.get(rec.id)?.hardware, { gpus: [{ name: 'NVIDIA A100-SXM4-40GB', count: 1 }], source: 'runner' });
  assert.equal(usedHardwareLabel(m.store.get(rec.id)!), 'A100-40GB', 'the board the spec asked for, by its short name');
  await m.dispose();
});

test('a host without nvidia-smi runs on the CPU and a crash in the workspace code says what and where', { timeout: 180_000 }, async () => {
  const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
  const m = testRunManager(storage, trustingConnectOptions([noGpu]));
  const ws = ownScriptWorkspace();
  mkdirSync(join(ws, 'lib'));
  writeFileSync(join(ws, 'fail.py'), 'import sys\nsys.path.insert(0, "lib")\nimport helper\n\n\ndef main():\n    helper.check(3)\n\n\nmain()\n');
  writeFileSync(join(ws, 'lib', 'helper.py'), 'def check(n):\n    if n > 2:\n        raise ValueError("batch_size %d does not divide the data" % n)\n');
  // A stale probe said A100: the runner's own report (no nvidia-smi) wins.
  const rec = await m.start({
    ...sshStartRequest(noGpu, ws, 'hw-cpu', 'python3 fail.py'),
    hardware: { gpus: [{ name: 'NVIDIA A100-SXM4-40GB', count: 1 }], source: 'probe' },
  });
  const f = await runFinished(m, rec.id);
  const r = m.store.get(rec.id)!;
  assert.equal(r.status, 'failed');
  assert.deepEqual(r.hardware, { gpus: [], source: 'runner' });
  assert.equal(usedHardwareLabel(r), 'CPU only (spec asked A100-40GB)');
  assert.equal(f.failure?.message, 'ValueError: batch_size 3 does not divide the data (lib/helper.py:3)');
  assert.deepEqual(r.failure?.at, { file: 'lib/helper.py', line: 3 });
  assert.equal(localSourceFile(ws, r.failure!.at!.file), realpathSync(join(ws, 'lib', 'helper.py')));
  assert.match(runDescription(r), /failed \(ValueError at lib\/helper\.py:3\).* · CPU only \(spec asked A100-40GB\)/);
  await m.dispose();
});
