// A spot run that resumes by itself, end to end. The cloud is the EC2 EMULATOR (test/emulators/ec2.ts, a test
// double of EC2's Query API): it reclaims the instance mid-run (terminated, StateReason
// Server.SpotInstanceTermination). Each instance is a real loopback OpenSSH server booted with the host key
// from its user-data (what cloud-init would do); the replacement is another sshd with its own key and its own
// HOME, on the address the emulator hands out. Checkpoints go to S3, which is moto's server (PyPI moto[server],
// AWS's API implemented by others) reached by AWS's own CLI on the host. The training is an own script with
// HF Trainer's checkpoint layout (checkpoint-N/trainer_state.json) under the real python-runner.
// Checked: one run, two attempts (the reclaim and the completion, each with its cost); the replacement
// restored the newest uploaded checkpoint and its steps go on from there to the end; the local log is
// host 1's lines as mirrored before the reclaim followed by host 2's, each line once; no instance left.
// The second case closes "VS Code" (the manager) before the reclaim: the next activation relaunches and says so.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { startSshd, freePort } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { startMoto } from '../../support/moto';
import type { Moto } from '../../support/moto';
import { testRunManager, until } from '../../support/runHosts';
import type { RunManager, RunFinished, RunRelaunched } from '../../../src/core/runs/lifecycle/runManager';
import { reconcile } from '../../../src/core/runs/lifecycle/teardown';
import { Ledger } from '../../../src/core/runs/store/ledger';
import type { ConnectOptions } from '../../../src/core/ssh/session';
import { parseEventLine } from '../../../src/core/telemetry/events';
import { makeRig } from './harness';
import { EC2_GPU_TYPES } from '../../../src/core/providers/ec2/catalog';
import type { GcpEmulator } from '../../emulators/gcp';
import type { CloudRig } from './harness';

const REPO = resolve(__dirname, '../../..');
const STEPS = 30;
const EVERY = 4;

/** The own script: HF Trainer's layout and console (progress bar, logged dicts); resumes from RFT_RESUME_CHECKPOINT. */
const TRAIN_PY = `import json, os, sys, time
run_id = os.path.basename(os.environ["RFT_RUN_DIR"])
out = os.path.join("outputs", "checkpoints", run_id)
ck = os.environ.get("RFT_RESUME_CHECKPOINT")
start = json.load(open(os.path.join(ck, "trainer_state.json")))["global_step"] if ck else 0
print("resuming from step %d" % start if ck else "training from step 0", flush=True)
for step in range(start + 1, ${STEPS} + 1):
    time.sleep(0.35)
    print(" %d%%|#| %d/${STEPS} [00:01<00:01, 1.0it/s]" % (step * 100 // ${STEPS}, step), flush=True)
    print(str({"loss": round(2.0 / step, 4), "learning_rate": 0.0002, "epoch": round(step / ${STEPS}, 3)}), flush=True)
    print("line of step %d" % step, flush=True)
    if step % ${EVERY} == 0:
        d = os.path.join(out, "checkpoint-%d" % step)
        os.makedirs(d, exist_ok=True)
        open(os.path.join(d, "adapter_model.safetensors"), "wb").write(os.urandom(2048))
        json.dump({"global_step": step}, open(os.path.join(d, "trainer_state.json"), "w"))  # HF writes it last
os.makedirs("outputs/adapter", exist_ok=True)
json.dump({"r": 8, "peft_type": "LORA"}, open("outputs/adapter/adapter_config.json", "w"))
`;

let moto: Moto;
let awsDir: string;
let awsEnv: Record<string, string>;
const servers: Sshd[] = [];
const keptDirs: string[] = [];

before(async () => {
  moto = await startMoto();
  const venv = execFileSync('bash', [join(REPO, 'scripts', 'ensure-moto.sh')], { encoding: 'utf8' }).trim();
  // Only `aws` goes on the hosts' PATH (the venv's python must not become the host's python3).
  awsDir = mkdtempSync(join(tmpdir(), 'rft-awsbin-'));
  symlinkSync(join(venv, 'bin', 'aws'), join(awsDir, 'aws'));
  awsEnv = {
    AWS_ACCESS_KEY_ID: 'testing',
    AWS_SECRET_ACCESS_KEY: 'testing',
    AWS_DEFAULT_REGION: 'us-east-1',
    AWS_ENDPOINT_URL: moto.url,
    // No instance metadata here: a closed loopback port answers at once (the runner's notice watcher polls it).
    AWS_EC2_METADATA_SERVICE_ENDPOINT: 'http://127.0.0.1:9',
  };
});

after(async () => {
  for (const s of servers) await s.stop();
  for (const d of keptDirs) rmSync(d, { recursive: true, force: true });
  await moto?.stop();
});

function aws(...args: string[]): string {
  return execFileSync(join(awsDir, 'aws'), args, { env: { ...process.env, ...awsEnv }, encoding: 'utf8' });
}

type EmuInstance = { id: string; request: Map<string, string>; state: string };

/**
 * Boots the emulator's n-th instance: an sshd on the address it hands out. EC2: with the host key from its
 * user-data (what cloud-init does). GCP: with a key made here, which the emulator's guest agent publishes in
 * the guest attributes the provider reads (set before the launch it is for).
 */
async function boot(rig: CloudRig, n: number, port: number, userPub: string, gcpKey?: string): Promise<{ sshd: Sshd; instance: EmuInstance }> {
  const emu = rig.emu as unknown as { instances: Map<string, EmuInstance> };
  await until(`instance ${n} launched`, () => rig.launched() >= n, 60_000);
  const live = [...emu.instances.values()];
  const instance = rig.kind === 'gcp' ? live[live.length - 1]! : live[n - 1]!;
  let hostKey = gcpKey;
  if (!hostKey) {
    const keys = (parse(Buffer.from(instance.request.get('UserData') ?? '', 'base64').toString('utf8')) as { ssh_keys: Record<string, string> }).ssh_keys;
    const dir = mkdtempSync(join(tmpdir(), 'rft-spot-key-'));
    keptDirs.push(dir);
    hostKey = join(dir, 'host_key');
    writeFileSync(hostKey, keys.ed25519_private!, { mode: 0o600 });
    writeFileSync(`${hostKey}.pub`, `${keys.ed25519_public}\n`);
  }
  const sshd = await startSshd({ port, hostKeyPath: hostKey, authorizedKeys: [userPub], pathPrepend: [join(REPO, 'test/support/standins'), awsDir] });
  servers.push(sshd);
  return { sshd, instance };
}

/** A host key for a GCP instance, published by the emulator's guest agent from now on. */
function gcpHostKey(rig: CloudRig): string {
  const dir = mkdtempSync(join(tmpdir(), 'rft-spot-gkey-'));
  keptDirs.push(dir);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'host_key')]);
  (rig.emu as GcpEmulator).guestHostKeys = [readFileSync(join(dir, 'host_key.pub'), 'utf8').trim().split(' ').slice(0, 2).join(' ')];
  return join(dir, 'host_key');
}

function descendants(pid: number): number[] {
  const kids = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      kids.set(ppid, [...(kids.get(ppid) ?? []), Number(name)]);
    } catch {
      /* gone */
    }
  }
  const out: number[] = [];
  const walk = (p: number): void => {
    for (const c of kids.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

/**
 * The reclaim as the instance lives it: the network goes first (sshd and its connections gone, so the extension
 * learns nothing from the host), then the cloud marks it terminated, then everything on it stops at once.
 * The host's files are kept (RFT_KEEP_SSHD) to compare with the mirror.
 */
async function reclaim(rig: CloudRig, sshd: Sshd, instanceId: string, runDir: string, wrapperPid: number): Promise<void> {
  const keep = process.env.RFT_KEEP_SSHD;
  process.env.RFT_KEEP_SSHD = '1';
  try {
    await sshd.stop();
  } finally {
    if (keep === undefined) delete process.env.RFT_KEEP_SSHD;
    else process.env.RFT_KEEP_SSHD = keep;
  }
  keptDirs.push(sshd.dir);
  rig.emu.reclaim(instanceId);
  for (const p of [...descendants(wrapperPid), wrapperPid]) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  const sock = join(runDir, '..', '..', 'tmux.sock');
  if (existsSync(sock)) {
    try {
      execFileSync('tmux', ['-S', sock, 'kill-server'], { stdio: 'ignore' });
    } catch {
      /* no server left */
    }
  }
}

interface Scenario {
  readonly finished: RunFinished;
  readonly relaunched: RunRelaunched[];
  readonly host1Log: string;
  readonly host2Log: string;
  readonly localLog: string;
  readonly localEvents: ReturnType<typeof parseEventLine>[];
  readonly uploadedBefore: number;
  readonly rig: CloudRig;
  readonly storage: string;
  readonly prompts: number;
}

interface Options {
  /** VS Code (the manager) is closed before the reclaim and opened again after it. */
  readonly closed?: boolean;
  readonly onDemandAfter?: number;
  readonly cloud?: 'ec2' | 'gcp';
  /** The replacement's first (spot) launch is refused for capacity (InsufficientInstanceCapacity, every SDK try). */
  readonly capacityOnce?: boolean;
  /** Stop is pressed once the replacement is launched and still booting (its sshd never comes up). */
  readonly stopDuringRelaunch?: boolean;
}

async function scenario(o: Options): Promise<Scenario> {
  const closedDuringReclaim = o.closed === true;
  const port = await freePort();
  const rig = await makeRig(o.cloud ?? 'ec2', port, 3000);
  const dir = mkdtempSync(join(tmpdir(), 'rft-spot-'));
  keptDirs.push(dir);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'user_key')]);
  const userPub = readFileSync(join(dir, 'user_key.pub'), 'utf8').trim();
  writeFileSync(join(dir, 'ssh_config'), `Host 127.0.0.1\n  User ${process.env.USER ?? 'root'}\n`);
  let prompts = 0;
  const connectOptions: ConnectOptions = {
    hostKeyStore: join(dir, 'store_known_hosts'),
    knownHostsFiles: [],
    globalKnownHostsFiles: [],
    agentSocket: null,
    sshConfigPath: join(dir, 'ssh_config'),
    confirmHostKey: async () => {
      prompts++;
      return false;
    },
  };
  const bucket = `ckpt-${Date.now().toString(36)}`;
  aws('s3', 'mb', `s3://${bucket}`);
  const storage = join(dir, 'storage');
  const env = { ...awsEnv };
  const relaunched: RunRelaunched[] = [];
  const finishedRuns: RunFinished[] = [];
  const manager = (): RunManager => {
    const m = testRunManager(storage, connectOptions, {
      providerFor: () => rig.provider,
      instanceCheckMs: 300,
      relaunchEnv: async () => env,
      ...(process.env.RFT_TEST_LOG ? { log: (l: string) => console.error(`${new Date().toISOString().slice(11, 23)} ${l}`) } : {}),
    });
    m.onRelaunched((r) => relaunched.push(r));
    m.onFinished((f) => finishedRuns.push(f));
    return m;
  };
  let m = manager();
  const ws = mkdtempSync(join(tmpdir(), 'rft-spot-ws-'));
  keptDirs.push(ws);
  writeFileSync(join(ws, 'train.py'), TRAIN_PY);
  const spec = {
    version: 1,
    name: 'spot-resume',
    command: 'python train.py',
    target: {
      provider: rig.kind,
      gpu: rig.kind === 'gcp' ? 'L4' : 'A10G',
      spot: true,
      max_attempts: 3,
      ...(o.onDemandAfter !== undefined ? { on_demand_after: o.onDemandAfter } : {}),
    },
    outputs: { dir: 'outputs', checkpoints: `s3://${bucket}/runs` },
  };
  const offer = {
    provider: rig.kind,
    instanceType: rig.instanceType,
    gpu: rig.kind === 'gcp' ? 'L4' : 'A10G',
    gpuCount: 1,
    vramGiB: 24,
    region: rig.region,
    zone: rig.kind === 'gcp' ? 'us-central1-a' : 'us-east-1a',
    pricePerHour: 0.5,
    spot: true,
    capacity: 'unknown' as const,
  };
  try {
    const booting1 = boot(rig, 1, port, userPub, rig.kind === 'gcp' ? gcpHostKey(rig) : undefined);
    const rec = await m.start({
      specPath: join(ws, 'finetune.yaml'),
      specText: JSON.stringify(spec),
      spec,
      name: 'spot-resume',
      workspaceDir: ws,
      env,
      target: { kind: 'cloud', provider: rig.provider, offer, sshPublicKey: userPub, identityFile: join(dir, 'user_key'), sshTimeoutMs: 30_000 },
      gpu: offer.gpu,
      teardown: { policy: 'terminate' },
    });
    const { sshd: host1, instance: inst1 } = await booting1;
    const localDir = m.store.get(rec.id)!.localDir!;
    const eventsNow = (): Array<Record<string, unknown>> =>
      existsSync(join(localDir, 'events.jsonl'))
        ? readFileSync(join(localDir, 'events.jsonl'), 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l) as Record<string, unknown>)
        : [];
    // Mid-run: two checkpoints uploaded (their events mirrored here), the run still far from its end.
    await until('two checkpoints uploaded', () => eventsNow().filter((e) => e.type === 'checkpoint' && e.uploaded_to).length >= 2, 90_000);
    const uploadedBefore = Math.max(
      ...eventsNow()
        .filter((e) => e.type === 'checkpoint' && e.uploaded_to)
        .map((e) => e.step as number),
    );
    const host1RunDir = join(host1.home, '.remote-finetune', 'runs', rec.id);
    assert.ok(existsSync(join(host1RunDir, 'output.log')), `run dir on host 1: ${host1RunDir}`);
    if (closedDuringReclaim) await m.dispose(); // VS Code closes; the run goes on on its host
    if (o.stopDuringRelaunch) {
      await reclaim(rig, host1, inst1.id, host1RunDir, m.store.get(rec.id)!.pid!);
      await until('the replacement launched', () => rig.launched() >= 2, 60_000);
      assert.equal(m.store.get(rec.id)!.status, 'provisioning');
      const stopping = m.stop(rec.id);
      await until('the run finished', () => finishedRuns.some((f) => f.record.id === rec.id), 60_000);
      await stopping;
      return {
        finished: finishedRuns.find((f) => f.record.id === rec.id)!,
        relaunched,
        host1Log: '',
        host2Log: '',
        localLog: '',
        localEvents: [],
        uploadedBefore,
        rig,
        storage,
        prompts,
      };
    }
    const booting2 = boot(rig, 2, port, userPub, rig.kind === 'gcp' ? gcpHostKey(rig) : undefined);
    // EC2 answers InsufficientInstanceCapacity with HTTP 500, which the SDK retries (3 attempts here): refuse them all.
    if (o.capacityOnce) rig.emu.inject('RunInstances', { kind: 'capacity' }, 3);
    await reclaim(rig, host1, inst1.id, host1RunDir, m.store.get(rec.id)!.pid!);
    if (closedDuringReclaim) {
      await new Promise((r) => setTimeout(r, 1000));
      m = manager(); // the next activation: the store from disk, the follower's first look finds the reclaim
      assert.equal(m.reattachAll(), 1);
    }
    const { sshd: host2 } = await booting2;
    await until('the run finished', () => finishedRuns.some((f) => f.record.id === rec.id), 150_000);
    const finished = finishedRuns.find((f) => f.record.id === rec.id)!;
    const read = (p: string): string => (existsSync(p) ? readFileSync(p, 'utf8') : '');
    return {
      finished,
      relaunched,
      host1Log: read(join(host1RunDir, 'output.log')),
      host2Log: read(join(host2.home, '.remote-finetune', 'runs', rec.id, 'output.log')),
      localLog: read(join(localDir, 'output.log')),
      localEvents: read(join(localDir, 'events.jsonl'))
        .split('\n')
        .filter(Boolean)
        .map((l) => parseEventLine(l)),
      uploadedBefore,
      rig,
      storage,
      prompts,
    };
  } finally {
    await m.dispose();
  }
}

function check(s: Scenario, closed: boolean, replacementSpot = true): void {
  const rec = s.finished.record;
  assert.equal(rec.status, 'completed', JSON.stringify(rec.failure));
  // One run, two attempts: the reclaimed instance and its replacement, each with its instance, times and cost.
  const attempts = rec.attempts ?? [];
  assert.equal(attempts.length, 2, JSON.stringify(attempts));
  const [a1, a2] = [attempts[0]!, attempts[1]!];
  assert.equal(a1.reason, 'reclaimed');
  assert.equal(a2.reason, 'completed');
  assert.notEqual(a1.instanceId, a2.instanceId);
  assert.equal(a1.spot, true);
  assert.equal(a2.spot, replacementSpot, replacementSpot ? 'replacements stay spot (no on_demand_after)' : 'on-demand after the spot refusal');
  assert.equal(rec.maxAttempts, 3);
  assert.ok(a1.endedAt! <= a2.startedAt, 'the replacement was launched after the reclaim');
  assert.ok(a1.costUsd !== undefined && a1.costUsd > 0 && a2.costUsd !== undefined && a2.costUsd > 0, JSON.stringify(attempts));
  assert.ok(Math.abs((rec.costUsd ?? 0) - (a1.costUsd + a2.costUsd)) < 1e-9, `total ${rec.costUsd} = ${a1.costUsd} + ${a2.costUsd}`);
  assert.equal(rec.instanceId, a2.instanceId);
  // Said once, as the kind of relaunch it was.
  assert.equal(s.relaunched.length, 1);
  assert.equal(s.relaunched[0]!.attempt, 2);
  assert.equal(s.relaunched[0]!.atActivation, closed);
  assert.match(
    s.relaunched[0]!.message,
    closed ? /reclaimed while VS Code was closed; relaunched on \S+ .*attempt 2\/3/ : /reclaimed; relaunched on \S+ .*attempt 2\/3/,
  );
  // The replacement restored the newest checkpoint it could: at least the one uploaded before the reclaim.
  const k = a2.resumedFromStep;
  assert.ok(k !== undefined && k >= s.uploadedBefore && k % EVERY === 0, `resumed from ${k}, ${s.uploadedBefore} was uploaded before the reclaim`);
  assert.match(s.host2Log, new RegExp(`^resuming from step ${k}\\n`));
  assert.match(s.host1Log, new RegExp(`line of step ${k}\\n`), 'the restored checkpoint is one host 1 reached');
  // Steps continuous: host 2 goes on from k + 1 to the end, each once; host 1 had run 1..j with j >= k.
  const steps = (log: string): number[] => [...log.matchAll(/^line of step (\d+)$/gm)].map((x) => Number(x[1]));
  const s1 = steps(s.host1Log);
  const s2 = steps(s.host2Log);
  assert.deepEqual(
    s1,
    Array.from({ length: s1.length }, (_, i) => i + 1),
  );
  assert.deepEqual(
    s2,
    Array.from({ length: STEPS - k! }, (_, i) => k! + 1 + i),
  );
  assert.ok(s1.length >= k!, 'no gap between the attempts');
  assert.equal(rec.lastStep, STEPS);
  // Every log line once: host 1's lines as far as they were mirrored before it vanished, then host 2's log whole.
  const base = a2.mirrorBase.output_log;
  assert.ok(base > 0 && s.host1Log.length >= base);
  assert.equal(
    s.localLog,
    s.host1Log.slice(0, base) + s.host2Log,
    'the mirror is host 1 (up to the reclaim) then host 2, nothing twice, nothing lost from host 2',
  );
  // Steps after the restored checkpoint that host 1 had already run are trained again: their lines are host 1's and host 2's, once each.
  const count = (text: string, line: string): number => text.split('\n').filter((x) => x === line).length;
  for (let step = 1; step <= STEPS; step++)
    assert.equal(count(s.localLog, `line of step ${step}`), count(s.host1Log.slice(0, base), `line of step ${step}`) + (step > k! ? 1 : 0), `step ${step}`);
  // Events: every mirrored line parses; the metrics of attempt 2 go on from k + 1.
  assert.ok(s.localEvents.every((e) => e.ok));
  const metricSteps = s.localEvents.flatMap((e) => (e.ok && e.event.type === 'metrics' && e.event.loss !== undefined ? [e.event.step] : []));
  assert.deepEqual(
    metricSteps.slice(-(STEPS - k!)),
    Array.from({ length: STEPS - k! }, (_, i) => k! + 1 + i),
  );
  assert.ok(
    s.localEvents.some((e) => e.ok && e.event.type === 'warning' && e.event.code === 'checkpoint-restored'),
    'the runner said what it restored',
  );
  assert.equal(s.prompts, 0, 'both instances checked against the host keys the extension put in their user-data');
}

async function noOrphans(s: Scenario): Promise<void> {
  // The orphan counter: nothing billing at the emulator, and the sweep finds nothing to offer.
  const billing = s.rig.emu.billing();
  assert.equal(billing.length, 0, `still billing: ${billing.map((i) => `${i.id} ${i.state}`).join(', ')}`);
  const r = await reconcile([s.rig.provider], new Ledger(join(s.storage, 'instances.json')));
  assert.equal(r.orphans.length, 0);
  assert.equal(s.rig.launched(), 2, 'exactly one replacement launched');
  await s.rig.emu.stop();
}

test(
  'a spot run reclaimed mid-run relaunches itself on another host, resumes from the S3 checkpoint and finishes as one run',
  { timeout: 300_000 },
  async () => {
    const s = await scenario({});
    check(s, false);
    await noOrphans(s);
  },
);

test('a reclaim while VS Code is closed is relaunched at the next activation, which says so', { timeout: 300_000 }, async () => {
  const s = await scenario({ closed: true });
  check(s, true);
  await noOrphans(s);
});

test('on_demand_after: a spot capacity refusal for the replacement falls back to on-demand at its price', { timeout: 300_000 }, async () => {
  const s = await scenario({ onDemandAfter: 2, capacityOnce: true });
  check(s, false, false);
  const attempts = s.finished.record.attempts!;
  const g5 = EC2_GPU_TYPES.find((t) => t.instanceType === 'g5.xlarge')!;
  assert.equal(attempts[1]!.pricePerHour, g5.onDemandPerHour, 'billed at the on-demand price');
  assert.equal(attempts[1]!.zone, 'us-east-1a', 'same zone, on-demand');
  const emu = s.rig.emu as unknown as { instances: Map<string, { spot: boolean }>; calls: string[] };
  assert.deepEqual(
    [...emu.instances.values()].map((i) => i.spot),
    [true, false],
  );
  assert.equal(emu.calls.filter((c) => c === 'RunInstances').length, 5, 'the first, the refused spot replacement (3 tries of the SDK), the on-demand one');
  assert.equal(emu.calls.filter((c) => c === 'RunInstances').length - s.rig.launched(), 3);
  await noOrphans(s);
});

test('GCP: a preempted spot VM (deleted, a compute.instances.preempted operation) is replaced by a VM of its own name', { timeout: 300_000 }, async () => {
  const s = await scenario({ cloud: 'gcp' });
  check(s, false);
  const emu = s.rig.emu as unknown as GcpEmulator;
  const names = emu.gone.map((i) => i.name);
  assert.equal(names.length, 2, names.join(', '));
  assert.notEqual(names[0], names[1]);
  assert.ok(
    names.every((n) => n.startsWith(s.finished.record.id)),
    names.join(', '),
  );
  await noOrphans(s);
});

test('Stop pressed while the replacement is launching: the launch is abandoned, its instance terminated, the run cancelled', { timeout: 300_000 }, async () => {
  const s = await scenario({ stopDuringRelaunch: true });
  const rec = s.finished.record;
  assert.equal(rec.status, 'cancelled', JSON.stringify(rec.failure));
  assert.match(rec.failure?.message ?? '', /stopped while its replacement \(attempt 2\) was launching, which was terminated/);
  assert.equal(s.relaunched.length, 0, 'no relaunch announced');
  // The replacement never reached its bootstrap (its SSH never came up), but it was launched and billed from its
  // launch call to its teardown: it is an attempt of the run, with that cost in the run's total.
  const attempts = rec.attempts ?? [];
  assert.deepEqual(
    attempts.map((a) => [a.n, a.reason]),
    [
      [1, 'reclaimed'],
      [2, 'cancelled'],
    ],
  );
  const replacement = attempts[1]!;
  assert.match(replacement.instanceId ?? '', /^i-/, 'the replacement instance is named');
  assert.ok(replacement.endedAt! >= replacement.startedAt, JSON.stringify(replacement));
  // EC2 bills per second with a minute's minimum: a replacement stopped while booting still costs that minute.
  assert.ok(replacement.costUsd! >= ((replacement.pricePerHour ?? 0) / 60) * 0.99 && replacement.costUsd! > 0, JSON.stringify(replacement));
  assert.ok(Math.abs(rec.costUsd! - attempts.reduce((sum, a) => sum + (a.costUsd ?? 0), 0)) < 1e-9, `run cost ${rec.costUsd} is the attempts' sum`);
  await noOrphans(s);
});
