// Which cloud providers exist for this person, built from what they configured: the one policy behind the
// extension's offers, Start Training, teardown and orphan sweep, and the CLI's `offers`. Settings come in
// as plain values (the extension reads VS Code settings and SecretStorage, the CLI its flags and the
// environment). Nothing here connects; a provider reaches its cloud only when asked for offers or instances.
import { Ec2Provider } from './ec2/instances';
import type { Ec2Options } from './ec2/instances';
import { GcpProvider } from './gcp/instances';
import type { GcpOptions } from './gcp/instances';
import { applicationDefaultCredentialsPresent } from './gcp/auth';
import type { TokenSource } from './gcp/auth';
import { LambdaProvider } from './lambda/instances';
import type { LambdaOptions } from './lambda/instances';
import type { TargetSpec } from './targetSpec';
import type { Provider, ProviderKind } from './provider';

/** The settings as the person wrote them; unset or empty means not given. */
export interface CloudSettingValues {
  readonly lambdaApiKey?: string;
  /** A proxy in front of Lambda's API (or, in tests, its emulator). */
  readonly lambdaApiUrl?: string;
  readonly awsRegion?: string;
  readonly gcpProject?: string;
  readonly gcpZone?: string;
  /** Images (or a port forward) whose sshd listens elsewhere than 22. */
  readonly sshPort?: number;
}

/** The settings completed from the environment, the way each cloud's own tools complete them. */
export interface CloudSettings {
  readonly lambdaApiKey?: string;
  readonly lambdaApiUrl?: string;
  readonly awsRegion?: string;
  readonly gcpProject?: string;
  readonly gcpZone: string;
  /** Whether Application Default Credentials have something to read. */
  readonly gcpCredentials: boolean;
  readonly sshPort: number;
}

const DEFAULT_GCP_ZONE = 'us-central1-a';

export function resolveCloudSettings(values: CloudSettingValues, env: NodeJS.ProcessEnv = process.env): CloudSettings {
  const given = (v: string | undefined): string | undefined => v?.trim() || undefined;
  const gcpProject = given(values.gcpProject) ?? given(env.GOOGLE_CLOUD_PROJECT) ?? given(env.CLOUDSDK_CORE_PROJECT);
  return {
    lambdaApiKey: given(values.lambdaApiKey),
    lambdaApiUrl: given(values.lambdaApiUrl),
    awsRegion: given(values.awsRegion) ?? given(env.AWS_REGION) ?? given(env.AWS_DEFAULT_REGION),
    gcpProject,
    gcpZone: given(values.gcpZone) ?? DEFAULT_GCP_ZONE,
    // Looked for only with a project: without one GCP is not offered anyway.
    gcpCredentials: gcpProject !== undefined && applicationDefaultCredentialsPresent(env),
    sshPort: values.sshPort && values.sshPort > 0 ? values.sshPort : 22,
  };
}

/** How each provider is built; tests record the options instead of building real ones. */
export interface ProviderMakers {
  lambda(options: LambdaOptions): Provider;
  ec2(options: Ec2Options): Provider;
  gcp(options: GcpOptions): Provider;
}

export const REAL_PROVIDERS: ProviderMakers = {
  lambda: (o) => new LambdaProvider(o),
  ec2: (o) => new Ec2Provider(o),
  gcp: (o) => new GcpProvider(o),
};

/** What a missing provider's problem line tells the person to do; the extension names its commands, the CLI its flags. */
export interface SetupHints {
  readonly lambda: string;
  readonly ec2: string;
  readonly gcp: string;
}

export const EXTENSION_HINTS: SetupHints = {
  lambda: 'Fine-Tune: Set Lambda Cloud API Key',
  ec2: 'set remoteFinetune.aws.region or AWS_REGION',
  gcp: 'remoteFinetune.gcp.project and Application Default Credentials',
};

/** How each cloud is named at the start of its problem line. */
export const CLOUD_LABELS = { lambda: 'Lambda Cloud', ec2: 'AWS EC2', gcp: 'GCP' } as const;

export interface ProviderSelection {
  /**
   * Providers with credentials now, for offers; a missing one comes with its reason. A run spec's target
   * chooses the EC2 region and the GCP zone (a provider per region/zone), else the settings do.
   */
  offerProviders(settings: CloudSettings, target?: Partial<TargetSpec>): { readonly providers: readonly Provider[]; readonly problems: readonly string[] };
  /** The provider that owns a run's instance (by its provider and region), for teardown and monitoring. */
  providerFor(settings: CloudSettings, record: { readonly provider: ProviderKind; readonly region?: string }): Provider | undefined;
  /** One provider per cloud and region the ledger has instances in, plus the configured ones. */
  reconcileProviders(settings: CloudSettings, owned: ReadonlyArray<{ readonly provider: ProviderKind; readonly region: string }>): Provider[];
}

/**
 * One selection per process: a provider is built once per cloud, region/zone and port and then reused, so its
 * own state (Lambda's launch spacing, EC2's clients) is shared by every caller.
 */
export function createProviderSelection(gcpAuth: TokenSource, makers: ProviderMakers = REAL_PROVIDERS, hints: SetupHints = EXTENSION_HINTS): ProviderSelection {
  const cache = new Map<string, Provider>();
  const cached = (id: string, make: () => Provider): Provider => {
    let p = cache.get(id);
    if (!p) {
      p = make();
      cache.set(id, p);
    }
    return p;
  };
  const lambda = (s: CloudSettings): Provider | undefined => {
    const key = s.lambdaApiKey;
    if (!key) return undefined;
    // The key's tail only: enough to tell two keys apart, never the key in a map a debugger prints.
    return cached(`lambda:${key.slice(-6)}:${s.lambdaApiUrl ?? ''}:${s.sshPort}`, () =>
      makers.lambda({ apiKey: key, sshPort: s.sshPort, ...(s.lambdaApiUrl ? { baseUrl: s.lambdaApiUrl } : {}) }),
    );
  };
  const ec2 = (s: CloudSettings, region: string): Provider => cached(`ec2:${region}:${s.sshPort}`, () => makers.ec2({ region, sshPort: s.sshPort }));
  const gcp = (s: CloudSettings, project: string): Provider =>
    cached(`gcp:${project}:${s.gcpZone}:${s.sshPort}`, () => makers.gcp({ project, zone: s.gcpZone, auth: gcpAuth, sshPort: s.sshPort }));

  return {
    offerProviders(base, target) {
      const s: CloudSettings = {
        ...base,
        ...(target?.provider === 'ec2' && target.region ? { awsRegion: target.region } : {}),
        ...(target?.provider === 'gcp' && target.zone ? { gcpZone: target.zone } : {}),
      };
      const providers: Provider[] = [];
      const problems: string[] = [];
      const l = lambda(s);
      if (l) providers.push(l);
      else problems.push(`${CLOUD_LABELS.lambda}: no API key (${hints.lambda})`);
      if (s.awsRegion) providers.push(ec2(s, s.awsRegion));
      else problems.push(`${CLOUD_LABELS.ec2}: no region (${hints.ec2})`);
      if (s.gcpProject && s.gcpCredentials) providers.push(gcp(s, s.gcpProject));
      else problems.push(`${CLOUD_LABELS.gcp}: needs ${hints.gcp}`);
      return { providers, problems };
    },
    providerFor(s, record) {
      switch (record.provider) {
        case 'lambda':
          return lambda(s);
        case 'ec2': {
          const region = record.region || s.awsRegion;
          return region ? ec2(s, region) : undefined;
        }
        case 'gcp':
          return s.gcpProject ? gcp(s, s.gcpProject) : undefined;
        default:
          return undefined;
      }
    },
    reconcileProviders(s, owned) {
      const providers: Provider[] = [];
      const l = lambda(s);
      if (l) providers.push(l);
      const regions = new Set(owned.filter((e) => e.provider === 'ec2').map((e) => e.region));
      // The configured region is scanned only for people who have used EC2 through us: no surprise AWS calls.
      if (regions.size > 0 && s.awsRegion) regions.add(s.awsRegion);
      for (const r of regions) providers.push(ec2(s, r));
      if (owned.some((e) => e.provider === 'gcp') && s.gcpProject) providers.push(gcp(s, s.gcpProject));
      return providers;
    },
  };
}
