// Issue 40.4: a zone, region or project that is not the cloud's own form of name is refused by the provider
// before any request. Each case runs against the API emulator (test double for the cloud) and counts the
// requests it saw: a refusal that came after a request would have already sent the person's signed call
// wherever the value pointed (`../../victim-project/…` in a GCP URL path, a host of its own for EC2).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ec2Provider } from '../../../src/core/providers/ec2/instances';
import { GcpProvider } from '../../../src/core/providers/gcp/instances';
import type { GcpOptions } from '../../../src/core/providers/gcp/instances';
import { applicationDefaultCredentials } from '../../../src/core/providers/gcp/auth';
import { LambdaProvider } from '../../../src/core/providers/lambda/instances';
import { ProviderError } from '../../../src/core/providers/provider';
import type { LaunchRequest } from '../../../src/core/providers/provider';
import { Ec2Emulator } from '../../emulators/ec2';
import { GcpEmulator } from '../../emulators/gcp';
import { LambdaEmulator } from '../../emulators/lambda';

const fastRetry = { retries: 1, baseDelayMs: 5, maxDelayMs: 20, retryServerErrors: true };
const HOSTILE_ZONE = '../../victim-project/zones/us-central1-a';
const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDW5yH2z0v0dWqkq4mTn7m8r4cJ0m7k0o1o2o3o4o5o6 t@t';

function launchRequest(over: Partial<LaunchRequest>): LaunchRequest {
  return { runId: 'rft-20261127-180000-name', instanceType: 'g2-standard-8', region: 'us-central1', spot: false, sshPublicKey: KEY, ...over };
}

/** Refused as invalid, naming the field and the value. */
function refused(field: RegExp, value: string): (e: unknown) => boolean {
  return (e) => {
    assert.ok(e instanceof ProviderError, `expected a ProviderError, got ${String(e)}`);
    assert.equal(e.code, 'invalid', e.message);
    assert.match(e.message, field);
    assert.ok(e.message.includes(JSON.stringify(value)), `the message names the value: ${e.message}`);
    return true;
  };
}

before(() => {
  process.env.AWS_ACCESS_KEY_ID = 'AKIAEMULATOR000000';
  process.env.AWS_SECRET_ACCESS_KEY = 'emulator-secret';
  delete process.env.AWS_PROFILE;
});

async function gcpSetup(over: Partial<GcpOptions> = {}): Promise<{ emu: GcpEmulator; provider: GcpProvider }> {
  const emu = await new GcpEmulator().start();
  const dir = mkdtempSync(join(tmpdir(), 'rft-gcp-names-'));
  writeFileSync(join(dir, 'sa.json'), emu.serviceAccountJson(), { mode: 0o600 });
  const auth = await applicationDefaultCredentials({ GOOGLE_APPLICATION_CREDENTIALS: join(dir, 'sa.json'), HOME: dir });
  const provider = new GcpProvider({
    project: emu.project,
    zone: 'us-central1-a',
    auth,
    baseUrl: `${emu.url}/compute/v1`,
    retry: fastRetry,
    requestTimeoutMs: 2000,
    operationPollMs: 10,
    operationTimeoutMs: 2000,
    callerIp: async () => '203.0.113.9',
    ...over,
  });
  return { emu, provider };
}

test('gcp: a zone that climbs out of the project path is refused with no request at all; a real zone is asked', async () => {
  const { emu, provider } = await gcpSetup();
  try {
    await assert.rejects(provider.listOffers({ zone: HOSTILE_ZONE }), refused(/target\.zone/, HOSTILE_ZONE));
    await assert.rejects(provider.listOffers({ region: 'us-central1-a/..' }), refused(/target\.region/, 'us-central1-a/..'));
    await assert.rejects(provider.launch(launchRequest({ zone: HOSTILE_ZONE })), refused(/target\.zone/, HOSTILE_ZONE));
    await assert.rejects(provider.launch(launchRequest({ zone: 'us-central1-a%2F..' })), refused(/target\.zone/, 'us-central1-a%2F..'));
    // An instance id from a run record or an answer: its zone part is a path segment too.
    await assert.rejects(provider.describe(`..%2F..%2Fvictim-project/rft-x`), refused(/instance id/, '..%2F..%2Fvictim-project'));
    await assert.rejects(provider.terminate('../rft-x'), refused(/instance id/, '..'));
    await assert.rejects(provider.guestHostKeys('us-central1-a?x=/rft-x'), refused(/instance id/, 'us-central1-a?x='));
    assert.equal(emu.calls.join(', '), '', 'no request reached the cloud, not even for a token');
    assert.equal(emu.instances.size, 0);

    await provider.listOffers({ zone: 'us-central1-a' });
    assert.ok(emu.calls.includes('accelerators'), `a zone name is asked for: ${emu.calls.join(', ')}`);
  } finally {
    await emu.stop();
  }
});

test('gcp: a default zone or project from the settings that is not a name is refused before the token is fetched', async () => {
  const zone = await gcpSetup({ zone: HOSTILE_ZONE });
  try {
    await assert.rejects(zone.provider.listOffers({}), refused(/remoteFinetune\.gcp\.zone/, HOSTILE_ZONE));
    await assert.rejects(zone.provider.launch(launchRequest({})), refused(/remoteFinetune\.gcp\.zone/, HOSTILE_ZONE));
    assert.equal(zone.emu.calls.join(', '), '');
  } finally {
    await zone.emu.stop();
  }
  const project = await gcpSetup({ project: 'mine/../../victim-project' });
  try {
    await assert.rejects(project.provider.listOffers({}), refused(/remoteFinetune\.gcp\.project/, 'mine/../../victim-project'));
    await assert.rejects(project.provider.listOwned(), refused(/remoteFinetune\.gcp\.project/, 'mine/../../victim-project'));
    assert.equal(project.emu.calls.join(', '), '');
  } finally {
    await project.emu.stop();
  }
});

test('ec2: a region that is not a region name (it becomes the endpoint host) is refused with no request', async () => {
  const emu = await new Ec2Emulator().start();
  try {
    // The SDK itself refuses a region that is no host label; one that is a label but no region (a zone written
    // as the region) would still be sent, to a host that is not EC2's.
    for (const hostile of ['evil.example/x?', 'us-east-1a']) {
      const provider = new Ec2Provider({ region: hostile, endpoint: emu.url, maxAttempts: 1, requestTimeoutMs: 2000, callerIp: async () => '203.0.113.7' });
      await assert.rejects(provider.listOffers({ gpu: 'T4' }), refused(/target\.region/, hostile));
      await assert.rejects(provider.launch({ ...launchRequest({}), instanceType: 'g4dn.xlarge', region: hostile }), refused(/target\.region/, hostile));
      await assert.rejects(provider.listOwned(), refused(/target\.region/, hostile));
    }
    const good = new Ec2Provider({ region: 'us-east-1', endpoint: emu.url, maxAttempts: 1, requestTimeoutMs: 2000, callerIp: async () => '203.0.113.7' });
    await assert.rejects(good.listOffers({ gpu: 'T4', zone: 'us-east-1a"><x' }), refused(/target\.zone/, 'us-east-1a"><x'));
    await assert.rejects(
      good.launch({ ...launchRequest({}), instanceType: 'g4dn.xlarge', region: 'us-east-1', zone: 'use1-az1' }),
      (e: unknown) => e instanceof ProviderError && e.code === 'invalid' && /zone id/.test(e.message),
    );
    assert.equal(emu.calls.join(', '), '');
    assert.equal(emu.instances.size, 0);
  } finally {
    await emu.stop();
  }
});

test('lambda: a launch region that is not a region name is refused before the SSH key is registered', async () => {
  const emu = await new LambdaEmulator('secret-key', { launchWindowMs: 5 }).start();
  try {
    const provider = new LambdaProvider({
      apiKey: 'secret-key',
      baseUrl: `${emu.url}/api/v1`,
      launchMinIntervalMs: 5,
      retry: fastRetry,
      requestTimeoutMs: 2000,
    });
    await assert.rejects(provider.launch(launchRequest({ instanceType: 'gpu_1x_a100', region: 'us-east-1&x=1' })), refused(/target\.region/, 'us-east-1&x=1'));
    assert.equal(emu.calls.join(', '), '');
    assert.equal(emu.instances.size, 0);
  } finally {
    await emu.stop();
  }
});
