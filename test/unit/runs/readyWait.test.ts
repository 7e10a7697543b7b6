// Time to ready (issue 32.5): the wait for SSH after a launch scales with the instance (8-GPU Lambda and EC2
// instances commonly take 10–30 minutes; the old fixed 15 minutes terminated some that were about to answer),
// the spec's target.ready_timeout_min overrides it, and the usual wait is billed in the cost before launch.
// The launch is the real RunManager → launchAttempt → provisionGuarded path with a provider stand-in whose
// waitForSsh records the limit it was given and then reports a timeout (so the guard terminates the instance).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readyWait, describeReadyWait } from '../../../src/core/providers/readyWait';
import { launchCost } from '../../../src/core/runs/cost/launchCost';
import { ProviderError } from '../../../src/core/providers/provider';
import type { Instance, Offer, Provider, ProviderKind } from '../../../src/core/providers/provider';
import { testRunManager } from '../../support/runHosts';

function offer(provider: ProviderKind, gpuCount: number): Offer {
  return {
    provider,
    instanceType: gpuCount === 8 ? 'gpu_8x_h100_sxm5' : 'gpu_1x_h100_pcie',
    gpu: 'H100',
    gpuCount,
    vramGiB: 80,
    region: 'us-east-1',
    pricePerHour: 2.49 * gpuCount,
    spot: false,
    capacity: 'unknown',
  };
}

/** A cloud whose instances never answer SSH: it records the wait it was asked for and what it terminated. */
function silentCloud(kind: ProviderKind): Provider & { waits: number[]; terminated: string[] } {
  const waits: number[] = [];
  const terminated: string[] = [];
  const inst = (id: string): Instance =>
    ({
      id,
      provider: kind,
      state: 'running',
      instanceType: 'x',
      region: 'us-east-1',
      sshUser: 'ubuntu',
      sshPort: 22,
      publicIp: '203.0.113.5',
    }) as unknown as Instance;
  return {
    kind,
    canStop: false,
    waits,
    terminated,
    listOffers: async () => [],
    launch: async () => inst('i-1'),
    waitForSsh: async (_id, o) => {
      waits.push(o.timeoutMs);
      throw new ProviderError('timeout', `SSH did not answer within ${Math.round(o.timeoutMs / 1000)} s`, kind);
    },
    describe: async (id) => inst(id),
    terminate: async (id) => {
      terminated.push(id);
    },
    stop: async () => undefined,
    listOwned: async () => [],
  };
}

async function sshWaitFor(kind: ProviderKind, gpuCount: number, target: Record<string, unknown> = {}): Promise<number> {
  const provider = silentCloud(kind);
  const storage = mkdtempSync(join(tmpdir(), 'rft-ready-'));
  const ws = mkdtempSync(join(tmpdir(), 'rft-ready-ws-'));
  writeFileSync(join(ws, 'train.py'), 'print(1)\n');
  const m = testRunManager(storage, { hostKeyStore: join(storage, 'known_hosts'), agentSocket: null }, { providerFor: () => provider });
  const spec = { version: 1, name: 'ready', command: 'python train.py', target: { provider: kind, gpu: 'H100', gpu_count: gpuCount, ...target } };
  try {
    await assert.rejects(
      m.start({
        specPath: join(ws, 'finetune.yaml'),
        specText: JSON.stringify(spec),
        spec,
        name: 'ready',
        workspaceDir: ws,
        env: {},
        target: { kind: 'cloud', provider, offer: offer(kind, gpuCount), sshPublicKey: 'ssh-ed25519 AAAA test', identityFile: join(ws, 'id') },
        gpu: 'H100',
        teardown: { policy: 'terminate' },
      }),
      /did not answer/,
    );
  } finally {
    await m.dispose();
  }
  assert.deepEqual(provider.terminated, ['i-1'], 'an instance that never answered is terminated');
  assert.equal(provider.waits.length, 1);
  return provider.waits[0]!;
}

test('the launch waits for SSH as long as the instance needs: 15 min for one GPU, 45 min for 8 on Lambda and EC2', async () => {
  assert.equal(await sshWaitFor('lambda', 1), 15 * 60_000);
  assert.equal(await sshWaitFor('lambda', 8), 45 * 60_000, 'an 8-GPU Lambda instance is not given up after 15 minutes');
  assert.equal(await sshWaitFor('ec2', 8), 45 * 60_000);
  assert.equal(await sshWaitFor('gcp', 8), 30 * 60_000);
});

test("the spec's target.ready_timeout_min decides when it gives one", async () => {
  assert.equal(await sshWaitFor('lambda', 8, { ready_timeout_min: 60 }), 60 * 60_000);
  assert.equal(await sshWaitFor('ec2', 1, { ready_timeout_min: 5 }), 5 * 60_000);
});

test('the defaults per provider and GPU count', () => {
  const t = (p: ProviderKind, n: number): [number, number] => [readyWait(p, n).typicalMinutes, readyWait(p, n).timeoutMinutes];
  assert.deepEqual(t('lambda', 1), [4, 15]);
  assert.deepEqual(t('lambda', 2), [6, 19]);
  assert.deepEqual(t('lambda', 8), [20, 45]);
  assert.deepEqual(t('ec2', 1), [5, 15]);
  assert.deepEqual(t('ec2', 8), [20, 45]);
  assert.deepEqual(t('gcp', 8), [12, 30]);
  assert.deepEqual(t('ssh', 8), [0, 15]);
  assert.equal(readyWait('lambda', 8, 90).timeoutMinutes, 90);
  assert.equal(readyWait('lambda', 8, 90).fromSpec, true);
});

test('the usual wait is in the cost and the confirmation names it with its limit', () => {
  const length = { known: true, hours: 2, hoursLow: 1.5, hoursHigh: 2.5, steps: 1000, tokensPerStep: 1, tokensPerSecond: 1, basis: 'b' } as const;
  const o = offer('lambda', 8);
  const one = launchCost(o, length, readyWait('lambda', 1));
  const eight = launchCost(o, length, readyWait('lambda', 8));
  // $19.92/h: 2 h training + (20 min to ready + 3 min setup) = 2.383 h → $47.48 (Lambda bills per minute started).
  assert.equal(eight.estimate!.overheadHours.toFixed(3), '0.383');
  assert.equal(eight.estimate!.totalUsd, 47.48);
  assert.ok(eight.estimate!.totalUsd - one.estimate!.totalUsd > (16 / 60) * o.pricePerHour - 0.01, 'the 8-GPU wait costs 16 min more');
  assert.match(eight.text, /about \$47\.48 for this run/);
  const line = describeReadyWait(readyWait('lambda', 8), 'lambda', 8);
  assert.equal(
    line,
    'Time to ready: lambda instances with 8 GPUs usually answer SSH in about 20 min (billed, included above); the launch waits up to 45 min (the default for 8 GPUs; set target.ready_timeout_min to change it) before it terminates the instance.',
  );
  assert.match(describeReadyWait(readyWait('ec2', 1, 25), 'ec2', 1), /waits up to 25 min \(target\.ready_timeout_min 25\)/);
});
