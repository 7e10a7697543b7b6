// The boot image of a GCP instance: its family is checked with images.getFromFamily before anything is
// created, and the insert names the exact image found. Deep Learning VM families are retired with their OS
// or CUDA line; Compute Engine then answers getFromFamily (and an insert naming the family) with 404. Against
// the Compute Engine emulator (test double) with the real HTTP client and a real service-account JWT.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GcpProvider } from '../../../src/core/providers/gcp/instances';
import { serviceAccountTokenSource } from '../../../src/core/providers/gcp/auth';
import { ProviderError } from '../../../src/core/providers/provider';
import { GcpEmulator } from '../../emulators/gcp';

const PUB = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl rft-gcp-image';
const fastRetry = { retries: 2, baseDelayMs: 5, maxDelayMs: 20, retryServerErrors: true };

async function setup(imageFamily?: string): Promise<{ emu: GcpEmulator; provider: GcpProvider }> {
  const emu = await new GcpEmulator().start();
  const key = JSON.parse(emu.serviceAccountJson()) as Parameters<typeof serviceAccountTokenSource>[0];
  const provider = new GcpProvider({
    project: emu.project,
    zone: 'us-central1-a',
    auth: serviceAccountTokenSource(key),
    baseUrl: `${emu.url}/compute/v1`,
    retry: fastRetry,
    requestTimeoutMs: 2000,
    operationPollMs: 10,
    operationTimeoutMs: 5000,
    callerIp: async () => '203.0.113.9',
    ...(imageFamily ? { imageFamily } : {}),
  });
  return { emu, provider };
}

const bootOf = (emu: GcpEmulator): { sourceImage: string; diskSizeGb: string } =>
  ([...emu.instances.values()][0]!.request as { disks: Array<{ initializeParams: { sourceImage: string; diskSizeGb: string } }> }).disks[0]!.initializeParams;

test('gcp image: the family is resolved with getFromFamily before the insert, which names the newest non-deprecated image of it', async () => {
  const { emu, provider } = await setup();
  try {
    await provider.launch({
      runId: 'rft-20261121-150000-gim1',
      instanceType: 'g2-standard-8',
      region: 'us-central1',
      spot: false,
      sshPublicKey: PUB,
      diskGiB: 150,
    });
    assert.ok(emu.calls.indexOf('image-from-family') >= 0 && emu.calls.indexOf('image-from-family') < emu.calls.indexOf('insert'), emu.calls.join(','));
    assert.equal(bootOf(emu).sourceImage, 'projects/deeplearning-platform-release/global/images/pytorch-2-7-cu128-v20250925-ubuntu-2204-nvidia-570');
    assert.equal(bootOf(emu).diskSizeGb, '150');
  } finally {
    await emu.stop();
  }
});

test('gcp image: a retired family (only deprecated images left) fails before anything is created, naming the family', async () => {
  const { emu, provider } = await setup('common-cu124-debian-11-py310');
  try {
    await assert.rejects(
      provider.launch({ runId: 'rft-20261121-150000-gim2', instanceType: 'g2-standard-8', region: 'us-central1', spot: false, sshPublicKey: PUB }),
      (e: unknown) =>
        e instanceof ProviderError &&
        e.code === 'not-found' &&
        /common-cu124-debian-11-py310/.test(e.message) &&
        /deeplearning-platform-release/.test(e.message),
    );
    assert.equal(emu.calls.filter((c) => c === 'insert' || c === 'firewall-insert').length, 0, emu.calls.join(','));
    assert.equal(emu.instances.size, 0);
  } finally {
    await emu.stop();
  }
});

test("gcp image: a disk smaller than the image is refused before the insert, saying the image's size", async () => {
  const { emu, provider } = await setup();
  try {
    await assert.rejects(
      provider.launch({ runId: 'rft-20261121-150000-gim3', instanceType: 'g2-standard-8', region: 'us-central1', spot: false, sshPublicKey: PUB, diskGiB: 60 }),
      (e: unknown) => e instanceof ProviderError && e.code === 'invalid' && /100 GB/.test(e.message),
    );
    assert.equal(emu.calls.filter((c) => c === 'insert').length, 0);
  } finally {
    await emu.stop();
  }
});
