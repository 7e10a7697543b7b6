// Core's provider policy (which clouds are offered, which provider owns a run's instance, which are swept
// for orphans), with settings given as plain values and the providers recorded instead of built.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createProviderSelection, EXTENSION_HINTS, REAL_PROVIDERS, resolveCloudSettings } from '../../../src/core/providers/providerSelection';
import type { CloudSettings, ProviderMakers } from '../../../src/core/providers/providerSelection';
import type { TokenSource } from '../../../src/core/providers/gcp/auth';
import type { Provider, ProviderKind } from '../../../src/core/providers/provider';

const auth: TokenSource = { describe: 'test', token: async () => 'token' };
/** An environment with no credentials anywhere: HOME and gcloud's folder are an empty temp folder. */
const bare = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => {
  const home = mkdtempSync(join(tmpdir(), 'rft-sel-'));
  return { HOME: home, CLOUDSDK_CONFIG: join(home, 'gcloud'), ...extra };
};

type Made = { kind: ProviderKind; options: Record<string, unknown> };
function recording(): { makers: ProviderMakers; made: Made[] } {
  const made: Made[] = [];
  const fake =
    (kind: ProviderKind) =>
    (options: object): Provider => {
      made.push({ kind, options: { ...options } });
      return { kind, options } as unknown as Provider;
    };
  return { makers: { lambda: fake('lambda'), ec2: fake('ec2'), gcp: fake('gcp') }, made };
}
const optionsOf = (p: Provider | undefined): Record<string, unknown> => (p as unknown as { options: Record<string, unknown> }).options;

const all: CloudSettings = {
  lambdaApiKey: 'secret-key-0123456789',
  awsRegion: 'us-east-1',
  gcpProject: 'proj',
  gcpZone: 'us-central1-a',
  gcpCredentials: true,
  sshPort: 22,
};

test("resolveCloudSettings: empty settings are not given; the environment completes them as the clouds' tools do", () => {
  const none = resolveCloudSettings({ lambdaApiKey: '  ', awsRegion: '', gcpProject: '' }, bare());
  assert.deepEqual(none, {
    lambdaApiKey: undefined,
    lambdaApiUrl: undefined,
    awsRegion: undefined,
    gcpProject: undefined,
    gcpZone: 'us-central1-a',
    gcpCredentials: false,
    sshPort: 22,
  });
  const fromEnv = resolveCloudSettings({}, bare({ AWS_DEFAULT_REGION: 'eu-west-1', CLOUDSDK_CORE_PROJECT: 'p2' }));
  assert.equal(fromEnv.awsRegion, 'eu-west-1');
  assert.equal(fromEnv.gcpProject, 'p2');
  const settingWins = resolveCloudSettings(
    { awsRegion: 'us-west-2', gcpProject: 'mine', gcpZone: 'europe-west4-a', sshPort: 2222 },
    bare({ AWS_REGION: 'eu-west-1', GOOGLE_CLOUD_PROJECT: 'p2' }),
  );
  assert.deepEqual([settingWins.awsRegion, settingWins.gcpProject, settingWins.gcpZone, settingWins.sshPort], ['us-west-2', 'mine', 'europe-west4-a', 2222]);
});

test("resolveCloudSettings: Google credentials count only when a key file (or gcloud's) is there, and only with a project", () => {
  const env = bare();
  const key = join(env.HOME!, 'key.json');
  assert.equal(resolveCloudSettings({ gcpProject: 'p' }, { ...env, GOOGLE_APPLICATION_CREDENTIALS: key }).gcpCredentials, false, 'named but missing');
  writeFileSync(key, '{}');
  assert.equal(resolveCloudSettings({ gcpProject: 'p' }, { ...env, GOOGLE_APPLICATION_CREDENTIALS: key }).gcpCredentials, true);
  assert.equal(resolveCloudSettings({}, { ...env, GOOGLE_APPLICATION_CREDENTIALS: key }).gcpCredentials, false, 'no project: not looked for');
});

test('offerProviders: each unconfigured cloud is a problem that says how to set it up', () => {
  const { makers, made } = recording();
  const sel = createProviderSelection(auth, makers, { lambda: 'set LAMBDA_API_KEY', ec2: 'pass --region', gcp: 'a project' });
  const r = sel.offerProviders(resolveCloudSettings({}, bare()));
  assert.deepEqual(r.providers, []);
  assert.deepEqual(r.problems, ['Lambda Cloud: no API key (set LAMBDA_API_KEY)', 'AWS EC2: no region (pass --region)', 'GCP: needs a project']);
  assert.deepEqual(made, []);
  const noCreds = sel.offerProviders({ ...all, gcpCredentials: false });
  assert.deepEqual(
    noCreds.providers.map((p) => p.kind),
    ['lambda', 'ec2'],
  );
  assert.match(EXTENSION_HINTS.lambda, /Fine-Tune: Set Lambda Cloud API Key/);
});

test('offerProviders: all three clouds, built once and reused; a target picks the EC2 region and GCP zone it names', () => {
  const { makers, made } = recording();
  const sel = createProviderSelection(auth, makers);
  const r = sel.offerProviders({ ...all, lambdaApiUrl: 'http://127.0.0.1:9/api/v1', sshPort: 2222 });
  assert.deepEqual(r.problems, []);
  assert.deepEqual(
    r.providers.map((p) => p.kind),
    ['lambda', 'ec2', 'gcp'],
  );
  assert.deepEqual(
    made.map((m) => m.options),
    [
      { apiKey: 'secret-key-0123456789', sshPort: 2222, baseUrl: 'http://127.0.0.1:9/api/v1' },
      { region: 'us-east-1', sshPort: 2222 },
      { project: 'proj', zone: 'us-central1-a', auth, sshPort: 2222 },
    ],
  );
  const again = sel.offerProviders({ ...all, lambdaApiUrl: 'http://127.0.0.1:9/api/v1', sshPort: 2222 });
  assert.deepEqual(again.providers, r.providers, 'the same provider objects (launch spacing and clients are shared)');
  assert.equal(made.length, 3);

  const ec2Target = sel.offerProviders(all, { provider: 'ec2', region: 'eu-central-1', zone: 'x' });
  assert.equal(optionsOf(ec2Target.providers[1]).region, 'eu-central-1');
  assert.equal(optionsOf(ec2Target.providers[2]).zone, 'us-central1-a', "an EC2 target's zone is not GCP's");
  const gcpTarget = sel.offerProviders(all, { provider: 'gcp', region: 'eu-central-1', zone: 'europe-west4-b' });
  assert.equal(optionsOf(gcpTarget.providers[1]).region, 'us-east-1', "a GCP target's region is not EC2's");
  assert.equal(optionsOf(gcpTarget.providers[2]).zone, 'europe-west4-b');
});

test("providerFor: the run's own region wins; nothing for a cloud without credentials or for SSH and local hosts", () => {
  const { makers } = recording();
  const sel = createProviderSelection(auth, makers);
  assert.equal(optionsOf(sel.providerFor(all, { provider: 'ec2', region: 'ap-south-1' })).region, 'ap-south-1');
  assert.equal(optionsOf(sel.providerFor(all, { provider: 'ec2', region: '' })).region, 'us-east-1');
  assert.equal(sel.providerFor({ ...all, awsRegion: undefined }, { provider: 'ec2' }), undefined);
  assert.equal(sel.providerFor({ ...all, lambdaApiKey: undefined }, { provider: 'lambda' }), undefined);
  assert.equal(sel.providerFor({ ...all, gcpProject: undefined }, { provider: 'gcp' }), undefined);
  assert.equal(sel.providerFor(all, { provider: 'gcp' })?.kind, 'gcp');
  assert.equal(sel.providerFor(all, { provider: 'ssh' }), undefined);
  assert.equal(sel.providerFor(all, { provider: 'local' }), undefined);
});

test('reconcileProviders: EC2 and GCP are swept only where the ledger has instances (no surprise cloud calls)', () => {
  const { makers } = recording();
  const sel = createProviderSelection(auth, makers);
  assert.deepEqual(
    sel.reconcileProviders(all, []).map((p) => p.kind),
    ['lambda'],
  );
  const swept = sel.reconcileProviders(all, [
    { provider: 'ec2', region: 'us-west-2' },
    { provider: 'ec2', region: 'us-west-2' },
    { provider: 'gcp', region: 'us-central1' },
  ]);
  assert.deepEqual(
    swept.map((p) => [p.kind, optionsOf(p).region ?? optionsOf(p).project]),
    [
      ['lambda', undefined],
      ['ec2', 'us-west-2'],
      ['ec2', 'us-east-1'],
      ['gcp', 'proj'],
    ],
  );
  assert.deepEqual(sel.reconcileProviders({ ...all, lambdaApiKey: undefined, gcpProject: undefined }, [{ provider: 'gcp', region: 'r' }]), []);
});

test('the real makers build the real providers (without reaching any cloud)', () => {
  const sel = createProviderSelection(auth, REAL_PROVIDERS);
  const r = sel.offerProviders(all);
  assert.deepEqual(
    r.providers.map((p) => [p.kind, p.constructor.name]),
    [
      ['lambda', 'LambdaProvider'],
      ['ec2', 'Ec2Provider'],
      ['gcp', 'GcpProvider'],
    ],
  );
});
