// GCP provider (real HTTP client and a real RS256-signed service-account JWT) against the Compute Engine
// and OAuth emulator (test double for the cloud), continuing into a real loopback OpenSSH server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GcpProvider } from '../../../src/core/providers/gcp/instances';
import { applicationDefaultCredentials, tokenSourceFromJson } from '../../../src/core/providers/gcp/auth';
import { ProviderError } from '../../../src/core/providers/provider';
import { GcpEmulator } from '../../emulators/gcp';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';

const fastRetry = { retries: 3, baseDelayMs: 5, maxDelayMs: 20, retryServerErrors: true };
let sshd: Sshd;
let pub: string;

before(async () => {
  sshd = await startSshd();
  pub = readFileSync(`${sshd.userKeyPath}.pub`, 'utf8');
});
after(async () => {
  await sshd.stop();
});

async function setup(): Promise<{ emu: GcpEmulator; provider: GcpProvider }> {
  const emu = await new GcpEmulator().start();
  // Application Default Credentials through GOOGLE_APPLICATION_CREDENTIALS, as a user would set it.
  const dir = mkdtempSync(join(tmpdir(), 'rft-gcp-'));
  writeFileSync(join(dir, 'sa.json'), emu.serviceAccountJson(), { mode: 0o600 });
  const auth = await applicationDefaultCredentials({ GOOGLE_APPLICATION_CREDENTIALS: join(dir, 'sa.json'), HOME: dir });
  const provider = new GcpProvider({
    project: emu.project,
    zone: 'us-central1-a',
    auth,
    baseUrl: `${emu.url}/compute/v1`,
    sshPort: sshd.port,
    retry: fastRetry,
    requestTimeoutMs: 2000,
    operationPollMs: 10,
    operationTimeoutMs: 5000,
    callerIp: async () => '203.0.113.9',
  });
  return { emu, provider };
}

test('gcp: ADC service-account JWT is accepted; offers cover N1+T4/V100, G2 L4, A2 A100 40/80, A3 H100 with zone availability', async () => {
  const { emu, provider } = await setup();
  try {
    const offers = await provider.listOffers({ spot: false });
    const byType = new Map(offers.map((o) => [o.instanceType, o]));
    assert.equal(byType.get('n1-standard-8+nvidia-tesla-t4x1')?.capacity, 'unknown');
    assert.equal(byType.get('n1-standard-8+nvidia-tesla-v100x1')?.capacity, 'unavailable', 'V100 not in this zone');
    assert.deepEqual(
      [byType.get('g2-standard-8')?.gpu, byType.get('a2-highgpu-1g')?.gpu, byType.get('a2-ultragpu-1g')?.gpu, byType.get('a3-highgpu-8g')?.gpuCount],
      ['L4', 'A100-40GB', 'A100-80GB', 8],
    );
    assert.equal(byType.get('a3-highgpu-8g')?.capacity, 'unavailable');
    assert.equal(emu.badAssertions, 0);
    assert.equal(tokenSourceFromJson('{"type":"external_account"}'), undefined);
    assert.equal(tokenSourceFromJson('not json'), undefined);
  } finally {
    await emu.stop();
  }
});

test('gcp: launch sends TERMINATE on maintenance, SPOT+DELETE, the DLVM image family, ssh-keys metadata and labels; polls the operation; SSH answers; delete', async () => {
  const { emu, provider } = await setup();
  try {
    const inst = await provider.launch({
      runId: 'rft-20261121-150000-gcp1',
      instanceType: 'g2-standard-8',
      region: 'us-central1',
      spot: true,
      sshPublicKey: pub,
      diskGiB: 250,
    });
    assert.equal(inst.id, 'us-central1-a/rft-20261121-150000-gcp1');
    const raw = [...emu.instances.values()][0]!.request as {
      scheduling: Record<string, unknown>;
      disks: Array<{ initializeParams: { sourceImage: string; diskSizeGb: string } }>;
      metadata: { items: Array<{ key: string; value: string }> };
      labels: Record<string, string>;
    };
    assert.deepEqual(raw.scheduling, {
      provisioningModel: 'SPOT',
      instanceTerminationAction: 'DELETE',
      onHostMaintenance: 'TERMINATE',
      automaticRestart: false,
    });
    assert.match(
      raw.disks[0]!.initializeParams.sourceImage,
      /^projects\/deeplearning-platform-release\/global\/images\/pytorch-2-7-cu128-v\d+-ubuntu-2204-nvidia-570$/,
    );
    assert.equal(raw.disks[0]!.initializeParams.diskSizeGb, '250');
    assert.equal(raw.metadata.items.find((m) => m.key === 'ssh-keys')?.value, `ubuntu:${pub.trim()}`);
    assert.equal(raw.labels['remote-finetune-run'], 'rft-20261121-150000-gcp1');
    const ready = await provider.waitForSsh(inst.id, { timeoutMs: 5000, intervalMs: 20 });
    assert.equal(ready.publicIp, '127.0.0.1');
    assert.equal(ready.spot, true);
    assert.deepEqual(
      (await provider.listOwned()).map((i) => i.id),
      [inst.id],
    );
    // A retried insert with the same requestId does not create a second VM.
    await provider.launch({ runId: 'rft-20261121-150000-gcp1', instanceType: 'g2-standard-8', region: 'us-central1', spot: true, sshPublicKey: pub });
    assert.equal(emu.instances.size, 1);
    await provider.terminate(inst.id);
    assert.equal(emu.billing().length, 0);
    assert.equal(await provider.describe(inst.id), undefined);
    await provider.terminate(inst.id);
  } finally {
    await emu.stop();
  }
});

test('gcp: pool exhaustion in the operation is a capacity error; a preempted spot VM reads as interrupted', async () => {
  const { emu, provider } = await setup();
  try {
    emu.inject('insert', { kind: 'capacity' });
    await assert.rejects(
      // The zone pinned: another zone would be tried otherwise (zoneFailover.test.ts).
      provider.launch({ runId: 'cap-1', instanceType: 'a2-highgpu-1g', region: 'us-central1', spot: false, sshPublicKey: pub, zonePinned: true }),
      (e: unknown) => e instanceof ProviderError && e.code === 'capacity' && /ZONE_RESOURCE_POOL_EXHAUSTED/.test(e.message),
    );
    assert.equal(emu.instances.size, 0);
    const inst = await provider.launch({
      runId: 'spot-1',
      instanceType: 'n1-standard-8+nvidia-tesla-t4x1',
      region: 'us-central1',
      spot: true,
      sshPublicKey: pub,
    });
    const raw = [...emu.instances.values()][0]!;
    assert.deepEqual((raw.request as { guestAccelerators: unknown[] }).guestAccelerators, [
      { acceleratorType: 'zones/us-central1-a/acceleratorTypes/nvidia-tesla-t4', acceleratorCount: 1 },
    ]);
    emu.reclaim(raw.id);
    const d = await provider.describe(inst.id);
    assert.equal(d?.interrupted, true);
    assert.equal(d?.state, 'terminated');
    emu.inject('aggregated', { kind: 'status', status: 503 }, 2);
    assert.deepEqual(await provider.listOwned(), [], 'reads retried through 5xx');
  } finally {
    await emu.stop();
  }
});

test("gcp: SSH is opened by a firewall rule for this machine's /32 only, applied by target tag; a reused rule is verified", async () => {
  const { emu, provider } = await setup();
  try {
    const inst = await provider.launch({
      runId: 'rft-20261121-150000-fw01',
      instanceType: 'g2-standard-8',
      region: 'us-central1',
      spot: false,
      sshPublicKey: pub,
    });
    const rule = emu.firewalls.get('rft-ssh-203-0-113-9') as {
      sourceRanges: string[];
      targetTags: string[];
      allowed: Array<{ IPProtocol: string; ports: string[] }>;
      direction: string;
    };
    assert.deepEqual(rule.sourceRanges, ['203.0.113.9/32'], "never 0.0.0.0/0 (the default network's default-allow-ssh)");
    assert.deepEqual(rule.targetTags, ['rft-ssh-203-0-113-9']);
    assert.deepEqual(rule.allowed, [{ IPProtocol: 'tcp', ports: ['22'] }]);
    assert.equal(rule.direction, 'INGRESS');
    const raw = [...emu.instances.values()].find((i) => `${i.zone}/${i.name}` === inst.id)!;
    assert.deepEqual((raw.request as { tags?: { items?: string[] } }).tags?.items, ['rft-ssh-203-0-113-9'], "the instance carries the rule's target tag");
    // A second launch reuses the rule (no second insert, which would be 409 alreadyExists).
    await provider.launch({ runId: 'rft-20261121-150000-fw02', instanceType: 'g2-standard-8', region: 'us-central1', spot: false, sshPublicKey: pub });
    assert.equal(emu.firewalls.size, 1);
    // Someone widened it: refused before any instance is created.
    rule.sourceRanges = ['0.0.0.0/0'];
    const n = emu.instances.size;
    await assert.rejects(
      provider.launch({ runId: 'rft-20261121-150000-fw03', instanceType: 'g2-standard-8', region: 'us-central1', spot: false, sshPublicKey: pub }),
      (e: unknown) => e instanceof ProviderError && /allows 0\.0\.0\.0\/0/.test(e.message),
    );
    assert.equal(emu.instances.size, n);
  } finally {
    await emu.stop();
  }
});

test('gcp: guest attributes are enabled and the host keys the guest agent publishes are what the first connection checks', async () => {
  const { emu, provider } = await setup();
  try {
    const pin = sshd.knownHostsLine.split(' ').slice(1).join(' ');
    const launched = await provider.launch({
      runId: 'rft-20261121-150000-hk01',
      instanceType: 'g2-standard-8',
      region: 'us-central1',
      spot: false,
      sshPublicKey: pub,
    });
    // Not published yet (404): no keys, the first connection asks the user.
    assert.equal((await provider.waitForSsh(launched.id, { timeoutMs: 5000, intervalMs: 20 })).hostKeys, undefined);
    emu.guestHostKeys = [pin];
    const ready = await provider.waitForSsh(launched.id, { timeoutMs: 5000, intervalMs: 20 });
    assert.deepEqual(ready.hostKeys, [pin]);
  } finally {
    await emu.stop();
  }
});

// Compute Engine answers both its quota and its API rate limit with 403 (cloud.google.com/compute/docs/api/errors:
// quotaExceeded, rateLimitExceeded): a client reading 403 as "auth" tells the person to fix credentials that work.
test('gcp: 403 quotaExceeded is a quota error (not auth, not retried); 403 rateLimitExceeded is retried with backoff', async () => {
  const { emu, provider } = await setup();
  try {
    emu.inject('insert', GcpEmulator.QUOTA_EXCEEDED, 5);
    await assert.rejects(
      provider.launch({
        runId: 'rft-20261121-150000-gq1',
        instanceType: 'g2-standard-8',
        region: 'us-central1',
        zone: 'us-central1-a',
        spot: false,
        sshPublicKey: pub,
      }),
      (e: unknown) => e instanceof ProviderError && e.code === 'quota' && /NVIDIA_L4_GPUS/.test(e.message),
    );
    assert.equal(emu.calls.filter((c) => c === 'insert').length, 1, 'a quota is not retried');
    emu.faults.length = 0;
    emu.inject('get', GcpEmulator.RATE_LIMITED_403, 2);
    const inst = await provider.launch({
      runId: 'rft-20261121-150000-gq2',
      instanceType: 'g2-standard-8',
      region: 'us-central1',
      zone: 'us-central1-a',
      spot: false,
      sshPublicKey: pub,
    });
    assert.equal((await provider.describe(inst.id))?.id, inst.id);
    emu.inject('get', GcpEmulator.RATE_LIMITED_403, 10);
    await assert.rejects(provider.describe(inst.id), (e: unknown) => e instanceof ProviderError && e.code === 'rate-limited');
    emu.faults.length = 0;
    await provider.terminate(inst.id);
  } finally {
    await emu.stop();
  }
});

test('gcp: the VM runs as a service account with Cloud Storage read/write (the default one, or target.service_account), so the host has a metadata token for gs://', async () => {
  const { emu, provider } = await setup();
  try {
    const base = { instanceType: 'n1-standard-8+nvidia-tesla-t4x1', region: 'us-central1', spot: true, sshPublicKey: pub };
    const a = await provider.launch({ ...base, runId: 'sa-1' });
    const b = await provider.launch({ ...base, runId: 'sa-2', serviceAccount: 'trainer@p.iam.gserviceaccount.com' });
    const sa = (id: string): unknown =>
      ([...emu.instances.values()].find((i) => `${i.zone}/${i.name}` === id)!.request as { serviceAccounts?: unknown }).serviceAccounts;
    const scopes = ['https://www.googleapis.com/auth/devstorage.read_write'];
    assert.deepEqual(sa(a.id), [{ email: 'default', scopes }]);
    assert.deepEqual(sa(b.id), [{ email: 'trainer@p.iam.gserviceaccount.com', scopes }]);
  } finally {
    await emu.stop();
  }
});

test('gcp: offers say where their price comes from and when (issue 35.5)', async () => {
  const { emu, provider } = await setup();
  try {
    const offers = await provider.listOffers({ gpu: 'T4' });
    assert.ok(offers.length > 0);
    for (const o of offers) assert.match(o.priceSource ?? '', /^GCP catalog list prices, us-central1, as of 2025/);
  } finally {
    await emu.stop();
  }
});
