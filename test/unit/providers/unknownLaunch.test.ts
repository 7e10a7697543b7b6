// A launch whose outcome is unknown stays "may be running" (ledger launch-unknown) until cleanup has looked for
// it, by the launch's own identity, through the provider's consistency window; cleanup allows as long as the
// provider's terminate can take; the sweep keeps running while any ledger entry is uncertain. A provider
// double with a listing lag (what EC2 documents) stands in for the clouds; the matrix runs the real clients.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ledgerNote, Ledger, RECENTLY_TERMINATED_MS, uncertainEntries } from '../../../src/core/runs/store/ledger';
import type { LedgerEntry } from '../../../src/core/runs/store/ledger';
import { provisionGuarded, ProvisionError, reconcile, settleUnknownLaunches } from '../../../src/core/runs/lifecycle/teardown';
import { startUncertainSweep } from '../../../src/core/runs/cost/uncertainSweep';
import { ProviderError } from '../../../src/core/providers/provider';
import type { Instance, LaunchRequest, Provider } from '../../../src/core/providers/provider';
import { SpyLedger } from '../../support/spyLedger';

const ledgerFile = (): string => join(mkdtempSync(join(tmpdir(), 'rft-unknown-')), 'ledger.json');

/** A cloud whose launch makes the instance, then fails as told; its listings omit an instance for lagMs. */
class LaggingCloud implements Provider {
  readonly kind = 'ec2' as const;
  readonly canStop = false;
  readonly made: Array<{ id: string; runId: string; at: number; state: Instance['state'] }> = [];
  readonly terminated: string[] = [];
  constructor(
    private readonly fail: () => Error,
    private readonly lagMs: number,
    readonly consistencyWindowMs: number,
    readonly terminateTimeoutMs?: number,
    private readonly terminateMs = 0,
  ) {}
  private view(m: LaggingCloud['made'][number]): Instance {
    return { provider: 'ec2', id: m.id, runId: m.runId, region: 'r', instanceType: 't', state: m.state, sshPort: 22, sshUser: 'u', spot: false };
  }
  private listed(): Instance[] {
    return this.made.filter((m) => Date.now() - m.at >= this.lagMs && m.state !== 'terminated').map((m) => this.view(m));
  }
  listOffers = async (): Promise<never[]> => [];
  async launch(request: LaunchRequest): Promise<Instance> {
    this.made.push({ id: `i-${this.made.length}`, runId: request.runId, at: Date.now(), state: 'running' });
    throw this.fail();
  }
  waitForSsh = async (): Promise<never> => {
    throw new Error('not used');
  };
  describe = async (): Promise<undefined> => undefined;
  async terminate(id: string, signal?: AbortSignal): Promise<void> {
    if (this.terminateMs)
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(resolve, this.terminateMs);
        signal?.addEventListener('abort', () => {
          clearTimeout(t);
          reject(new ProviderError('aborted', 'cancelled'));
        });
      });
    const m = this.made.find((x) => x.id === id);
    if (m) m.state = 'terminated';
    this.terminated.push(id);
  }
  stop = async (): Promise<void> => undefined;
  listOwned = async (): Promise<Instance[]> => this.listed();
  findLaunched = async (request: LaunchRequest): Promise<Instance[]> => this.listed().filter((i) => i.runId === request.runId);
}

const request: LaunchRequest = { runId: 'rft-20261127-210000-aaaa', instanceType: 't', region: 'r', spot: false, sshPublicKey: 'ssh-ed25519 AAAA x' };

test('a launch that timed out with its instance made: launch-unknown, found once the listing shows it, terminated, then terminated in the ledger', async () => {
  const cloud = new LaggingCloud(() => new ProviderError('timeout', 'RunInstances timed out'), 300, 800);
  const ledger = new SpyLedger(ledgerFile());
  await assert.rejects(provisionGuarded({ provider: cloud, ledger, request, sshTimeoutMs: 100, cleanupTimeoutMs: 5000 }), (e: unknown) => {
    assert.ok(e instanceof ProvisionError && e.step === 'launch' && e.cleanedUp, String(e));
    return true;
  });
  assert.deepEqual(cloud.terminated, ['i-0'], 'the instance the listing showed only after its lag');
  assert.deepEqual(ledger.states, ['launching', 'launch-unknown', 'terminated']);
});

test('a launch refused outright (capacity) is not waited on: nothing was made, no consistency window', async () => {
  const cloud = new LaggingCloud(() => new ProviderError('capacity', 'InsufficientInstanceCapacity'), 0, 60_000);
  cloud.launch = async (): Promise<Instance> => {
    throw new ProviderError('capacity', 'InsufficientInstanceCapacity');
  };
  const ledger = new SpyLedger(ledgerFile());
  const t0 = Date.now();
  await assert.rejects(provisionGuarded({ provider: cloud, ledger, request, sshTimeoutMs: 100 }), ProvisionError);
  assert.ok(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms`);
  assert.deepEqual(ledger.states, ['launching', 'terminated']);
});

test("cleanup allows as long as the provider's terminate can take (a GCP delete is awaited for minutes), not only its own budget", async () => {
  const cloud = new LaggingCloud(() => new ProviderError('aborted', 'cancelled'), 0, 0, 2000, 400);
  const ledger = new SpyLedger(ledgerFile());
  await assert.rejects(provisionGuarded({ provider: cloud, ledger, request, sshTimeoutMs: 100, cleanupTimeoutMs: 50 }), (e: unknown) => {
    assert.ok(e instanceof ProvisionError && e.cleanedUp, String(e));
    return true;
  });
  assert.equal(ledger.states.at(-1), 'terminated');
});

const entry = (state: LedgerEntry['state'], extra: Partial<LedgerEntry> = {}): LedgerEntry => ({
  runId: `rft-${state}`,
  provider: 'ec2',
  region: 'r',
  instanceType: 't',
  spot: false,
  state,
  holderPid: 999_999_999,
  holderHost: hostname(),
  updatedAt: Date.now(),
  ...extra,
});

test('uncertain entries: launch-unknown, cleanup-failed and recently terminated; the Runs view and orphan report name the first two', () => {
  const now = Date.now();
  const all = [
    entry('launch-unknown'),
    entry('cleanup-failed'),
    entry('terminated', { runId: 'recent', endedAt: now - 60_000 }),
    entry('terminated', { runId: 'old', endedAt: now - RECENTLY_TERMINATED_MS - 1 }),
    entry('active'),
    entry('kept'),
  ];
  assert.deepEqual(
    uncertainEntries(all, now).map((e) => e.runId),
    ['rft-launch-unknown', 'rft-cleanup-failed', 'recent'],
  );
  assert.equal(ledgerNote(entry('launch-unknown')), 'launch outcome unknown: may be running');
  assert.equal(ledgerNote(entry('active')), undefined);
});

test('the sweep runs periodically while an entry is uncertain, and not once none is', async () => {
  let entries: LedgerEntry[] = [entry('launch-unknown')];
  let sweeps = 0;
  const s = startUncertainSweep(
    async () => entries,
    async () => {
      sweeps++;
    },
    20,
  );
  try {
    await new Promise((r) => setTimeout(r, 150));
    assert.ok(sweeps >= 3, `${sweeps} sweeps`);
    entries = [entry('terminated', { endedAt: Date.now() - RECENTLY_TERMINATED_MS - 1 })];
    await new Promise((r) => setTimeout(r, 40));
    const settled = sweeps;
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(sweeps, settled);
  } finally {
    s.stop();
  }
});

test('the orphan report names a launch of unknown outcome whose process is gone; one that never appeared is settled long after', async () => {
  const cloud = new LaggingCloud(() => new Error('unused'), 0, 0);
  cloud.made.push({ id: 'i-9', runId: 'rft-seen', at: 0, state: 'running' });
  const ledger = new Ledger(ledgerFile());
  await ledger.update('rft-seen', { ...entry('launch-unknown'), holderPid: 999_999_999 });
  await ledger.update('rft-never', { ...entry('launch-unknown'), holderPid: 999_999_999 });
  const r = await reconcile([cloud], ledger);
  assert.deepEqual(
    r.orphans.map((o) => [o.instance.id, o.reason]),
    [['i-9', 'launch outcome unknown (cancelled, timed out or its answer lost), and it is running']],
  );
  // Not yet: a listing may still lag.
  assert.equal(await settleUnknownLaunches(ledger, r), 0);
  assert.equal(await settleUnknownLaunches(ledger, r, undefined, Date.now() + RECENTLY_TERMINATED_MS + 1), 1);
  assert.equal((await ledger.get('rft-never'))?.state, 'terminated');
  assert.equal((await ledger.get('rft-seen'))?.state, 'launch-unknown');
});
