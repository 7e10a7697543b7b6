// Projects with OS Login (enable-oslogin=TRUE in project metadata, often set by an organisation policy): the
// guest then ignores the ssh-keys metadata, so a key put there opens nothing. The provider must put the key
// in the caller's OS Login profile (users.importSshPublicKey) and log in as the POSIX user OS Login returns,
// or say exactly what to do. Against the Compute Engine + OS Login emulator (test double): the keys an
// instance accepts are computed as the guest agent does (emu.authorizedKeys).
import { test } from 'node:test';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { GcpProvider } from '../../../src/core/providers/gcp/instances';
import { serviceAccountTokenSource, tokenSourceFromJson } from '../../../src/core/providers/gcp/auth';
import type { TokenSource } from '../../../src/core/providers/gcp/auth';
import { ProviderError } from '../../../src/core/providers/provider';
import { GcpEmulator } from '../../emulators/gcp';
import { OsLogin } from '../../emulators/gcpOsLogin';

const PUB = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl rft-oslogin';
const fastRetry = { retries: 1, baseDelayMs: 5, maxDelayMs: 20, retryServerErrors: true };

function provider(emu: GcpEmulator, auth?: TokenSource): GcpProvider {
  const key = JSON.parse(emu.serviceAccountJson()) as Parameters<typeof serviceAccountTokenSource>[0];
  return new GcpProvider({
    project: emu.project,
    zone: 'us-central1-a',
    auth: auth ?? serviceAccountTokenSource(key),
    baseUrl: `${emu.url}/compute/v1`,
    osLoginBaseUrl: `${emu.url}/oslogin/v1`,
    retry: fastRetry,
    requestTimeoutMs: 2000,
    operationPollMs: 10,
    operationTimeoutMs: 5000,
    callerIp: async () => '203.0.113.9',
  });
}

test("gcp os login: with enable-oslogin=TRUE the key goes to the caller's OS Login profile and the instance is reached as its POSIX user", async () => {
  const emu = await new GcpEmulator().start();
  try {
    emu.projectMetadata = [{ key: 'enable-oslogin', value: 'TRUE' }];
    emu.osLogin.loginRole.add(emu.clientEmail);
    const p = provider(emu);
    const inst = await p.launch({ runId: 'rft-20261121-150000-osl1', instanceType: 'g2-standard-8', region: 'us-central1', spot: false, sshPublicKey: PUB });
    const posix = OsLogin.usernameOf(emu.clientEmail);
    assert.equal(inst.sshUser, posix, 'the POSIX user OS Login made for the service account');
    assert.deepEqual(emu.authorizedKeys(inst.id, inst.sshUser), [PUB], 'the instance accepts our key for that user');
    assert.ok(emu.calls.includes('oslogin-import'));
    assert.equal((await p.describe(inst.id))?.sshUser, posix, 'describe (what waitForSsh returns) agrees');
    // Without OS Login, the metadata key is what opens the default user (and no profile is touched).
    const plain = await new GcpEmulator().start();
    try {
      const q = provider(plain);
      const i2 = await q.launch({ runId: 'rft-20261121-150000-osl2', instanceType: 'g2-standard-8', region: 'us-central1', spot: false, sshPublicKey: PUB });
      assert.equal(i2.sshUser, 'ubuntu');
      assert.deepEqual(plain.authorizedKeys(i2.id, 'ubuntu'), [PUB]);
      assert.ok(!plain.calls.includes('oslogin-import'));
    } finally {
      await plain.stop();
    }
  } finally {
    await emu.stop();
  }
});

test('gcp os login: an identity without roles/compute.osLogin on the instance is told which role to grant, and the instance does not outlive the launch', async () => {
  const emu = await new GcpEmulator().start();
  try {
    emu.projectMetadata = [{ key: 'enable-oslogin', value: 'true' }];
    await assert.rejects(
      provider(emu).launch({ runId: 'rft-20261121-150000-osl3', instanceType: 'g2-standard-8', region: 'us-central1', spot: false, sshPublicKey: PUB }),
      (e: unknown) => e instanceof ProviderError && e.code === 'auth' && /roles\/compute\.osAdminLogin/.test(e.message) && e.message.includes(emu.clientEmail),
    );
    assert.equal(emu.billing().length, 0, 'deleted again: nobody could have logged in');
  } finally {
    await emu.stop();
  }
});

test('gcp os login: credentials that name no account, and 2FA projects, are refused before anything is created, saying what to do', async () => {
  const emu = await new GcpEmulator().start();
  try {
    emu.projectMetadata = [{ key: 'enable-oslogin', value: 'TRUE' }];
    // A federated identity used directly (no service account impersonated) has no OS Login profile of its own.
    emu.oauth.poolProviders.set('//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/x', new Map([['tok', 'ci']]));
    const file = join(mkdtempSync(join(tmpdir(), 'rft-osl-')), 'token');
    writeFileSync(file, 'tok');
    const fed = tokenSourceFromJson(
      JSON.stringify({
        type: 'external_account',
        audience: '//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/x',
        subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
        token_url: `${emu.url}/sts/v1/token`,
        credential_source: { file },
      }),
    )!;
    await assert.rejects(
      provider(emu, fed).launch({ runId: 'rft-20261121-150000-osl4', instanceType: 'g2-standard-8', region: 'us-central1', spot: false, sshPublicKey: PUB }),
      (e: unknown) =>
        e instanceof ProviderError &&
        e.code === 'auth' &&
        /OS Login/.test(e.message) &&
        /service_account_impersonation_url|gcloud compute os-login ssh-keys add/.test(e.message),
    );
    emu.projectMetadata.push({ key: 'enable-oslogin-2fa', value: 'TRUE' });
    await assert.rejects(
      provider(emu).launch({ runId: 'rft-20261121-150000-osl5', instanceType: 'g2-standard-8', region: 'us-central1', spot: false, sshPublicKey: PUB }),
      (e: unknown) => e instanceof ProviderError && e.code === 'unsupported' && /2-step|2FA/i.test(e.message),
    );
    assert.ok(!emu.calls.includes('insert'), emu.calls.join(','));
  } finally {
    await emu.stop();
  }
});
