// Faults × providers: every provisioning path, with a fault injected at each step, must end with no
// instance running (unless the policy keeps it with the watchdog armed). Clouds are emulators (test
// doubles) with the slow settings of the real services (listings that lag longer than any abort here, GCP
// operations of seconds and deletes that linger, Lambda instances without an address for a while); the
// instance's address is a real loopback OpenSSH server, logged into with the real ssh client.
// Writes its totals for scripts/test-providers.mjs, which prints the summary line last.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Ledger } from '../../../src/core/runs/store/ledger';
import { checkInstance, finishGuarded, provisionGuarded, ProvisionError, reconcile, terminateOrphans } from '../../../src/core/runs/lifecycle/teardown';
import type { TeardownSettings } from '../../../src/core/runs/lifecycle/teardown';
import type { SlowSettings } from '../../emulators/server';
import { ProviderError, RUN_ID_TAG } from '../../../src/core/providers/provider';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { makeRig, sshLogin } from './harness';
import type { CloudKind, CloudRig } from './harness';
import { SpyLedger } from '../../support/spyLedger';
import { nodeRequest, provisionClusterGuarded } from '../../../src/core/runs/lifecycle/clusterLaunch';
import type { ClusterGuardOptions } from '../../../src/core/runs/lifecycle/clusterLaunch';
import { clusterTagFor } from '../../../src/core/providers/gcp/instances';
import { nodesGroupName, placementGroupName } from '../../../src/core/providers/ec2/cluster';
import type { Ec2Emulator } from '../../emulators/ec2';
import type { GcpEmulator } from '../../emulators/gcp';

/** Every case runs this slowly: the listing lag is longer than the abort (150 ms) and the request timeouts (600 ms). */
const SLOW: SlowSettings = { listLagSec: 1, operationSec: 0.5, deleteLingerSec: 0.5, noIpSec: 1 };

let sshd: Sshd;
let pub: string;
let deadPid: number;
const totals = { cases: 0, launched: 0, orphaned: 0, kept: 0 };
const rows: string[] = [];
/** The control case, kept apart from the totals: it shows the counting sees an orphan when there is one. */
let control: { launched: number; orphaned: number } | undefined;

before(async () => {
  sshd = await startSshd();
  pub = readFileSync(`${sshd.userKeyPath}.pub`, 'utf8');
  // A pid that existed and is gone: what an extension host that crashed leaves in the ledger.
  deadPid = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout
    ? Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout)
    : 999_999;
});

after(async () => {
  await sshd.stop();
  const out = process.env.RFT_PROVIDERS_REPORT ?? join('.test-output', 'providers-matrix.json');
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify({ ...totals, rows, ...(control ? { control } : {}) }, null, 1));
});

interface CaseContext {
  readonly rig: CloudRig;
  readonly ledger: SpyLedger;
  readonly runId: string;
}

interface CaseOutcome {
  /** Instances left on purpose: running (policy keep, watchdog armed) or stopped (policy stop: its disk still bills). */
  readonly kept?: number;
}

function request(rig: CloudRig, runId: string, spot = false): Parameters<typeof provisionGuarded>[0]['request'] {
  return { runId, instanceType: rig.instanceType, region: rig.region, spot, sshPublicKey: pub, diskGiB: 100 };
}

function guard(c: CaseContext, extra: Partial<Parameters<typeof provisionGuarded>[0]> = {}): Parameters<typeof provisionGuarded>[0] {
  return {
    provider: c.rig.provider,
    ledger: c.ledger,
    request: request(c.rig, c.runId),
    pricePerHour: 1.5,
    sshTimeoutMs: 4000,
    sshIntervalMs: 20,
    cleanupTimeoutMs: 10_000,
    // Bootstrap's first step for real: log in with OpenSSH to the address the cloud reported.
    bootstrap: async (i) => {
      const out = await sshLogin(sshd, i.publicIp ?? '', i.sshPort, 'echo bootstrap-ok');
      assert.match(out, /bootstrap-ok/);
    },
    ...extra,
  };
}

async function expectProvisionFailure(p: Promise<unknown>, step: ProvisionError['step']): Promise<void> {
  await assert.rejects(p, (e: unknown) => e instanceof ProvisionError && e.step === step && e.cleanedUp);
}

async function runToEnd(c: CaseContext, settings: TeardownSettings): Promise<CaseOutcome> {
  const g = await provisionGuarded(guard(c));
  const r = await finishGuarded(c.rig.provider, c.ledger, c.runId, g.instance, g.launchedAt, settings, 1.5);
  assert.ok(r.cost && r.cost.usd >= 0);
  return { kept: r.action === 'kept' || r.action === 'stopped' ? 1 : 0 };
}

/** A multi-node launch of `size` nodes (issue 36.5); bootstrap logs in to every node with OpenSSH. */
function clusterGuard(c: CaseContext, size: number, extra: Partial<ClusterGuardOptions> = {}): ClusterGuardOptions {
  return {
    provider: c.rig.provider,
    ledger: c.ledger,
    request: request(c.rig, c.runId),
    size,
    pricePerHour: 1.5,
    sshTimeoutMs: 4000,
    sshIntervalMs: 20,
    cleanupTimeoutMs: 10_000,
    bootstrap: async (nodes) => {
      for (const i of nodes) assert.match(await sshLogin(sshd, i.publicIp ?? '', i.sshPort, 'echo bootstrap-ok'), /bootstrap-ok/);
    },
    ...extra,
  };
}

/**
 * What the provider made for the run's nodes, as the emulator holds it: EC2's cluster placement group and the nodes'
 * security group admitting its own members, GCP's firewall rule between instances with the run's tag. Lambda: none.
 */
function clusterNetwork(c: CaseContext): string[] {
  if (c.rig.kind === 'ec2') {
    const emu = c.rig.emu as Ec2Emulator;
    const pg = emu.placementGroups.get(placementGroupName(c.runId));
    const sg = emu.groups.find((g) => g.name === nodesGroupName(c.runId));
    return [
      ...(pg ? [`placement group ${pg.strategy}`] : []),
      ...(sg ? [`security group admitting ${sg.peers?.includes(sg.id) ? 'itself' : JSON.stringify(sg.peers)}`] : []),
    ];
  }
  if (c.rig.kind === 'gcp') {
    const fw = (c.rig.emu as GcpEmulator).firewalls.get(clusterTagFor(c.runId)) as { sourceTags?: string[]; targetTags?: string[] } | undefined;
    return fw ? [`firewall ${JSON.stringify(fw.sourceTags)} -> ${JSON.stringify(fw.targetTags)}`] : [];
  }
  return [];
}

/** Each launched node's placement as its launch request asked for it: EC2's placement group and groups, GCP's tags. */
function nodePlacement(c: CaseContext): string[] {
  const raw = [...c.rig.emu.instances.values()].filter((i) => i.tags[RUN_ID_TAG] === c.runId || JSON.stringify(i.request).includes(c.runId));
  if (c.rig.kind === 'ec2') {
    const nodes = (c.rig.emu as Ec2Emulator).groups.find((g) => g.name === nodesGroupName(c.runId))?.id;
    return raw.map((i) => {
      const q = i.request as URLSearchParams;
      return `${i.zone} ${q.get('Placement.GroupName')} ${[...q.entries()].some(([k, v]) => /SecurityGroupId/.test(k) && v === nodes) ? 'in the nodes group' : 'outside'}`;
    });
  }
  if (c.rig.kind === 'gcp')
    return raw.map((i) => `${i.zone} ${JSON.stringify((i.request as { tags?: { items?: string[] } }).tags?.items?.includes(clusterTagFor(c.runId)))}`);
  return raw.map((i) => i.region);
}

const cases: Record<string, (c: CaseContext) => Promise<CaseOutcome>> = {
  'no fault, run finishes, policy terminate': (c) => runToEnd(c, { policy: 'terminate' }),
  'capacity error at launch': async (c) => {
    c.rig.emu.inject(c.rig.ops.launch, { kind: 'capacity' }, 10);
    await expectProvisionFailure(provisionGuarded(guard(c)), 'launch');
    return {};
  },
  '429 / throttling at launch, then success': async (c) => {
    c.rig.emu.inject(c.rig.ops.launch, { kind: 'status', status: 429 }, 1);
    return runToEnd(c, { policy: 'terminate' });
  },
  'persistent 5xx at launch': async (c) => {
    c.rig.emu.inject(c.rig.ops.launch, { kind: 'status', status: 500 }, 20);
    await expectProvisionFailure(provisionGuarded(guard(c)), 'launch');
    return {};
  },
  'launch request times out': async (c) => {
    c.rig.emu.inject(c.rig.ops.launch, { kind: 'hang' }, 20);
    await expectProvisionFailure(provisionGuarded(guard(c)), 'launch');
    return {};
  },
  'launch happens but the answer is lost (crash between launch and record)': async (c) => {
    c.rig.emu.inject(c.rig.ops.launch, { kind: 'drop-after' }, 1);
    // EC2 and GCP retry with the same idempotency token and carry on; Lambda cannot, and its cleanup finds the instance by name.
    try {
      await runToEnd(c, { policy: 'terminate' });
    } catch (e) {
      assert.ok(e instanceof ProvisionError && e.step === 'launch' && e.cleanedUp, String(e));
    }
    return {};
  },
  'instance created, then the answer hangs': async (c) => {
    // The cloud made the instance and never answered: the client's timeout fires with an instance billing.
    c.rig.emu.inject(c.rig.ops.launch, { kind: 'hang-after' }, 1);
    // EC2 and GCP retry with the same idempotency token and carry on; Lambda's cleanup finds the instance by name.
    try {
      await runToEnd(c, { policy: 'terminate' });
    } catch (e) {
      assert.ok(e instanceof ProvisionError && e.step === 'launch' && e.cleanedUp, String(e));
    }
    return {};
  },
  'Stop pressed while the launch call is out (the cloud made the instance, the answer never came)': async (c) => {
    c.rig.emu.inject(c.rig.ops.launch, { kind: 'hang-after' }, 1);
    const ac = new AbortController();
    // Stop lands once the cloud has the launch request (and has made the instance), its answer still out.
    const watch = setInterval(() => {
      if (c.rig.emu.calls.includes(c.rig.ops.launch)) setTimeout(() => ac.abort(), 50);
    }, 10);
    ac.signal.addEventListener('abort', () => clearInterval(watch));
    await assert.rejects(
      provisionGuarded(guard(c, { signal: ac.signal })),
      (e: unknown) => e instanceof ProvisionError && e.step === 'launch' && e.cause instanceof ProviderError && e.cause.code === 'aborted' && e.cleanedUp,
    );
    // May be running until cleanup has looked through the window; then terminated, and it was.
    assert.deepEqual(c.ledger.states.slice(-2), ['launch-unknown', 'terminated']);
    return {};
  },
  'every answer to the launch is lost': async (c) => {
    c.rig.emu.inject(c.rig.ops.launch, { kind: 'drop-after' }, 50);
    await assert.rejects(provisionGuarded(guard(c)), (e: unknown) => e instanceof ProvisionError && e.step === 'launch' && e.cleanedUp);
    assert.deepEqual(c.ledger.states.slice(-2), ['launch-unknown', 'terminated']);
    return {};
  },
  'instance never reachable over SSH': async (c) => {
    c.rig.emu.instanceIp = '127.0.0.2';
    await expectProvisionFailure(provisionGuarded(guard(c, { sshTimeoutMs: 600 })), 'ssh');
    return {};
  },
  'describe fails with 5xx while waiting for SSH': async (c) => {
    c.rig.emu.inject(c.rig.ops.describe, { kind: 'status', status: 503 }, 1);
    return runToEnd(c, { policy: 'terminate' });
  },
  'cancelled while waiting for SSH': async (c) => {
    c.rig.emu.bootMs = 10_000;
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 150);
    // On a loaded machine the abort may land while the launch call is still out: both paths must clean up.
    await assert.rejects(
      provisionGuarded(guard(c, { signal: ac.signal, sshTimeoutMs: 20_000 })),
      (e: unknown) =>
        e instanceof ProvisionError &&
        (e.step === 'ssh' || e.step === 'launch') &&
        e.cause instanceof ProviderError &&
        e.cause.code === 'aborted' &&
        e.cleanedUp,
    );
    return {};
  },
  'bootstrap fails': async (c) => {
    await expectProvisionFailure(
      provisionGuarded(
        guard(c, {
          bootstrap: async () => {
            throw new Error('pip install failed');
          },
        }),
      ),
      'bootstrap',
    );
    return {};
  },
  'run fails, policy stop': (c) => runToEnd(c, { policy: 'stop' }),
  'run finishes, policy keep without a watchdog': async (c) => {
    const g = await provisionGuarded(guard(c));
    const r = await finishGuarded(c.rig.provider, c.ledger, c.runId, g.instance, g.launchedAt, { policy: 'keep' }, 1.5);
    assert.equal(r.action, 'terminated');
    assert.match(r.reason ?? '', /watchdog/);
    return {};
  },
  'run finishes, policy keep with the watchdog armed': async (c) => {
    const out = await runToEnd(c, { policy: 'keep', idleMinutes: 30 });
    assert.equal(out.kept, 1);
    await nextActivation();
    // Kept on purpose is not an orphan…
    const rec = await reconcile([c.rig.provider], c.ledger);
    assert.equal(rec.orphans.length, 0);
    assert.equal(rec.live.length, 1);
    return out;
  },
  'run finishes, policy keep; later the watchdog powers the idle instance off': async (c) => {
    const g = await provisionGuarded(guard(c));
    const r = await finishGuarded(c.rig.provider, c.ledger, c.runId, g.instance, g.launchedAt, { policy: 'keep', idleMinutes: 30 }, 1.5);
    assert.equal(r.action, 'kept');
    const raw = [...c.rig.emu.instances.values()].find((i) => i.name === g.instance.name)!;
    c.rig.emu.guestPowerOff(raw.id);
    await nextActivation();
    const rec = await reconcile([c.rig.provider], c.ledger);
    if (c.rig.kind === 'ec2') {
      // Launched with InstanceInitiatedShutdownBehavior=terminate: the power-off ended it.
      assert.deepEqual(rec.orphans, []);
    } else {
      // GCP keeps a powered-off VM as TERMINATED (stopped) with its disk billing; Lambda bills the instance until
      // it is terminated through the API. Kept for a watchdog that has since powered it off: an orphan now.
      assert.equal(rec.orphans.length, 1, JSON.stringify(rec));
      assert.match(rec.orphans[0]!.reason, /powered it off|does not answer/);
      assert.equal(await terminateOrphans([c.rig.provider], c.ledger, rec.orphans), 1);
    }
    return {};
  },
  'terminate fails once at the end of the run': async (c) => {
    c.rig.emu.inject(c.rig.ops.terminate, { kind: 'status', status: 500 }, 1);
    return runToEnd(c, { policy: 'terminate' });
  },
  'spot instance reclaimed mid-run': async (c) => {
    const g = await provisionGuarded(guard(c, { request: request(c.rig, c.runId, true) }));
    const raw = [...c.rig.emu.instances.values()].find((i) => i.name === g.instance.name)!;
    c.rig.emu.reclaim(raw.id);
    const check = await checkInstance(c.rig.provider, c.ledger, c.runId, g.instance.id);
    assert.equal(check.alive, false);
    // Lambda sells no spot; for the clouds that do, the run is marked interrupted and resumable.
    assert.equal(check.interrupted, c.rig.kind !== 'lambda');
    assert.equal((await c.ledger.get(c.runId))?.state, c.rig.kind !== 'lambda' ? 'interrupted' : 'terminated');
    return {};
  },
  'extension host crashes after launch, before recording it': async (c) => {
    // The ledger got its 'launching' line, then the process died inside the launch call.
    await c.ledger.update(c.runId, {
      provider: c.rig.provider.kind,
      region: c.rig.region,
      instanceType: c.rig.instanceType,
      spot: false,
      state: 'launching',
      holderPid: deadPid,
    });
    await c.rig.provider.launch(request(c.rig, c.runId));
    await nextActivation();
    // Next activation: reconcile by tag/name and terminate.
    const rec = await reconcile([c.rig.provider], c.ledger);
    assert.equal(rec.orphans.length, 1, JSON.stringify(rec));
    assert.match(rec.orphans[0]!.reason, /never recorded/);
    assert.equal(await terminateOrphans([c.rig.provider], c.ledger, rec.orphans), 1);
    return {};
  },
  'extension host crashes (or VS Code closes) mid-run': async (c) => {
    const g = await provisionGuarded(guard(c));
    await c.ledger.update(c.runId, { holderPid: deadPid });
    // The next window opens after the listing lag (a fresh GCP insert can stay unlisted that long, as here in CI).
    await nextActivation();
    const rec = await reconcile([c.rig.provider], c.ledger);
    assert.deepEqual(
      rec.orphans.map((o) => o.instance.id),
      [g.instance.id],
    );
    assert.equal(await terminateOrphans([c.rig.provider], c.ledger, rec.orphans), 1);
    assert.equal((await c.ledger.get(c.runId))?.state, 'terminated');
    return {};
  },
  'multi-node: 3 nodes in one zone and one network, the run ends, every node and the network go': async (c) => {
    const g = await provisionClusterGuarded(clusterGuard(c, 3));
    assert.equal(new Set(g.instances.map((i) => i.id)).size, 3);
    assert.equal(new Set(g.instances.map((i) => i.runId)).size, 1, 'every node carries the run id');
    const placed = nodePlacement(c);
    assert.equal(placed.length, 3);
    assert.equal(new Set(placed).size, 1, `one zone, one placement: ${JSON.stringify(placed)}`);
    if (c.rig.kind === 'ec2') assert.match(placed[0]!, new RegExp(`${placementGroupName(c.runId)} in the nodes group$`));
    if (c.rig.kind === 'gcp') assert.match(placed[0]!, / true$/);
    const expected = {
      ec2: ['placement group cluster', 'security group admitting itself'],
      gcp: [`firewall ["${clusterTagFor(c.runId)}"] -> ["${clusterTagFor(c.runId)}"]`],
      lambda: [],
    };
    assert.deepEqual(clusterNetwork(c), expected[c.rig.kind]);
    await finishGuarded(c.rig.provider, c.ledger, c.runId, g.instances[0]!, g.launchedAt, { policy: 'terminate' }, 4.5);
    assert.deepEqual(clusterNetwork(c), [], 'the placement group, the nodes security group, the firewall rule are gone');
    return {};
  },
  'multi-node: instance 2 of 3 is refused (no capacity in the first node zone)': async (c) => {
    // The refusal comes for the second launch: the first node is up, the network made.
    const g = clusterGuard(c, 3, { log: (l) => /^node 1 of 3/.test(l) && c.rig.emu.inject(c.rig.ops.launch, { kind: 'capacity' }, 10) });
    await expectProvisionFailure(provisionClusterGuarded(g), 'launch');
    assert.equal(c.rig.launched(), 1, 'node 2 was refused, node 3 never asked for');
    assert.deepEqual(clusterNetwork(c), []);
    return {};
  },
  'multi-node: the extension host dies after 2 of 3 launches': async (c) => {
    // As provisionClusterGuarded leaves it when the process dies inside the third launch call.
    const base = request(c.rig, c.runId);
    await c.ledger.update(c.runId, {
      provider: c.rig.provider.kind,
      region: c.rig.region,
      instanceType: c.rig.instanceType,
      spot: false,
      nodes: 3,
      state: 'launching',
      holderPid: deadPid,
    });
    await c.rig.provider.prepareCluster?.(base);
    const first = await c.rig.provider.launch(nodeRequest(base, 3, 0, undefined));
    await c.rig.provider.launch(nodeRequest(base, 3, 1, first.zone));
    await nextActivation();
    const rec = await reconcile([c.rig.provider], c.ledger);
    assert.equal(rec.orphans.length, 2, JSON.stringify(rec));
    assert.ok(rec.orphans.every((o) => /never recorded/.test(o.reason)));
    assert.equal(await terminateOrphans([c.rig.provider], c.ledger, rec.orphans), 2);
    assert.deepEqual(clusterNetwork(c), []);
    return {};
  },
  'instance launched outside the ledger (ledger lost)': async (c) => {
    await c.rig.provider.launch({ ...request(c.rig, c.runId), ownerId: 'a1b2c3d4e5f60718' });
    await nextActivation();
    const rec = await reconcile(
      [c.rig.provider],
      new Ledger(join(mkdtempSync(join(tmpdir(), 'rft-empty-')), 'ledger.json')),
      undefined,
      undefined,
      'a1b2c3d4e5f60718',
    );
    assert.equal(rec.orphans.length, 1);
    assert.equal(await terminateOrphans([c.rig.provider], c.ledger, rec.orphans), 1);
    return {};
  },
  "a colleague's instance on the same account is never offered for termination": async (c) => {
    // Launched by Remote Fine-Tune on another machine (another owner id), absent from this ledger.
    const theirs = await c.rig.provider.launch({ ...request(c.rig, `${c.runId}-theirs`), ownerId: 'ffffeeeeddddcccc' });
    await nextActivation();
    const rec = await reconcile(
      [c.rig.provider],
      new Ledger(join(mkdtempSync(join(tmpdir(), 'rft-empty-')), 'ledger.json')),
      undefined,
      undefined,
      'a1b2c3d4e5f60718',
    );
    assert.deepEqual(rec.orphans, []);
    assert.deepEqual(
      rec.others.map((i) => [i.id, i.ownerId]),
      [[theirs.id, 'ffffeeeeddddcccc']],
    );
    // Not ours to stop: the case ends with it running, counted as kept on purpose; the emulator is stopped after.
    await c.rig.provider.terminate(theirs.id);
    return {};
  },
};

/**
 * A restart takes longer than the listing lag: a filtered listing right after the launch may not show the new
 * instance yet (the emulators hide it for SLOW.listLagSec, as AWS documents for EC2), a reconcile later does.
 */
function nextActivation(): Promise<void> {
  return new Promise((r) => setTimeout(r, (SLOW.listLagSec ?? 0) * 1000 + 250));
}

// Control: the same counting sees an orphan when the guard is bypassed, so a 0 above means something.
test('control: an unguarded launch whose SSH never answers is counted as left running', async () => {
  const rig = await makeRig('lambda', sshd.port);
  try {
    rig.emu.instanceIp = '127.0.0.2';
    const i = await rig.provider.launch(request(rig, 'rft-control'));
    await assert.rejects(rig.provider.waitForSsh(i.id, { timeoutMs: 300, intervalMs: 20 }));
    assert.equal(rig.emu.billing().length, 1);
    control = { launched: rig.launched(), orphaned: rig.emu.billing().length };
  } finally {
    await rig.emu.stop();
  }
});

const kinds: CloudKind[] = ['lambda', 'ec2', 'gcp'];

for (const kind of kinds) {
  for (const [name, run] of Object.entries(cases)) {
    test(`${kind}: ${name} → nothing left running`, { timeout: 90_000 }, async () => {
      const rig = await makeRig(kind, sshd.port, 600, SLOW);
      const dir = mkdtempSync(join(tmpdir(), 'rft-ledger-'));
      const ledger = new SpyLedger(join(dir, 'ledger.json'));
      const runId = `rft-20261121-150000-${totals.cases.toString(16).padStart(4, '0')}`;
      let kept = 0;
      let failure: unknown;
      try {
        kept = (await run({ rig, ledger, runId })).kept ?? 0;
      } catch (err) {
        failure = err;
      }
      try {
        // Counted whether or not the case's own assertions held: a failing case still reports what it left behind.
        // Stopped instances count: their disks bill until they are deleted.
        const billing = rig.emu.billing();
        const stopped = billing.filter((i) => i.state === 'stopped').length;
        const running = billing.length;
        totals.cases++;
        totals.launched += rig.launched();
        totals.orphaned += Math.max(0, running - kept);
        totals.kept += kept;
        rows.push(`${kind.padEnd(7)} ${name.padEnd(72)} launched ${rig.launched()} billing ${running} (stopped ${stopped}) kept ${kept}`);
        if (failure) throw failure;
        assert.equal(running - kept, 0, `left billing: ${JSON.stringify(billing.map((i) => [i.id, i.state]))}`);
        if (kept > 0) for (const i of await rig.provider.listOwned()) await rig.provider.terminate(i.id);
        if (kept > 0) assert.equal(rig.emu.billing().length, 0, 'what the policy kept is found by listOwned and goes away');
        // The ledger never says "active" for an instance that is gone.
        const entry = await ledger.get(runId);
        if (entry && running === 0) assert.notEqual(entry.state, 'active', JSON.stringify(entry));
      } finally {
        await rig.emu.stop();
      }
    });
  }
}
