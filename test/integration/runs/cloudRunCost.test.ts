// A cloud run through the RunManager, end to end: the GCP provider (real client) against the Compute Engine
// emulator (test double), the instance being a real loopback OpenSSH server (its host key published as the
// guest agent does, so the first connection is checked), the real python-runner running the demo's own script.
// What is checked is the live cost: it counts from the launch call (boot and the wait for SSH bill too, not
// from the moment SSH answered), follows the clock while the run is quiet, and is the provider's billing rule
// applied to the price of the offer. The clock the cost is read against is moved an hour ahead so that
// Compute Engine's one-minute minimum does not hide the seconds.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import type { RunFinished } from '../../../src/core/runs/lifecycle/runManager';
import { testRunManager } from '../../support/runHosts';
import { gcpOnSshd, isolatedConnectOptions } from '../../support/gcpOnSshd';
import { runningCost } from '../../../src/core/providers/cost';
import type { Offer } from '../../../src/core/providers/provider';
import type { ConnectOptions } from '../../../src/core/ssh/session';

const REPO = resolve(__dirname, '../../..');
const AHEAD_MS = 3_600_000;
const PRICE = 3600; // USD per hour: a dollar a second, so seconds show in cents.
let sshd: Sshd;
let connectOptions: ConnectOptions;

before(async () => {
  sshd = await startSshd({ pathPrepend: [join(REPO, 'test/support/standins')] });
  connectOptions = isolatedConnectOptions('rft-cloudcost-');
});
after(async () => {
  await sshd?.stop();
});

test('cloud run: the cost so far counts from the launch call and follows the clock; the instance is deleted at the end', { timeout: 180_000 }, async () => {
  const { emu, provider } = await gcpOnSshd(sshd);
  const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
  const clock = (): number => Date.now() + AHEAD_MS;
  const m = testRunManager(storage, connectOptions, { providerFor: () => provider, costIntervalMs: 100, now: clock });
  try {
    const ws = mkdtempSync(join(tmpdir(), 'rft-ws-'));
    cpSync(join(REPO, 'examples/demo-host-own-script/train.py'), join(ws, 'train.py'));
    const spec = {
      version: 1,
      name: 'cloud-cost',
      command: 'python train.py --steps 12 --sleep 0.4',
      target: { provider: 'gcp', gpu: 'L4', zone: 'us-central1-a', disk_gb: 120 },
      teardown: { policy: 'terminate' },
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
    const startedAt = Date.now();
    const done = new Promise<RunFinished>((res) => m.onFinished((f) => res(f)));
    const rec = await m.start({
      specPath: join(ws, 'finetune.yaml'),
      specText: JSON.stringify(spec),
      spec,
      name: 'cloud-cost',
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
      teardown: { policy: 'terminate' },
    });
    const created = [...emu.instances.values()][0]!;
    assert.equal(
      (created.request as { disks: Array<{ initializeParams: { diskSizeGb: string } }> }).disks[0]!.initializeParams.diskSizeGb,
      '120',
      "the spec's disk",
    );
    assert.ok(
      rec.launchedAt !== undefined && rec.launchedAt >= startedAt && rec.launchedAt <= created.launchedAt,
      `cost counted from ${rec.launchedAt}, instance created at ${created.launchedAt}: boot and SSH wait must bill`,
    );
    // While it runs: the cost so far is the billing rule applied from the launch call to the (moved) clock.
    await new Promise((r) => setTimeout(r, 1200));
    const a = m.store.get(rec.id)!;
    const expectA = runningCost(PRICE, rec.launchedAt!, clock(), 'gcp');
    assert.ok(a.costUsd !== undefined && Math.abs(a.costUsd - expectA) <= (PRICE * 0.5) / 3600, `cost ${a.costUsd}, expected about ${expectA}`);
    await new Promise((r) => setTimeout(r, 1000));
    const b = m.store.get(rec.id)!;
    assert.ok((b.costUsd ?? 0) >= (a.costUsd ?? 0) + (PRICE * 0.7) / 3600, `cost went ${a.costUsd} → ${b.costUsd} in a second`);
    const f = await done;
    assert.equal(f.record.status, 'completed', JSON.stringify(f.record.failure));
    assert.equal(f.record.finishedAction, 'terminated');
    assert.equal(emu.billing().length, 0, 'nothing left running');
  } finally {
    await m.dispose();
    await emu.stop();
  }
});
