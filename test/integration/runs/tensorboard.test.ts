// "Open TensorBoard" end to end against real parts: a real OpenSSH server on loopback is the GPU host, its
// python3 is the training venv (real torch and the real tensorboard package), a run's own script logs scalars
// with torch.utils.tensorboard's SummaryWriter as seed 003 does, and the real TensorBoard is started on the host
// (127.0.0.1 only) and reached through a local port forwarded over the run's SSH connection. No stand-ins.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { runFinished, sshStartRequest, testRunManager, trustingConnectOptions, until } from '../../support/runHosts';
import { trainingPython } from '../../harness/trainingVenv';
import { TensorboardService } from '../../../src/core/runs/outputs/tensorboard';
import type { ConnectOptions } from '../../../src/core/ssh/session';

const REPO = resolve(__dirname, '../../..');
let sshd: Sshd;
let connectOptions: ConnectOptions;

const SCRIPT = `
import math
from torch.utils.tensorboard import SummaryWriter
w = SummaryWriter("runs/seed003")
for step in range(1, 11):
    loss = 2.0 * math.exp(-0.2 * step)
    w.add_scalar("Loss/train", loss, step)
    print({"loss": round(loss, 4), "step": step}, flush=True)
w.close()
`;

function getText(url: string): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    get(url, (r) => {
      const chunks: Buffer[] = [];
      r.on('data', (c: Buffer) => chunks.push(c));
      r.on('end', () => res({ status: r.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    }).on('error', rej);
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

before(async () => {
  const python = trainingPython();
  // The host's python3 is the venv's: the "GPU image" Python with tensorboard in it.
  sshd = await startSshd({ pathPrepend: [join(REPO, 'test/support/standins'), dirname(python)] });
  connectOptions = trustingConnectOptions([sshd]);
});
after(async () => {
  await sshd?.stop();
});

test('Open TensorBoard: real tensorboard on the host, reached over the SSH connection, serves the run scalars', { timeout: 240_000 }, async () => {
  const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
  const m = testRunManager(storage, connectOptions);
  const ws = mkdtempSync(join(tmpdir(), 'rft-ws-'));
  writeFileSync(join(ws, 'train.py'), SCRIPT);
  const req = sshStartRequest(sshd, ws, 'tb-run', 'python3 train.py');
  const rec = await m.start(req);
  const done = runFinished(m, rec.id, 120_000);
  assert.equal((await done).record.status, 'completed');

  const logs: string[] = [];
  const service = new TensorboardService(
    (r) => m.hostOf(r),
    (l) => logs.push(l),
  );
  const record = m.store.get(rec.id)!;
  const url = await service.url(record);
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
  const remoteRun = join(sshd.home, '.remote-finetune', 'runs', rec.id);
  const remotePort = Number(readFileSync(join(remoteRun, 'tensorboard.port'), 'utf8'));
  let pid = Number(readFileSync(join(remoteRun, 'tensorboard.pid'), 'utf8'));
  assert.ok(alive(pid), 'tensorboard runs on the host');
  assert.notEqual(new URL(url).port, String(remotePort), 'the local port is a forward, not the host port itself');
  const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  assert.deepEqual(cmdline.slice(cmdline.indexOf('--host'), cmdline.indexOf('--host') + 2), ['--host', '127.0.0.1'], 'bound to loopback only');

  // TensorBoard loads event files in the background: wait for the run to show up.
  let runs: string[] = [];
  await until(
    'the run in /data/runs',
    () => {
      // A request while TensorBoard is still loading may be cut off: polled again, not a failure.
      void getText(`${url}data/runs`)
        .then((r) => (runs = r.status === 200 ? (JSON.parse(r.body) as string[]) : []))
        .catch(() => undefined);
      return runs.includes('runs/seed003');
    },
    60_000,
  );
  let scalars: Array<[number, number, number]> = [];
  await until(
    'the scalars',
    () => {
      void getText(`${url}data/plugin/scalars/scalars?run=${encodeURIComponent('runs/seed003')}&tag=${encodeURIComponent('Loss/train')}`)
        .then((r) => {
          if (r.status === 200) scalars = JSON.parse(r.body) as Array<[number, number, number]>;
        })
        .catch(() => undefined);
      return scalars.length === 10;
    },
    60_000,
  );
  for (const [, step, value] of scalars) assert.ok(Math.abs(value - 2.0 * Math.exp(-0.2 * step)) < 1e-5, `step ${step}: ${value}`);

  // Asked again (or by a fresh window after a reload): the same server on the host, not a second one.
  assert.equal(await service.url(record), url);
  assert.equal(Number(readFileSync(join(remoteRun, 'tensorboard.pid'), 'utf8')), pid);
  // TensorBoard died on the host (a reboot, an OOM kill): asking again starts another and forwards to it.
  process.kill(pid, 'SIGKILL');
  await until('the killed tensorboard to go', () => !alive(pid), 10_000);
  const revived = await service.url(record);
  const pid2 = Number(readFileSync(join(remoteRun, 'tensorboard.pid'), 'utf8'));
  assert.notEqual(pid2, pid);
  assert.ok(alive(pid2));
  assert.equal((await getText(`${revived}data/runs`)).status, 200);
  pid = pid2;
  const again = new TensorboardService((r) => m.hostOf(r));
  const url2 = await again.url(record);
  assert.equal(Number(readFileSync(join(remoteRun, 'tensorboard.pid'), 'utf8')), pid);
  assert.equal((await getText(`${url2}data/runs`)).status, 200);
  assert.ok(alive(pid));

  // Closed (panels closed, or the extension deactivates): the host process ends and the forward closes.
  await again.dispose();
  await until('tensorboard to exit on the host', () => !alive(pid), 10_000);
  assert.equal(existsSync(join(remoteRun, 'tensorboard.port')), false);
  await assert.rejects(getText(url2), 'the second local port is closed');
  await service.close(record.id);
  await assert.rejects(getText(revived), 'the local port is closed');
  await m.dispose();
});
