// Lambda provider (real HTTP client code) against the Lambda API emulator (test double for the cloud),
// continuing into a real loopback OpenSSH server as the instance.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { LambdaProvider } from '../../../src/core/providers/lambda/instances';
import { ProviderError } from '../../../src/core/providers/provider';
import { LambdaEmulator } from '../../emulators/lambda';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';

const fastRetry = { retries: 4, baseDelayMs: 5, maxDelayMs: 20, retryServerErrors: true };
let sshd: Sshd;
let pub: string;

before(async () => {
  sshd = await startSshd();
  pub = readFileSync(`${sshd.userKeyPath}.pub`, 'utf8');
});
after(async () => {
  await sshd.stop();
});

async function setup(interval = 5): Promise<{ emu: LambdaEmulator; provider: LambdaProvider }> {
  const emu = await new LambdaEmulator('secret-key', { launchWindowMs: interval }).start();
  const provider = new LambdaProvider({
    apiKey: 'secret-key',
    baseUrl: `${emu.url}/api/v1`,
    launchMinIntervalMs: interval,
    retry: fastRetry,
    requestTimeoutMs: 2000,
    sshPort: sshd.port,
  });
  return { emu, provider };
}

test('lambda: offers come from instance-types with capacity per region, 8× A100-80GB read from the name and description', async () => {
  const { emu, provider } = await setup();
  try {
    const offers = await provider.listOffers({});
    const a100 = offers.find((o) => o.instanceType === 'gpu_1x_a100');
    assert.deepEqual(
      { gpu: a100?.gpu, n: a100?.gpuCount, vram: a100?.vramGiB, price: a100?.pricePerHour, region: a100?.region, cap: a100?.capacity },
      { gpu: 'A100-40GB', n: 1, vram: 40, price: 1.29, region: 'us-east-1', cap: 'available' },
    );
    const big = offers.find((o) => o.instanceType === 'gpu_8x_a100_80gb_sxm4');
    assert.deepEqual([big?.gpu, big?.gpuCount, big?.vramGiB], ['A100-80GB', 8, 80]);
    assert.equal(offers.find((o) => o.instanceType === 'gpu_8x_a100')?.capacity, 'unavailable');
    assert.equal(offers.find((o) => o.instanceType === 'gpu_1x_gh200')?.gpu, 'GH200');
    assert.deepEqual((await provider.listOffers({ gpu: 'A100', gpuCount: 1 })).map((o) => o.instanceType).sort(), ['gpu_1x_a100', 'gpu_1x_a100_sxm4']);
    assert.equal((await provider.listOffers({ spot: true })).length, 0, 'Lambda has no spot');
  } finally {
    await emu.stop();
  }
});

test('lambda: launch registers the key once, names the instance after the run, SSH answers on the loopback sshd, terminate ends billing', async () => {
  const { emu, provider } = await setup();
  try {
    const inst = await provider.launch({ runId: 'rft-20261121-150000-abcd', instanceType: 'gpu_1x_a100', region: 'us-east-1', spot: false, sshPublicKey: pub });
    assert.equal(emu.keys.length, 1);
    await provider.launch({ runId: 'rft-20261121-150001-abce', instanceType: 'gpu_1x_a100', region: 'us-east-1', spot: false, sshPublicKey: pub });
    assert.equal(emu.keys.length, 1, 'same public key reused');
    const ready = await provider.waitForSsh(inst.id, { timeoutMs: 5000, intervalMs: 20 });
    assert.equal(ready.state, 'running');
    assert.equal(ready.publicIp, '127.0.0.1');
    const owned = await provider.listOwned();
    assert.deepEqual(owned.map((i) => i.name).sort(), ['rft-20261121-150000-abcd', 'rft-20261121-150001-abce']);
    for (const i of owned) await provider.terminate(i.id);
    assert.equal(emu.billing().length, 0);
    assert.equal(emu.unauthorized, 0);
    await provider.terminate(inst.id);
  } finally {
    await emu.stop();
  }
});

test('lambda: launches are spaced by the minimum interval and a 429 is retried', async () => {
  const { emu, provider } = await setup(150);
  try {
    emu.inject('launch', { kind: 'status', status: 429 }, 2);
    const req = { instanceType: 'gpu_1x_a10', region: 'us-east-1', spot: false, sshPublicKey: pub };
    await Promise.all([provider.launch({ ...req, runId: 'a1' }), provider.launch({ ...req, runId: 'a2' })]);
    assert.equal(emu.calls.filter((c) => c === 'launch').length, 4, 'two 429s, then two launches');
    const t = emu.launchTimes;
    assert.ok(t[t.length - 1]! - t[t.length - 2]! >= 140, `spacing ${t[t.length - 1]! - t[t.length - 2]!} ms`);
    assert.equal(emu.instances.size, 2);
  } finally {
    await emu.stop();
  }
});

test('lambda: capacity, bad key and a 5xx on launch are typed errors; a 5xx launch is not retried (it may have happened)', async () => {
  const { emu, provider } = await setup();
  try {
    const req = { runId: 'c1', instanceType: 'gpu_1x_a100', region: 'us-east-1', spot: false, sshPublicKey: pub };
    emu.inject('launch', { kind: 'capacity' });
    await assert.rejects(provider.launch(req), (e: unknown) => e instanceof ProviderError && e.code === 'capacity' && /capacity/i.test(e.message));
    emu.inject('launch', { kind: 'status', status: 503 });
    await assert.rejects(provider.launch(req), (e: unknown) => e instanceof ProviderError && e.code === 'server');
    assert.equal(emu.calls.filter((c) => c === 'launch').length, 2);
    emu.inject('list-types', { kind: 'status', status: 502 }, 2);
    assert.ok((await provider.listOffers({})).length > 0, 'reads are retried through 5xx');
    const wrong = new LambdaProvider({ apiKey: 'nope', baseUrl: `${emu.url}/api/v1`, retry: fastRetry });
    await assert.rejects(wrong.listOffers({}), (e: unknown) => e instanceof ProviderError && e.code === 'auth');
    assert.equal(emu.instances.size, 0);
  } finally {
    await emu.stop();
  }
});

// Lambda's documented limit (docs.lambda.ai/api/cloud): "Requests to the /instance-operations/launch endpoint
// are limited to one request per 12 seconds"; the emulator refuses closer launches with 429 global/rate-limited.
test('lambda: the emulator enforces the launch limit like the service; our spacing keeps clear of it (12 s by default)', async () => {
  const emu = await new LambdaEmulator('secret-key', { launchWindowMs: 400 }).start();
  try {
    const req = { instanceType: 'gpu_1x_a10', region: 'us-east-1', spot: false, sshPublicKey: pub };
    const unspaced = new LambdaProvider({
      apiKey: 'secret-key',
      baseUrl: `${emu.url}/api/v1`,
      launchMinIntervalMs: 0,
      retry: { ...fastRetry, retries: 2 },
      sshPort: sshd.port,
    });
    await unspaced.launch({ ...req, runId: 'u1' });
    await assert.rejects(unspaced.launch({ ...req, runId: 'u2' }), (e: unknown) => e instanceof ProviderError && e.code === 'rate-limited');
    assert.ok(emu.rateLimited >= 1);
    await new Promise((r) => setTimeout(r, 400));
    const spaced = new LambdaProvider({ apiKey: 'secret-key', baseUrl: `${emu.url}/api/v1`, launchMinIntervalMs: 400, retry: fastRetry, sshPort: sshd.port });
    const before = emu.rateLimited;
    await spaced.launch({ ...req, runId: 's1' });
    await spaced.launch({ ...req, runId: 's2' });
    assert.equal(emu.rateLimited, before, 'no 429 when spaced');
    const byDefault = new LambdaProvider({ apiKey: 'x' }) as unknown as { launchInterval: number };
    assert.equal(byDefault.launchInterval, 12_000);
  } finally {
    await emu.stop();
  }
});

test('lambda: a preempted instance is terminated and interrupted (not "unknown"); an unhealthy one still bills and waitForSsh gives up on it at once', async () => {
  const { emu, provider } = await setup();
  try {
    const req = { instanceType: 'gpu_1x_a10', region: 'us-east-1', spot: false, sshPublicKey: pub };
    const a = await provider.launch({ ...req, runId: 'rft-20261121-150000-pre1' });
    emu.preempt(a.id);
    const d = await provider.describe(a.id);
    assert.deepEqual([d?.state, d?.interrupted], ['terminated', true]);
    assert.deepEqual(
      (await provider.listOwned()).map((i) => i.id),
      [],
      'preempted: not billing, not an orphan',
    );
    const b = await provider.launch({ ...req, runId: 'rft-20261121-150000-unh1' });
    emu.markUnhealthy(b.id);
    const t0 = Date.now();
    await assert.rejects(
      provider.waitForSsh(b.id, { timeoutMs: 10_000, intervalMs: 20 }),
      (e: unknown) => e instanceof ProviderError && e.code === 'unreachable' && /unhealthy/.test(e.message),
    );
    assert.ok(Date.now() - t0 < 2000, 'not waited to the timeout');
    assert.deepEqual(
      (await provider.listOwned()).map((i) => i.id),
      [b.id],
      'unhealthy still bills: owned',
    );
    await provider.terminate(b.id);
  } finally {
    await emu.stop();
  }
});

test('lambda: global/object-does-not-exist is not-found by its code, whatever the status', async () => {
  const { emu, provider } = await setup();
  try {
    assert.equal(await provider.describe('0123456789abcdef0123456789abcdef'), undefined);
    await provider.terminate('0123456789abcdef0123456789abcdef');
    emu.inject('describe', {
      kind: 'status',
      status: 400,
      body: JSON.stringify({ error: { code: 'global/object-does-not-exist', message: 'Specified instance does not exist.' } }),
    });
    assert.equal(await provider.describe('0123456789abcdef0123456789abcdef'), undefined);
  } finally {
    await emu.stop();
  }
});

test("lambda: launches carry owner and run tags; with an owner id, a colleague's rft- instance on the same account is not offered as ours", async () => {
  const emu = await new LambdaEmulator('team-key', { launchWindowMs: 5 }).start();
  try {
    const mk = (ownerId: string): LambdaProvider =>
      new LambdaProvider({ apiKey: 'team-key', baseUrl: `${emu.url}/api/v1`, launchMinIntervalMs: 5, retry: fastRetry, sshPort: sshd.port, ownerId });
    const me = mk('owner-me-1234');
    const colleague = mk('owner-colleague-5678');
    const req = { instanceType: 'gpu_1x_a10', region: 'us-east-1', spot: false, sshPublicKey: pub };
    const mine = await me.launch({ ...req, runId: 'rft-20261121-150000-mine' });
    const theirs = await colleague.launch({ ...req, runId: 'rft-20261121-150000-coll' });
    const tags = (emu.instances.get(mine.id)!.request as { tags?: Array<{ key: string; value: string }> }).tags;
    assert.deepEqual(tags, [
      { key: 'remote-finetune', value: 'owner-me-1234' },
      { key: 'remote-finetune-run-id', value: 'rft-20261121-150000-mine' },
    ]);
    assert.deepEqual(
      (await me.listOwned()).map((i) => i.id),
      [mine.id],
    );
    assert.deepEqual(
      (await colleague.listOwned()).map((i) => i.id),
      [theirs.id],
    );
    await me.terminate(mine.id);
    await colleague.terminate(theirs.id);
  } finally {
    await emu.stop();
  }
});

test('lambda: offers say where their price comes from and when (issue 35.5)', async () => {
  const { emu, provider } = await setup();
  try {
    const offers = await provider.listOffers({});
    assert.ok(offers.length > 0);
    for (const o of offers) assert.match(o.priceSource ?? '', /^Lambda Cloud \/instance-types, \d{4}-\d\d-\d\dT\d\d:\d\dZ$/);
  } finally {
    await emu.stop();
  }
});
