// Where GCP credentials come from besides a service-account key, each against a test double that answers as
// Google's service does: an authorized_user file naming a quota project (sent as x-goog-user-project on API
// calls, as google-auth-library does), the Compute Engine metadata server of a VM (GCE_METADATA_HOST, the
// Metadata-Flavor header both ways), and external_account files (workload identity federation: the subject
// token exchanged at STS, then a service account impersonated through IAM credentials).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GcpProvider } from '../../../src/core/providers/gcp/instances';
import { applicationDefaultCredentials, tokenSourceFromJson } from '../../../src/core/providers/gcp/auth';
import type { TokenSource } from '../../../src/core/providers/gcp/auth';
import { ProviderError } from '../../../src/core/providers/provider';
import { GcpEmulator } from '../../emulators/gcp';
import { GcpMetadataServer } from '../../emulators/gcpMetadata';

const fastRetry = { retries: 1, baseDelayMs: 5, maxDelayMs: 20, retryServerErrors: true };
const AUDIENCE = '//iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/ci/providers/github';
const SUBJECT_TOKEN = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJyZXBvOm9yZy90cmFpbiJ9.c2ln';
const FEDERATED = 'principal://iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/ci/subject/repo:org/train';

function provider(emu: GcpEmulator, auth: TokenSource): GcpProvider {
  return new GcpProvider({
    project: emu.project,
    zone: 'us-central1-a',
    auth,
    baseUrl: `${emu.url}/compute/v1`,
    retry: fastRetry,
    requestTimeoutMs: 2000,
    operationPollMs: 10,
    operationTimeoutMs: 5000,
    callerIp: async () => '203.0.113.9',
  });
}

function dir(): string {
  return mkdtempSync(join(tmpdir(), 'rft-gcp-cred-'));
}

test("gcp credentials: an authorized_user file's quota_project_id goes as x-goog-user-project on every API call, never to the token endpoint; one the user may not use is a 403 naming the role", async () => {
  const emu = await new GcpEmulator().start();
  try {
    emu.oauth.refreshTokens.set('1//0g-refresh', {
      clientId: '764086051850-adc.apps.googleusercontent.com',
      clientSecret: 'd-FL95Q19q7MQmFpd7hHD0Ty',
      email: 'dev@example.com',
    });
    emu.oauth.quotaProjects.set('dev@example.com', new Set(['rft-billing']));
    const file = (quota?: string): string =>
      JSON.stringify({
        type: 'authorized_user',
        client_id: '764086051850-adc.apps.googleusercontent.com',
        client_secret: 'd-FL95Q19q7MQmFpd7hHD0Ty',
        refresh_token: '1//0g-refresh',
        ...(quota ? { quota_project_id: quota } : {}),
      });
    const d = dir();
    writeFileSync(join(d, 'adc.json'), file('rft-billing'));
    const auth = await applicationDefaultCredentials({ GOOGLE_APPLICATION_CREDENTIALS: join(d, 'adc.json'), HOME: d }, { oauthTokenUri: `${emu.url}/token` });
    assert.equal(auth.quotaProjectId, 'rft-billing');
    await provider(emu, auth).listOffers({ gpu: 'L4' });
    assert.ok(emu.userProjects.length > 0);
    assert.deepEqual([...new Set(emu.userProjects.map(([, q]) => q))], ['rft-billing']);
    assert.equal(emu.oauth.quotaHeaderOnTokenCalls, 0);
    // GOOGLE_CLOUD_QUOTA_PROJECT overrides the file, as in google-auth-library; a project the user cannot use is refused.
    const other = await applicationDefaultCredentials(
      { GOOGLE_APPLICATION_CREDENTIALS: join(d, 'adc.json'), HOME: d, GOOGLE_CLOUD_QUOTA_PROJECT: 'someone-elses' },
      { oauthTokenUri: `${emu.url}/token` },
    );
    await assert.rejects(
      provider(emu, other).listOffers({ gpu: 'L4' }),
      (e: unknown) => e instanceof ProviderError && e.code === 'auth' && /serviceUsageConsumer/.test(e.message),
    );
    // No quota project: no header.
    writeFileSync(join(d, 'plain.json'), file());
    const plain = await applicationDefaultCredentials(
      { GOOGLE_APPLICATION_CREDENTIALS: join(d, 'plain.json'), HOME: d },
      { oauthTokenUri: `${emu.url}/token` },
    );
    emu.userProjects.length = 0;
    await provider(emu, plain).listOffers({ gpu: 'L4' });
    assert.deepEqual([...new Set(emu.userProjects.map(([, q]) => q))], [undefined]);
  } finally {
    await emu.stop();
  }
});

test("gcp credentials: on a VM the metadata server's token is used (GCE_METADATA_HOST) with its project and account; Metadata-Flavor: Google is sent and required back", async () => {
  const emu = await new GcpEmulator().start();
  const meta = await new GcpMetadataServer(emu.oauth, emu.project).start();
  try {
    const d = dir();
    const auth = await applicationDefaultCredentials({ GCE_METADATA_HOST: meta.host, HOME: d });
    assert.match(auth.describe, /metadata server/);
    assert.equal(auth.projectId, emu.project);
    assert.equal(await auth.account?.(), meta.serviceAccount);
    await provider(emu, auth).listOffers({ gpu: 'L4' });
    assert.ok(
      emu.callers.every(([, who]) => who === meta.serviceAccount),
      JSON.stringify(emu.callers),
    );
    assert.ok(meta.requests.length > 0 && meta.requests.every((r) => r.flavor === 'Google'));
    // A VM created without a service account: 404 under service-accounts/default, said as such.
    meta.serviceAccount = undefined;
    const none = await applicationDefaultCredentials({ GCE_METADATA_HOST: meta.host, HOME: d });
    await assert.rejects(none.token(), (e: unknown) => e instanceof ProviderError && e.code === 'auth' && /no service account/.test(e.message));
    // Something else answering at that address (a proxy, a captive portal) is not trusted with a token request.
    meta.serviceAccount = '123456789012-compute@developer.gserviceaccount.com';
    meta.impostor = true;
    const fake = await applicationDefaultCredentials({ GCE_METADATA_HOST: meta.host, HOME: d });
    await assert.rejects(fake.token(), (e: unknown) => e instanceof ProviderError && e.code === 'auth' && /Metadata-Flavor/.test(e.message));
  } finally {
    await meta.stop();
    await emu.stop();
  }
});

test('gcp credentials: external_account (workload identity federation): the subject token is exchanged at STS, the service account impersonated; APIs see the service account and the quota project', async () => {
  const emu = await new GcpEmulator().start();
  // A URL credential source (the way a CI runner serves its OIDC token), answering JSON only with its header.
  const oidc = createServer((req, res) => {
    const ok = req.headers['x-ci-token'] === 'runner-secret';
    res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
    res.end(JSON.stringify(ok ? { value: SUBJECT_TOKEN } : { error: 'unauthorized' }));
  });
  await new Promise<void>((r) => oidc.listen(0, '127.0.0.1', r));
  try {
    const sa = emu.clientEmail;
    emu.oauth.poolProviders.set(AUDIENCE, new Map([[SUBJECT_TOKEN, 'repo:org/train']]));
    emu.oauth.impersonators.set(sa, new Set([FEDERATED]));
    emu.oauth.quotaProjects.set(sa, new Set(['rft-billing']));
    const d = dir();
    writeFileSync(join(d, 'oidc-token'), `${SUBJECT_TOKEN}\n`);
    const base = {
      type: 'external_account',
      audience: AUDIENCE,
      subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
      token_url: `${emu.url}/sts/v1/token`,
    };
    const impersonate = { service_account_impersonation_url: `${emu.url}/iamcredentials/v1/projects/-/serviceAccounts/${sa}:generateAccessToken` };
    const fromFile = tokenSourceFromJson(
      JSON.stringify({ ...base, ...impersonate, credential_source: { file: join(d, 'oidc-token') }, quota_project_id: 'rft-billing' }),
    );
    assert.ok(fromFile);
    assert.equal(await fromFile.account?.(), sa);
    await provider(emu, fromFile).listOffers({ gpu: 'L4' });
    assert.ok(emu.callers.length > 0 && emu.callers.every(([, who]) => who === sa), JSON.stringify(emu.callers));
    assert.deepEqual([...new Set(emu.userProjects.map(([, q]) => q))], ['rft-billing']);
    assert.equal(emu.oauth.quotaHeaderOnTokenCalls, 0, 'STS and IAM credentials get no quota header');
    // A URL source with a JSON answer; no impersonation: the federated identity calls the API itself.
    const port = (oidc.address() as { port: number }).port;
    const fromUrl = tokenSourceFromJson(
      JSON.stringify({
        ...base,
        credential_source: {
          url: `http://127.0.0.1:${port}/token`,
          headers: { 'x-ci-token': 'runner-secret' },
          format: { type: 'json', subject_token_field_name: 'value' },
        },
      }),
    );
    emu.callers.length = 0;
    await provider(emu, fromUrl!).listOffers({ gpu: 'L4' });
    assert.deepEqual([...new Set(emu.callers.map(([, who]) => who))], [FEDERATED]);
    // Refusals say which step refused.
    emu.oauth.impersonators.clear();
    const denied = tokenSourceFromJson(JSON.stringify({ ...base, ...impersonate, credential_source: { file: join(d, 'oidc-token') } }))!;
    await assert.rejects(
      denied.token(),
      (e: unknown) =>
        e instanceof ProviderError && e.code === 'auth' && /iam\.serviceAccounts\.getAccessToken/.test(e.message) && /workloadIdentityUser/.test(e.message),
    );
    const wrongPool = tokenSourceFromJson(
      JSON.stringify({ ...base, audience: AUDIENCE.replace('github', 'gitlab'), credential_source: { file: join(d, 'oidc-token') } }),
    )!;
    await assert.rejects(wrongPool.token(), (e: unknown) => e instanceof ProviderError && e.code === 'auth' && /invalid_target/.test(e.message));
    // Sources this client does not run (AWS, executables) say so instead of falling through to gcloud.
    const aws = tokenSourceFromJson(
      JSON.stringify({
        ...base,
        credential_source: { environment_id: 'aws1', region_url: 'http://169.254.169.254/latest/meta-data/placement/availability-zone' },
      }),
    )!;
    await assert.rejects(aws.token(), (e: unknown) => e instanceof ProviderError && e.code === 'unsupported' && /aws1/.test(e.message));
  } finally {
    oidc.close();
    await emu.stop();
  }
});
