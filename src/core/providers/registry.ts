// Builds the provider a run spec's `target` names. Returns a reason instead of throwing, so callers
// (commands, the CLI) can show it next to the spec.
import { Ec2Provider } from './ec2';
import type { Ec2Options } from './ec2';
import { GcpProvider } from './gcp';
import type { TokenSource } from './gcpAuth';
import { LambdaProvider } from './lambda';
import type { LambdaOptions } from './lambda';
import { LocalProvider, SshHostProvider } from './sshHost';
import type { Provider, ProviderKind } from './types';

/** The parts of finetune.yaml's `target` this module reads. */
export interface TargetSpec {
  readonly provider: ProviderKind;
  readonly host?: string;
  readonly gpu?: string;
  readonly gpu_count?: number;
  readonly spot?: boolean;
  readonly region?: string;
  readonly zone?: string;
  readonly instance_type?: string;
  /** Boot disk of a provisioned instance, GB. */
  readonly disk_gb?: number;
}

export interface ProviderContext {
  readonly lambdaApiKey?: string;
  readonly lambda?: Partial<LambdaOptions>;
  readonly ec2?: Partial<Ec2Options>;
  readonly gcpAuth?: TokenSource;
  readonly gcpProject?: string;
  readonly gcpZone?: string;
  readonly gcpBaseUrl?: string;
}

export type ProviderResult = { readonly ok: true; readonly provider: Provider } | { readonly ok: false; readonly reason: string };

/** user@host[:port] → parts; aliases from ~/.ssh/config are resolved by core/ssh before this. */
export function parseSshTarget(host: string): { user: string; host: string; port: number } | undefined {
  const m = /^(?:([^@\s]+)@)?(\[[^\]]+\]|[^:\s]+)(?::(\d{1,5}))?$/.exec(host.trim());
  if (!m?.[2]) return undefined;
  const port = m[3] ? Number(m[3]) : 22;
  if (port < 1 || port > 65535) return undefined;
  return { user: m[1] ?? 'ubuntu', host: m[2].replace(/^\[|\]$/g, ''), port };
}

export function createProvider(target: TargetSpec, ctx: ProviderContext): ProviderResult {
  switch (target.provider) {
    case 'local':
      return { ok: true, provider: new LocalProvider({ gpu: target.gpu, gpuCount: target.gpu_count }) };
    case 'ssh': {
      const parsed = target.host ? parseSshTarget(target.host) : undefined;
      if (!parsed) return { ok: false, reason: 'target.host must be user@host[:port] or an ssh_config alias resolved to one' };
      return { ok: true, provider: new SshHostProvider({ ...parsed, gpu: target.gpu, gpuCount: target.gpu_count }) };
    }
    case 'lambda':
      if (!ctx.lambdaApiKey) return { ok: false, reason: 'no Lambda Cloud API key: run "Fine-Tune: Set Lambda Cloud API Key"' };
      return { ok: true, provider: new LambdaProvider({ ...ctx.lambda, apiKey: ctx.lambdaApiKey }) };
    case 'ec2': {
      const region = target.region ?? ctx.ec2?.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION;
      if (!region) return { ok: false, reason: 'target.region is required for ec2 (or set AWS_REGION)' };
      return { ok: true, provider: new Ec2Provider({ ...ctx.ec2, region }) };
    }
    case 'gcp': {
      const project = ctx.gcpProject ?? ctx.gcpAuth?.projectId;
      const zone = target.zone ?? ctx.gcpZone;
      if (!ctx.gcpAuth) return { ok: false, reason: 'no Google credentials: set GOOGLE_APPLICATION_CREDENTIALS or run `gcloud auth application-default login`' };
      if (!project) return { ok: false, reason: 'no GCP project: set remoteFinetune.gcp.project or use credentials that name one' };
      if (!zone) return { ok: false, reason: 'target.zone is required for gcp (for example us-central1-a)' };
      return { ok: true, provider: new GcpProvider({ project, zone, auth: ctx.gcpAuth, baseUrl: ctx.gcpBaseUrl }) };
    }
    default:
      return { ok: false, reason: `unknown provider ${String((target as { provider?: unknown }).provider)}` };
  }
}
