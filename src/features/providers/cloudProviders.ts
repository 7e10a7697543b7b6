// Builds the cloud providers from what the person configured: the Lambda API key in SecretStorage,
// the AWS SDK's default credential chain with a region, Google's Application Default Credentials.
// Nothing here connects; providers reach their cloud only when asked for offers or instances.
import type * as vscode from 'vscode';
import { userSetting } from '../settings';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { Ec2Provider } from '../../core/providers/ec2';
import { GcpProvider } from '../../core/providers/gcp';
import { applicationDefaultCredentials } from '../../core/providers/gcpAuth';
import type { TokenSource } from '../../core/providers/gcpAuth';
import { onGoogleCloud } from '../../core/providers/gcpMetadataCredentials';
import { LambdaProvider } from '../../core/providers/lambda';
import type { Provider, ProviderKind } from '../../core/providers/types';
import type { TargetSpec } from '../../core/providers/registry';
import { Ledger } from '../../core/runs/ledger';

export const LAMBDA_KEY_SECRET = 'remoteFinetune.lambda.apiKey';

export interface CloudProviders extends vscode.Disposable {
  readonly ledger: Ledger;
  /**
   * Providers with credentials now, for offers; a missing one comes with its reason. A run spec's target
   * chooses the EC2 region and the GCP zone (a provider per region/zone), else the settings do.
   */
  cloudProviders(target?: Partial<TargetSpec>): Promise<{ readonly providers: readonly Provider[]; readonly problems: readonly string[] }>;
  /** The provider that owns a run's instance (by its provider and region), for teardown and monitoring. */
  providerFor(record: { readonly provider: ProviderKind; readonly region?: string }): Provider | undefined;
  /** One provider per cloud and region the ledger has instances in, plus the configured ones. */
  reconcileProviders(): Promise<Provider[]>;
  lambdaKey(): Promise<string | undefined>;
}

function settings(): { awsRegion?: string; gcpProject?: string; gcpZone: string } {
  const c = { get: <T>(key: string): T | undefined => userSetting<T>('remoteFinetune', key) };
  return {
    awsRegion: c.get<string>('aws.region') || process.env.AWS_REGION || process.env.AWS_DEFAULT_REGION || undefined,
    gcpProject: c.get<string>('gcp.project') || process.env.GOOGLE_CLOUD_PROJECT || process.env.CLOUDSDK_CORE_PROJECT || undefined,
    gcpZone: c.get<string>('gcp.zone') || 'us-central1-a',
  };
}

function gcpCredentialsPresent(): boolean {
  const file = process.env.GOOGLE_APPLICATION_CREDENTIALS;
  // On a Google Cloud VM (VS Code's workspace host there) the metadata server has the VM's service account.
  return (!!file && existsSync(file)) || existsSync(join(process.env.CLOUDSDK_CONFIG ?? join(homedir(), '.config', 'gcloud'), 'application_default_credentials.json')) || onGoogleCloud(process.env);
}

/**
 * ADC resolved on first use, so activation never reads credential files. The quota project is known once a
 * token was asked for, which every API call does first.
 */
function lazyAdc(): TokenSource {
  let source: Promise<TokenSource> | undefined;
  let resolved: TokenSource | undefined;
  const get = (): Promise<TokenSource> => (source ??= applicationDefaultCredentials().then((s) => (resolved = s)));
  return {
    describe: 'Application Default Credentials',
    get quotaProjectId(): string | undefined {
      return resolved?.quotaProjectId;
    },
    token: async (signal) => (await get()).token(signal),
    account: async (signal) => (await get()).account?.(signal),
  };
}

/** One set per extension host, shared by the orphan sweep and the run lifecycle (providerFor, offers). */
let shared: CloudProviders | undefined;
export function cloudProvidersFor(context: vscode.ExtensionContext): CloudProviders {
  shared ??= createCloudProviders(context);
  return shared;
}

export function createCloudProviders(context: vscode.ExtensionContext): CloudProviders {
  const ledger = new Ledger(join(context.globalStorageUri.fsPath, 'instances.json'));
  let key: string | undefined;
  let keyLoaded: Promise<void> = Promise.resolve(context.secrets.get(LAMBDA_KEY_SECRET)).then((k) => { key = k; }, () => undefined);
  const sub = context.secrets.onDidChange((e) => {
    if (e.key === LAMBDA_KEY_SECRET) keyLoaded = Promise.resolve(context.secrets.get(LAMBDA_KEY_SECRET)).then((k) => { key = k; }, () => undefined);
  });
  const adc = lazyAdc();
  const cache = new Map<string, Provider>();
  const cached = (id: string, make: () => Provider): Provider => {
    let p = cache.get(id);
    if (!p) {
      p = make();
      cache.set(id, p);
    }
    return p;
  };
  // remoteFinetune.lambda.apiUrl: a proxy in front of Lambda's API, or (in the end-to-end test) its emulator.
  const lambdaUrl = (): string | undefined => userSetting<string>('remoteFinetune', 'lambda.apiUrl')?.trim() || undefined;
  // remoteFinetune.cloud.sshPort: images (or a port forward) whose sshd listens elsewhere than 22.
  const sshPort = (): number => userSetting<number>('remoteFinetune', 'cloud.sshPort') || 22;
  const lambda = (): Provider | undefined => {
    const baseUrl = lambdaUrl();
    const port = sshPort();
    return key ? cached(`lambda:${key.slice(-6)}:${baseUrl ?? ''}:${port}`, () => new LambdaProvider({ apiKey: key!, sshPort: port, ...(baseUrl ? { baseUrl } : {}) })) : undefined;
  };
  const ec2 = (region: string): Provider => cached(`ec2:${region}:${sshPort()}`, () => new Ec2Provider({ region, sshPort: sshPort() }));
  const gcp = (project: string, zone: string): Provider => cached(`gcp:${project}:${zone}:${sshPort()}`, () => new GcpProvider({ project, zone, auth: adc, sshPort: sshPort() }));

  return {
    ledger,
    lambdaKey: async () => {
      await keyLoaded;
      return key;
    },
    async cloudProviders(target) {
      await keyLoaded;
      const base = settings();
      const s = {
        ...base,
        ...(target?.provider === 'ec2' && target.region ? { awsRegion: target.region } : {}),
        ...(target?.provider === 'gcp' && target.zone ? { gcpZone: target.zone } : {}),
      };
      const providers: Provider[] = [];
      const problems: string[] = [];
      const l = lambda();
      if (l) providers.push(l);
      else problems.push('Lambda Cloud: no API key (Fine-Tune: Set Lambda Cloud API Key)');
      if (s.awsRegion) providers.push(ec2(s.awsRegion));
      else problems.push('AWS EC2: no region (set remoteFinetune.aws.region or AWS_REGION)');
      if (s.gcpProject && gcpCredentialsPresent()) providers.push(gcp(s.gcpProject, s.gcpZone));
      else problems.push('GCP: needs remoteFinetune.gcp.project and Application Default Credentials');
      return { providers, problems };
    },
    providerFor(record) {
      const s = settings();
      switch (record.provider) {
        case 'lambda': return lambda();
        case 'ec2': return record.region || s.awsRegion ? ec2(record.region || s.awsRegion!) : undefined;
        case 'gcp': return s.gcpProject ? gcp(s.gcpProject, s.gcpZone) : undefined;
        default: return undefined;
      }
    },
    async reconcileProviders() {
      await keyLoaded;
      const s = settings();
      const entries = await ledger.entries();
      const providers: Provider[] = [];
      const l = lambda();
      if (l) providers.push(l);
      const regions = new Set(entries.filter((e) => e.provider === 'ec2').map((e) => e.region));
      // The configured region is scanned only for people who have used EC2 through us: no surprise AWS calls.
      if (regions.size > 0 && s.awsRegion) regions.add(s.awsRegion);
      for (const r of regions) providers.push(ec2(r));
      if (entries.some((e) => e.provider === 'gcp') && s.gcpProject) providers.push(gcp(s.gcpProject, s.gcpZone));
      return providers;
    },
    dispose: () => {
      sub.dispose();
      if (shared?.ledger === ledger) shared = undefined;
    },
  };
}
