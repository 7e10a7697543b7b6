// Multi-node runs for real (issue 19.2): two hosts, each a network namespace with its own address and its own
// OpenSSH sshd (test/support/netns.ts), reached by the run manager over SSH as any two GPU boxes would be.
// torchrun starts 2 ranks on each (world size 4) with torch's gloo backend on the CPU, rendezvousing at host
// 0's address and a port the start found free there. Checked: the built-in trainer's loss equals a
// single-process run with the same global batch; a rank that fails ends the run with its signature and rank
// 0 stops; Stop stops every rank on every host. Needs root and iproute2: otherwise each test skips, saying why.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { makeNetnsLan, netnsUnavailable } from '../../support/netns';
import type { NetnsLan } from '../../support/netns';
import { runFinished, testRunManager, trustingConnectOptions, until } from '../../support/runHosts';
import { buildTinyModel, trainingPython } from '../../harness/trainingVenv';
import { parseEventLine } from '../../../src/core/telemetry/events';
import type { RunManager } from '../../../src/core/runs/lifecycle/runManager';

type StartRequest = Parameters<RunManager['start']>[0];

const FAIL_RANK_SCRIPT = `# Ranks meet in gloo all-reduces; global rank 2 (machine rank 1) dies of a known failure after a few.
import os, sys, time
import torch, torch.distributed as dist
dist.init_process_group("gloo")
rank = dist.get_rank()
for i in range(1000):
    t = torch.ones(1)
    dist.all_reduce(t)
    print("rank %d step %d sum %d" % (rank, i, t.item()), flush=True)
    if rank == 2 and i == 3:
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB (stand-in raised by the test on rank 2)")
    time.sleep(0.2)
`;

/**
 * The built-in trainer (remote_finetune.trainer, the code a run without \`command\` runs) started as the command,
 * so the runner puts it under the spec's launcher without the bootstrap: the bootstrap's venv step asks PyPI
 * for setuptools, and these hosts, like the air-gapped clusters multi-node runs often live on, have no route out.
 */
const BUILTIN_TRAINER_SCRIPT = `import os, sys
from remote_finetune.trainer import main_train
sys.exit(main_train(os.environ["RFT_RUN_DIR"]))
`;

const FOREVER_SCRIPT = `# Ranks all-reduce until stopped.
import time
import torch, torch.distributed as dist
dist.init_process_group("gloo")
rank = dist.get_rank()
i = 0
while True:
    t = torch.ones(1)
    dist.all_reduce(t)
    print("rank %d step %d sum %d" % (rank, i, t.item()), flush=True)
    i += 1
    time.sleep(0.2)
`;

const skipReason = netnsUnavailable();
let lan: NetnsLan | undefined;
const sshds: Sshd[] = [];
let manager: RunManager;
let ws: string;
let storage: string | undefined;
let started = 0;

before(async () => {
  if (skipReason) return;
  started = Date.now();
  const python = trainingPython();
  ws = mkdtempSync(join(tmpdir(), 'rft-mn-ws-'));
  // The tiny model travels with the workspace, so each host loads its own synced copy, as separate machines would.
  buildTinyModel(python, join(ws, 'model'));
  writeTrainingData(python, join(ws, 'data', 'train.jsonl'));
  writeFileSync(join(ws, 'fail_rank.py'), FAIL_RANK_SCRIPT);
  writeFileSync(join(ws, 'train_builtin.py'), BUILTIN_TRAINER_SCRIPT);
  writeFileSync(join(ws, 'allreduce_forever.py'), FOREVER_SCRIPT);
  lan = makeNetnsLan(2);
  for (const h of lan.hosts) {
    // RFT_PYTHON: the interpreter a GPU image would ship (the bootstrap tries it first); no hub access here.
    sshds.push(await startSshd({ netns: h, env: { RFT_PYTHON: python, HF_HUB_OFFLINE: '1', HF_DATASETS_OFFLINE: '1' } }));
  }
  // One key reaches both hosts, as a person's key reaches all their machines.
  sshds[1]!.authorize(readFileSync(`${sshds[0]!.userKeyPath}.pub`, 'utf8'));
  // The hosts' Python is the training venv's, as on a GPU image whose Python has torch.
  manager = testRunManager((storage = mkdtempSync(join(tmpdir(), 'rft-mn-store-'))), trustingConnectOptions(sshds), {
    remotePython: python,
    log: (l) => console.log(l),
  });
});

after(async () => {
  try {
    await manager?.dispose();
    await Promise.all(sshds.map((s) => s.stop()));
    // Whatever still runs inside a namespace was started by these tests: a leftover, which fails the suite
    // (after it is ended, by pid, so the namespaces can go).
    const left: string[] = [];
    for (const h of lan?.hosts ?? []) {
      for (const pid of netnsPids(h.name)) {
        left.push(`${h.name}: ${pid} ${cmdline(pid)}`);
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    }
    assert.deepEqual(left, [], 'no process left in the namespaces after the sshds stopped');
  } finally {
    lan?.remove();
    if (ws) rmSync(ws, { recursive: true, force: true });
    // RFT_KEEP_SSHD=1 keeps the local mirrors (every rank's logs) for a post-mortem, as it keeps the hosts' HOMEs.
    if (storage && process.env.RFT_KEEP_SSHD !== '1') rmSync(storage, { recursive: true, force: true });
    if (started) console.log(`multi-node suite: ${((Date.now() - started) / 1000).toFixed(1)} s including setup and teardown`);
  }
});

function netnsPids(ns: string): number[] {
  try {
    return execFileSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => /^\d+$/.test(l.trim()))
      .map(Number);
  } catch {
    return [];
  }
}

/** The process's state letter (R, S, D, Z…) from /proc, for a failure message. */
function procState(pid: number): string {
  try {
    return /^State:\s*(\S+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? '?';
  } catch {
    return 'gone';
  }
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
  } catch {
    return '';
  }
}

/**
 * Eight distinct texts, each longer than max_seq_length (16) tokens, so every example is exactly 16 tokens:
 * with world size 4 × 2 per device = 8 = the whole set, each step of either run sees all eight examples,
 * whatever order DistributedSampler or the single process's sampler chose, and equal lengths make the
 * per-rank token means average to the single process's mean.
 */
function writeTrainingData(python: string, path: string): void {
  mkdirSync(join(path, '..'), { recursive: true });
  const script =
    'import json, sys\n' +
    'sys.path.insert(0, "python-runner")\n' +
    'from tests_training.tiny import CAPITALS as C\n' +
    'rows = ["The capital of %s is %s. The capital of %s is %s." % (a, b, c, d) for (a, b), (c, d) in zip(C[:8], C[2:] + C[:2])]\n' +
    'open(sys.argv[1], "w").write("".join(json.dumps({"text": t}) + "\\n" for t in rows))\n';
  execFileSync(python, ['-c', script, path], { cwd: join(__dirname, '../../..') });
}

function request(name: string, spec: Record<string, unknown>, hosts: readonly Sshd[]): StartRequest {
  // One host is target.host: the schema takes target.hosts for two machines or more (RunManager.start types the spec).
  const at = hosts.map((s) => `${s.user}@${s.host}`);
  const full = { version: 1, name, ...spec, target: { provider: 'ssh', gpu: 'A100-40GB', ...(at.length === 1 ? { host: at[0] } : { hosts: at }) } };
  return {
    specPath: join(ws, 'finetune.yaml'),
    specText: JSON.stringify(full),
    spec: full,
    name,
    workspaceDir: ws,
    // Where gloo listens on each host: the namespaces' interface, as a person sets it in their .env.
    env: { GLOO_SOCKET_IFNAME: lan!.ifname },
    target: { kind: 'ssh', host: `${hosts[0]!.user}@${hosts[0]!.host}`, identityFile: sshds[0]!.userKeyPath },
    teardown: { policy: 'keep' },
  };
}

function trainingSpec(perDevice: number, launcher: Record<string, unknown>, outputs: string): Record<string, unknown> {
  return {
    command: 'python train_builtin.py',
    method: 'lora-bf16',
    model: { id: 'model', attn_implementation: 'sdpa' },
    data: { train: 'data/train.jsonl', max_seq_length: 16 },
    lora: { r: 8, alpha: 16, dropout: 0.0, target_modules: 'all-linear' },
    trainer: {
      max_steps: 4,
      per_device_batch_size: perDevice,
      gradient_accumulation: 1,
      learning_rate: 5e-3,
      lr_scheduler: 'constant',
      warmup_ratio: 0,
      logging_steps: 1,
      save_steps: 1000,
      precision: 'fp32',
      optimizer: 'adamw_torch',
      gradient_checkpointing: false,
      seed: 7,
    },
    launcher,
    outputs: { dir: outputs, download: [] },
  };
}

/** Per-step training loss from a mirrored events.jsonl. */
function losses(localDir: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const line of readFileSync(join(localDir, 'events.jsonl'), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const p = parseEventLine(line);
    if (p.ok && p.event.type === 'metrics' && p.event.loss !== undefined) out.set(p.event.step, p.event.loss);
  }
  return out;
}

test(
  'multi-node: 2 hosts × 2 ranks (torchrun, gloo, CPU) train the tiny model to the losses of one process with the same global batch',
  { timeout: 600_000 },
  async (t) => {
    if (skipReason) return t.skip(skipReason);
    const t0 = Date.now();
    const launcher = { type: 'torchrun', num_processes: 4, num_machines: 2 };
    const req = request('mn-train', trainingSpec(2, launcher, 'out-mn'), sshds);
    const rec = await manager.start(req);
    assert.equal(rec.status, 'running');
    assert.equal(rec.machines?.length, 1);
    assert.equal(rec.machines![0]!.host, `${sshds[1]!.user}@${sshds[1]!.host}`);
    const done = await runFinished(manager, rec.id, 300_000);
    assert.equal(done.record.status, 'completed', JSON.stringify(done.failure));
    assert.equal(done.record.machines?.[0]?.status, 'completed');
    // Each host ran with its own machine rank and the same rendezvous: host 0's namespace address.
    // The hosts' HOMEs are folders of this machine: each run folder is readable here.
    const specOn = (r: { remoteDir?: string }): { launcher: Record<string, unknown> } => JSON.parse(readFileSync(join(r.remoteDir!, 'spec.json'), 'utf8'));
    const spec0 = specOn(done.record);
    const spec1 = specOn(done.record.machines![0]!);
    assert.ok(done.record.remoteDir!.startsWith(sshds[0]!.home) && done.record.machines![0]!.remoteDir!.startsWith(sshds[1]!.home));
    assert.equal(spec0.launcher.machine_rank, 0);
    assert.equal(spec1.launcher.machine_rank, 1);
    assert.equal(spec0.launcher.main_process_ip, lan!.hosts[0]!.address);
    assert.equal(spec1.launcher.main_process_ip, lan!.hosts[0]!.address);
    assert.equal(spec0.launcher.main_process_port, spec1.launcher.main_process_port);
    // Rank 1's logs are mirrored beside rank 0's; rank 0's events drive the record (last step, loss).
    assert.ok(existsSync(join(done.record.localDir!, 'rank-1', 'output.log')), 'machine rank 1 output.log mirrored');
    assert.match(readFileSync(join(done.record.localDir!, 'rank-1', 'output.log'), 'utf8'), /\[remote-finetune\] loading model \(lora-bf16/);
    assert.equal(done.record.lastStep, 4);
    const multi = losses(done.record.localDir!);
    const multiS = (Date.now() - t0) / 1000;

    const t1 = Date.now();
    const single = await manager.start(request('mn-single', trainingSpec(8, { type: 'python' }, 'out-single'), [sshds[0]!]));
    const singleDone = await runFinished(manager, single.id, 300_000);
    assert.equal(singleDone.record.status, 'completed', JSON.stringify(singleDone.failure));
    const one = losses(singleDone.record.localDir!);
    console.log(`multi-node run ${multiS.toFixed(1)} s, single-process run ${((Date.now() - t1) / 1000).toFixed(1)} s`);
    console.log('step  multi-node loss      single-process loss');
    for (const [step, l] of one) console.log(`${step}     ${multi.get(step)}   ${l}`);
    assert.deepEqual([...multi.keys()], [1, 2, 3, 4]);
    assert.deepEqual([...one.keys()], [1, 2, 3, 4]);
    // float32 sums in another order (gloo's all-reduce of four gradients vs one batch of eight) differ in the last
    // bits; Adam carries that through four steps at ~1e-6 here. 1e-4 is far below what a missing gradient sync
    // does (each rank would step on its own 2 examples: the losses part by ~1e-2 from step 2 on).
    for (const [step, l] of one) assert.ok(Math.abs(multi.get(step)! - l) < 1e-4, `step ${step}: multi-node ${multi.get(step)} vs single ${l}`);
  },
);

test('multi-node: a rank that fails ends the run with its signature, and rank 0 on the other host stops', { timeout: 300_000 }, async (t) => {
  if (skipReason) return t.skip(skipReason);
  const req = request('mn-fail', { command: 'python fail_rank.py', launcher: { type: 'torchrun', num_processes: 4, num_machines: 2 } }, sshds);
  const rec = await manager.start(req);
  const done = await runFinished(manager, rec.id, 240_000);
  assert.equal(done.record.status, 'failed');
  assert.equal(done.failure?.signature, 'cuda-oom', JSON.stringify(done.failure));
  assert.match(done.failure!.message, /^machine rank 1 \(/);
  assert.equal(done.record.machines?.[0]?.failure?.signature, 'cuda-oom');
  // Rank 0's host has nothing of the run left running.
  assert.deepEqual(
    netnsPids(lan!.hosts[0]!.name).filter((p) => /fail_rank\.py|torchrun/.test(cmdline(p))),
    [],
    'no rank of the failed run left on host 0',
  );
  const out0 = readFileSync(join(done.record.localDir!, 'output.log'), 'utf8');
  assert.match(out0, /rank 0 step 3/, 'rank 0 ran alongside until its peer died');
});

test('multi-node: Stop stops every rank on every host', { timeout: 300_000 }, async (t) => {
  if (skipReason) return t.skip(skipReason);
  const req = request('mn-stop', { command: 'python allreduce_forever.py', launcher: { type: 'torchrun', num_processes: 4, num_machines: 2 } }, sshds);
  const rec = await manager.start(req);
  const fin = runFinished(manager, rec.id, 120_000);
  // Running for real: rank 1's host has printed all-reduce results (sum 4: all four ranks took part).
  const rank1Log = join(rec.localDir!, 'rank-1', 'output.log');
  await until('rank 1 all-reducing', () => existsSync(rank1Log) && /rank [23] step 2 sum 4/.test(readFileSync(rank1Log, 'utf8')), 120_000);
  await manager.stop(rec.id, 5_000);
  const done = await fin;
  assert.equal(done.record.status, 'stopped', JSON.stringify(done.record));
  assert.equal(done.failure, undefined, JSON.stringify(done.failure));
  // At once, not after a wait: stop returns only when no live process of the run is left on any host.
  for (const h of lan!.hosts) {
    const left = netnsPids(h.name)
      .map((p) => ({ p, cmd: cmdline(p) }))
      .filter((x) => /allreduce_forever|torchrun/.test(x.cmd));
    assert.deepEqual(
      left.map((x) => `${x.p} ${procState(x.p)} ${x.cmd}`),
      [],
      `nothing of the run left on ${h.name}`,
    );
  }
  const rank1Files = readdirSync(join(rec.localDir!, 'rank-1'));
  assert.ok(rank1Files.includes('events.jsonl'), `rank 1's events mirrored: ${rank1Files.join(', ')}`);
});
