// The budget the host enforces (issue 32.6), end to end with VS Code "closed": a cloud run through the
// RunManager (the GCP provider's real client against the Compute Engine emulator, a test double; the instance
// is a real loopback OpenSSH server running the real python-runner), whose manager is disposed as soon as the
// run has started. The host alone then warns at 80% (a warning event and the configured webhook, a loopback
// HTTP receiver standing in for Slack/ntfy) and at 100% stops the training loop, which saves a checkpoint.
// The price is $3600/h (a dollar a second), so a $14 budget is 14 s counted from the launch call: the
// extension wrote the offer's price and the launch time into the run's spec.json.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { testRunManager } from '../../support/runHosts';
import { gcpOnSshd, isolatedConnectOptions } from '../../support/gcpOnSshd';
import type { Offer } from '../../../src/core/providers/provider';
import type { ConnectOptions } from '../../../src/core/ssh/session';

const REPO = resolve(__dirname, '../../..');
const PRICE = 3600;
const BUDGET_USD = 14;
let sshd: Sshd;
let connectOptions: ConnectOptions;

// A training loop standing in for the Trainer: the runner's real callback core and SIGTERM StopFlag, checked
// after every step as the built-in trainer's on_step_end does; a stop saves a checkpoint and ends the loop.
const TRAIN_PY = `import os, sys, time
from remote_finetune.callback import EventsCallbackCore, StopFlag
from remote_finetune.events import EventWriter
stop = StopFlag().install()
core = EventsCallbackCore(EventWriter(os.environ["RFT_EVENTS_FILE"]), run_id="budget", model="stand-in", method="own-script", stop=stop)
core.train_begin(True, None, None, 0, None)
for step in range(1, 1201):
    time.sleep(0.05)
    if step % 20 == 0:
        core.log(True, {"loss": 3.0 - step / 1000.0}, step, None)
    if core.step_end():
        path = "outputs/checkpoint-%d" % step
        os.makedirs(path, exist_ok=True)
        open(os.path.join(path, "adapter_model.safetensors"), "w").write("weights")
        core.save(True, step, path)
        print("stopped by signal %d at step %d" % (stop.signum, step), flush=True)
        sys.exit(0)
print("trained all 1200 steps", flush=True)
`;

before(async () => {
  sshd = await startSshd({ pathPrepend: [join(REPO, 'test/support/standins')] });
  connectOptions = isolatedConnectOptions('rft-budget-');
});
after(async () => {
  await sshd?.stop();
});

interface HostEvent {
  readonly type: string;
  readonly ts?: number;
  readonly t?: number;
  readonly code?: string;
  readonly message?: string;
  readonly status?: string;
  readonly step?: number;
  readonly path?: string;
}

test('budget: with VS Code closed the host warns at 80% and at 100% saves a checkpoint and stops training', { timeout: 180_000 }, async () => {
  const posts: string[] = [];
  const hook = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      posts.push(body);
      res.end();
    });
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
  const hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook-s3cret`;
  const { emu, provider } = await gcpOnSshd(sshd);
  const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
  const m = testRunManager(storage, connectOptions, { providerFor: () => provider, notifyEnv: () => ({ RFT_NOTIFY_WEBHOOK: hookUrl }) });
  let disposed = false;
  try {
    const ws = mkdtempSync(join(tmpdir(), 'rft-ws-'));
    writeFileSync(join(ws, 'train.py'), TRAIN_PY);
    const spec = {
      version: 1,
      name: 'budget-run',
      command: 'python train.py',
      target: { provider: 'gcp', gpu: 'L4', zone: 'us-central1-a' },
      teardown: { policy: 'keep' },
      budget: { max_usd: BUDGET_USD },
    };
    const offer: Offer = {
      provider: 'gcp',
      instanceType: 'g2-standard-8',
      gpu: 'L4',
      gpuCount: 1,
      vramGiB: 24,
      region: 'us-central1',
      zone: 'us-central1-a',
      pricePerHour: PRICE,
      spot: false,
      capacity: 'unknown',
    };
    const rec = await m.start({
      specPath: join(ws, 'finetune.yaml'),
      specText: JSON.stringify(spec),
      spec,
      name: 'budget-run',
      workspaceDir: ws,
      env: {},
      target: {
        kind: 'cloud',
        provider,
        offer,
        sshPublicKey: readFileSync(`${sshd.userKeyPath}.pub`, 'utf8'),
        identityFile: sshd.userKeyPath,
        sshTimeoutMs: 20_000,
      },
      gpu: 'L4',
      teardown: { policy: 'keep' },
    });
    // VS Code closes: nothing of the extension follows the run from here.
    await m.dispose();
    disposed = true;
    const runDir = join(sshd.home, '.remote-finetune', 'runs', rec.id);
    const hostSpec = JSON.parse(readFileSync(join(runDir, 'spec.json'), 'utf8')) as { budget: Record<string, number> };
    assert.equal(hostSpec.budget.max_usd, BUDGET_USD);
    assert.equal(hostSpec.budget.price_per_hour, PRICE, "the offer's price is in the host's spec");
    assert.equal(hostSpec.budget.billed_since, rec.launchedAt! / 1000, 'billing counted from the launch call, to the millisecond');

    const eventsPath = join(runDir, 'events.jsonl');
    const read = (): HostEvent[] =>
      existsSync(eventsPath)
        ? readFileSync(eventsPath, 'utf8')
            .split('\n')
            .filter((l) => l.trim())
            .map((l) => JSON.parse(l) as HostEvent)
        : [];
    const deadline = Date.now() + 90_000;
    while (Date.now() < deadline && !read().some((e) => e.type === 'finished')) await new Promise((r) => setTimeout(r, 250));
    const events = read();
    const log = readFileSync(join(runDir, 'output.log'), 'utf8');
    const why = `${JSON.stringify(events.map((e) => [e.type, e.code]))}\n${log.slice(-2000)}`;
    const codes = events.filter((e) => e.code?.startsWith('budget')).map((e) => e.code);
    assert.deepEqual(codes, ['budget-warning', 'budget-stop'], why);
    const stopEv = events.find((e) => e.code === 'budget-stop')!;
    assert.match(stopEv.message!, /^budget reached: \$1[45]\.\d\d of \$14\.00 \(at \$3600\.00\/h\); saving a checkpoint and stopping training$/);
    const order = events.map((e) => (e.type === 'warning' ? e.code : e.type));
    assert.ok(order.indexOf('budget-stop') < order.indexOf('checkpoint'), why);
    const ckpt = events.find((e) => e.type === 'checkpoint')!;
    assert.match(log, /stopped by signal 15 at step \d+/);
    assert.doesNotMatch(log, /trained all 1200 steps/);
    assert.equal(events.at(-1)!.type, 'finished');
    assert.equal(events.at(-1)!.status, 'budget-stopped', why);
    assert.ok(ckpt.step! < 1200);
    // The stop came BUDGET_USD seconds after the launch call (boot and the SSH wait billed too), not after
    // the runner started.
    const stopAt = (stopEv.ts ?? stopEv.t)!;
    const sinceLaunch = stopAt - rec.launchedAt! / 1000;
    assert.ok(sinceLaunch >= BUDGET_USD - 0.1 && sinceLaunch < BUDGET_USD + 4, `stopped ${sinceLaunch.toFixed(1)} s after the launch call`);
    const texts = posts.map((p) => (JSON.parse(p) as { text: string }).text);
    assert.equal(texts.length, 3, JSON.stringify(texts));
    assert.match(texts[0]!, /^budget-run on .+: budget 8\d% used: /);
    assert.match(texts[1]!, /^budget-run on .+: budget reached, stopping: /);
    assert.match(texts[2]!, /^budget-run budget-stopped on /);
    assert.doesNotMatch(readFileSync(eventsPath, 'utf8') + log, /hook-s3cret/);
  } finally {
    if (!disposed) await m.dispose();
    await emu.stop();
    hook.close();
  }
});
