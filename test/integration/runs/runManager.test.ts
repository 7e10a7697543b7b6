// The run lifecycle against a real OpenSSH server on loopback: an own-script run (a real Python script
// under the real python-runner) synced, started detached, mirrored by byte offset, finished, its adapter
// downloaded; a reattach after the manager is dropped mid-run; a recognised failure. The GPU is an
// nvidia-smi STAND-IN (test/support/standins/nvidia-smi) reporting an A100: no GPU exists here.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync, readdirSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { RunStore } from '../../../src/core/runs/store/runStore';
import type { RunManager } from '../../../src/core/runs/lifecycle/runManager';
import { allFiles, ownScriptWorkspace, runFinished, sshStartRequest, testRunManager, trustingConnectOptions } from '../../support/runHosts';
import type { ConnectOptions } from '../../../src/core/ssh/session';

const REPO = resolve(__dirname, '../../..');
const SECRET = 'hf_TESTSECRETvalue0123456789abcdefXYZ';
let sshd: Sshd;
let connectOptions: ConnectOptions;

before(async () => {
  sshd = await startSshd({ pathPrepend: [join(REPO, 'test/support/standins')] });
  connectOptions = trustingConnectOptions([sshd]);
});
after(async () => {
  await sshd?.stop();
});

const manager = (storage: string): RunManager => testRunManager(storage, connectOptions);

const workspace = ownScriptWorkspace;
const startReq = (ws: string, command: string, name = 'own-script-smoke'): Parameters<RunManager['start']>[0] =>
  sshStartRequest(sshd, ws, name, command, { env: { HF_TOKEN: SECRET }, download: ['adapter'] });

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

const finished = runFinished;

test('runs: an own-script run syncs, runs detached, mirrors byte-identically, finishes and brings the adapter back', { timeout: 180_000 }, async () => {
  const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
  const m = manager(storage);
  const ws = workspace();
  const stages: string[] = [];
  const rec = await m.start({ ...startReq(ws, 'python3 train.py --steps 6 --sleep 0.1'), progress: (s) => stages.push(s) });
  assert.equal(rec.status, 'running');
  assert.deepEqual([...new Set(stages)], ['connecting', 'syncing', 'bootstrapping', 'running']);
  const f = await finished(m, rec.id);
  assert.equal(f.record.status, 'completed', JSON.stringify(f.failure));
  assert.equal(f.record.exitCode, 0);
  // The local mirror is byte-identical to the remote files.
  const remoteRun = f.record.remoteDir!.replace(/^~\//, `${sshd.home}/`);
  for (const name of ['output.log', 'events.jsonl']) {
    const remote = readFileSync(join(remoteRun, name));
    const local = readFileSync(join(m.localDirOf(rec.id), name));
    assert.equal(sha(local), sha(remote), `${name} differs`);
  }
  // Metrics came from the HF-style dicts the script printed; the stand-in A100 was sampled.
  const store = new RunStore(join(storage, 'runs.json'));
  const events = readFileSync(join(m.localDirOf(rec.id), 'events.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { type: string; step?: number });
  assert.ok(events.filter((e) => e.type === 'metrics').length >= 6, 'metrics events');
  assert.equal(events[events.length - 1]?.type, 'finished');
  assert.match(readFileSync(join(m.localDirOf(rec.id), 'gpu.csv'), 'utf8'), /A100/);
  assert.equal(store.get(rec.id)?.lastStep !== undefined, true);
  // The adapter was downloaded into the workspace.
  assert.ok(f.record.artifactsDir && existsSync(join(f.record.artifactsDir, 'adapter_config.json')), 'adapter downloaded');
  // The secret is in no file the extension wrote and in no mirrored log.
  for (const p of [...allFiles(storage), ...allFiles(join(ws, 'outputs'))]) {
    assert.ok(!readFileSync(p).includes(SECRET), `secret found in ${p}`);
  }
  await m.dispose();
});

test('runs: dropping the manager mid-run (a reload) and reattaching loses and repeats no line', { timeout: 180_000 }, async () => {
  const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
  const first = manager(storage);
  const ws = workspace();
  const rec = await first.start(startReq(ws, 'python3 train.py --steps 40 --sleep 0.1', 'reattach'));
  await new Promise((r) => setTimeout(r, 1500));
  await first.dispose();
  const mid = readFileSync(join(first.localDirOf(rec.id), 'output.log'), 'utf8');
  await new Promise((r) => setTimeout(r, 1000));
  const second = manager(storage);
  const done = finished(second, rec.id);
  assert.equal(second.reattachAll(), 1);
  const f = await done;
  assert.equal(f.record.status, 'completed');
  const log = readFileSync(join(second.localDirOf(rec.id), 'output.log'), 'utf8');
  assert.ok(log.startsWith(mid), 'the reattached mirror continues the first one');
  for (let i = 1; i <= 40; i++) assert.equal(log.split(`line ${i} of the run\n`).length - 1, 1, `line ${i} appears exactly once`);
  const remote = readFileSync(join(f.record.remoteDir!.replace(/^~\//, `${sshd.home}/`), 'output.log'), 'utf8');
  assert.equal(log, remote);
  await second.dispose();
});

test('runs: a recognised failure ends the run failed with its signature and fix', { timeout: 180_000 }, async () => {
  const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
  const m = manager(storage);
  const ws = workspace();
  const rec = await m.start(
    startReq(
      ws,
      'python3 train.py --steps 2 --sleep 0.05 --exit-code 1 --fail-with "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"',
      'oom',
    ),
  );
  const f = await finished(m, rec.id);
  assert.equal(f.record.status, 'failed');
  assert.equal(f.record.exitCode, 1);
  assert.equal(f.failure?.signature, 'cuda-oom');
  assert.ok((f.failure?.hint ?? '').length > 10);
  await m.dispose();
});

test('runs: stop sends SIGTERM and the run ends stopped; another machine finds it on the host; artifacts download', { timeout: 180_000 }, async () => {
  const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
  const m = manager(storage);
  const ws = workspace();
  const rec = await m.start(startReq(ws, 'python3 train.py --steps 200 --sleep 0.1', 'to-stop'));
  // A second machine (its own store, no record of this run) lists the runs on the host.
  const other = manager(mkdtempSync(join(tmpdir(), 'rft-storage-')));
  const found = await other.discover(`${sshd.user}@127.0.0.1:${sshd.port}`, { identityFile: sshd.userKeyPath });
  const seen = found.find((r) => r.id === rec.id);
  assert.equal(seen?.status, 'running');
  assert.equal(seen?.origin, 'found');
  await other.dispose();
  await new Promise((r) => setTimeout(r, 1000));
  const done = finished(m, rec.id);
  await m.stop(rec.id, 5_000);
  const f = await done;
  assert.equal(f.record.status, 'stopped');
  assert.ok(f.record.exitCode === 143 || f.record.exitCode === 0, `exit ${String(f.record.exitCode)}`);
  // Download what the run left in its run folder (its logs), as the Runs view's action does.
  const dest = join(ws, 'outputs', rec.id, 'logs');
  const got = await m.downloadArtifacts(rec.id, f.record.remoteDir!, dest);
  assert.ok(got.bytes > 0);
  assert.equal(readFileSync(join(dest, 'output.log'), 'utf8'), readFileSync(join(m.localDirOf(rec.id), 'output.log'), 'utf8'));
  await m.dispose();
});

test('runs: connections killed mid-run (laptop sleep, network drop) — the run goes on and the mirror stays byte-identical', { timeout: 180_000 }, async () => {
  const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
  const m = manager(storage);
  const ws = workspace();
  const rec = await m.start(startReq(ws, 'python3 train.py --steps 30 --sleep 0.1', 'drops'));
  const done = finished(m, rec.id);
  let killed = 0;
  for (let i = 0; i < 3; i++) {
    await new Promise((r) => setTimeout(r, 700));
    killed += sshd.killConnectionChildren();
  }
  assert.ok(killed >= 3, `killed ${killed} per-connection sshd processes`);
  const f = await done;
  assert.equal(f.record.status, 'completed');
  const remote = readFileSync(join(f.record.remoteDir!.replace(/^~\//, `${sshd.home}/`), 'output.log'));
  assert.equal(sha(readFileSync(join(m.localDirOf(rec.id), 'output.log'))), sha(remote));
  await m.dispose();
});

test(
  "runs: a cloud spec (target lambda) run on one's own SSH host arms no power-off; the watchdog knows it was not launched",
  { timeout: 120_000 },
  async () => {
    // The incident of issue 15 item 12: "Start Training on A100" on a lambda spec, run on the user's own host,
    // left a watchdog armed to run `shutdown -h now` there. The decision now comes from the launch record only.
    const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
    const m = manager(storage);
    const ws = workspace();
    const req = startReq(ws, 'python train.py --steps 3 --sleep 0.05', 'cloud-spec-on-own-host');
    const spec = { ...req.spec, target: { provider: 'lambda', gpu: 'A100-80GB', region: 'us-east-1' }, teardown: { policy: 'terminate', idle_minutes: 1 } };
    const rec = await m.start({ ...req, spec, specText: JSON.stringify(spec) });
    const done = await finished(m, rec.id);
    assert.equal(done.record.status, 'completed', JSON.stringify(done.record));
    const root = join(sshd.home, '.remote-finetune');
    assert.ok(existsSync(join(root, 'runs', rec.id, 'spec.json')));
    assert.ok(!existsSync(join(root, 'runs', rec.id, 'launch.json')), 'a launch record was written for a host nobody launched');
    assert.ok(!existsSync(join(root, 'launched-instance.json')));
    assert.ok(!existsSync(join(root, 'provisioned')));
    const log = readFileSync(join(root, 'watchdog.log'), 'utf8');
    assert.match(log, /watchdog started: idle [\d.]+ min, provisioned=False/);
    assert.ok(!existsSync(sshd.poweroffLog), 'the power-off stand-in ran');
    await m.dispose();
  },
);

test('runs: .env files and the env_file never travel as workspace files; the remote root is 0700', { timeout: 120_000 }, async () => {
  const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
  const m = manager(storage);
  const ws = workspace();
  writeFileSync(join(ws, '.env'), `HF_TOKEN=${SECRET}\n`);
  writeFileSync(join(ws, '.env.production'), `HF_TOKEN=${SECRET}\n`);
  writeFileSync(join(ws, 'secrets.cfg'), `HF_TOKEN=${SECRET}\n`);
  const req = startReq(ws, 'python train.py --steps 2 --sleep 0.05', 'no-env-files');
  const rec = await m.start({ ...req, envFileRel: 'secrets.cfg' });
  const done = await finished(m, rec.id);
  assert.equal(done.record.status, 'completed', JSON.stringify(done.record));
  const root = join(sshd.home, '.remote-finetune');
  const synced = readdirSync(join(root, 'workspaces'));
  assert.equal(synced.length > 0, true);
  const files = allFiles(join(root, 'workspaces')).map((f) => f.split('/').pop());
  assert.ok(files.includes('train.py'), files.join(','));
  for (const f of ['.env', '.env.production', 'secrets.cfg']) assert.ok(!files.includes(f), `${f} was synced as a workspace file`);
  const { statSync } = await import('node:fs');
  assert.equal(statSync(root).mode & 0o777, 0o700);
  assert.equal(statSync(join(root, 'workspaces')).mode & 0o777, 0o700);
  await m.dispose();
});
