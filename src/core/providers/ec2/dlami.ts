// Which AWS Deep Learning AMI an EC2 GPU instance boots, and which instance types it can boot at all.
//
// AWS publishes each DLAMI's current image id as a public SSM parameter and recommends resolving it there
// ("Query AMI-ID with SSM Parameter" in every DLAMI's release notes, docs.aws.amazon.com/dlami): the parameter
// names the image AWS maintains as "latest" for that framework and OS, where a DescribeImages name search
// takes whatever was built last (AWS rebuilds older frameworks with patches, so the newest creation date is
// often an older PyTorch). DescribeImages by name stays as the fallback for accounts whose IAM policy has no
// ssm:GetParameters, and for regions where none of the parameters exists.
import type * as Ec2Sdk from '@aws-sdk/client-ec2';
import { ProviderError } from '../provider';
import type { Ec2Api } from './api';

export const DLAMI_SSM_PREFIX = '/aws/service/deeplearning/ami/x86_64/';

/**
 * The PyTorch DLAMIs with the OSS NVIDIA driver (the runner needs a CUDA torch on the image: bootstrap reuses
 * /opt/pytorch/bin/python), newest PyTorch first, Ubuntu 24.04 before 22.04 for the same PyTorch. Versions AWS
 * has not published (or has retired) are simply absent from the answer: GetParameters lists them as invalid.
 */
export function dlamiParameterNames(): string[] {
  const out: string[] = [];
  for (let minor = 12; minor >= 5; minor--) {
    for (const os of ['ubuntu-24.04', 'ubuntu-22.04']) out.push(`${DLAMI_SSM_PREFIX}oss-nvidia-driver-gpu-pytorch-2.${minor}-${os}/latest/ami-id`);
  }
  return out;
}

/** DescribeImages fallback (owner amazon): the newest image whose name matches. */
export const DLAMI_NAME_PATTERN = 'Deep Learning OSS Nvidia Driver AMI GPU PyTorch * (Ubuntu 2?.04) *';

/**
 * Instance families the OSS-driver DLAMIs support, from their release notes' supported_ec2_instances
 * (G4dn, G5, G6, Gr6, G6e, P4d, P4de, P5, P5e, P5en). NVIDIA's open kernel modules need Turing or newer, so
 * P3 (V100, Volta) is not among them, and the proprietary-driver DLAMI that still booted P3 (Amazon Linux 2)
 * dropped it in 2026 (release 73.1 lists G3, P4d, Inf1). V100 is therefore not offered on EC2.
 */
const DLAMI_FAMILIES = new Set(['g4dn', 'g5', 'g6', 'gr6', 'g6e', 'p4d', 'p4de', 'p5', 'p5e', 'p5en']);

export function dlamiSupports(instanceType: string): boolean {
  return DLAMI_FAMILIES.has(instanceType.split('.')[0] ?? '');
}

/** The DLAMI a launch boots, found once per provider (the first launch's lookup serves every later one). */
export class DlamiLookup {
  private ami?: { id: string; rootDevice: string; source: string };
  /** Why the SSM lookup was not used, when it was not (for logs and tests). */
  note?: string;

  constructor(private readonly api: Ec2Api) {}

  /** Where the AMI came from ("SSM /aws/service/…", or the DescribeImages pattern). */
  get source(): string | undefined {
    return this.ami?.source;
  }

  /**
   * The DLAMI for this instance type: the first of the public SSM parameters that exists in the region (AWS's
   * recommended lookup), confirmed with DescribeImages for its root device; DescribeImages by name when the
   * caller may not read SSM (AccessDeniedException) or no parameter exists there. Instance types no current
   * DLAMI supports are refused before anything is created.
   */
  async find(instanceType: string, signal?: AbortSignal): Promise<{ id: string; rootDevice: string; source: string }> {
    if (!dlamiSupports(instanceType)) {
      throw new ProviderError(
        'unsupported',
        `${instanceType}: no current AWS Deep Learning AMI supports this instance family (P3/V100 needs a driver the DLAMIs no longer ship); pick a g4dn (T4), g5 (A10G), g6 (L4), p4d/p4de (A100) or p5 (H100) type`,
        'ec2',
      );
    }
    if (this.ami) return this.ami;
    const fromSsm = await this.fromSsm(signal);
    if (fromSsm) {
      const found = await this.describeImage({ ImageIds: [fromSsm.id] }, signal).catch((err: unknown) => {
        // A parameter pointing at an image this region does not have (deregistered, not yet copied): fall back.
        if (err instanceof ProviderError && err.code === 'not-found') return undefined;
        throw err;
      });
      if (found) return (this.ami = { ...found, source: `SSM ${fromSsm.parameter}` });
    }
    const pattern = this.api.options.amiNamePattern ?? DLAMI_NAME_PATTERN;
    const byName = await this.describeImage(
      {
        Owners: ['amazon'],
        Filters: [
          { Name: 'name', Values: [pattern] },
          { Name: 'state', Values: ['available'] },
          { Name: 'architecture', Values: ['x86_64'] },
        ],
      },
      signal,
    );
    if (!byName)
      throw new ProviderError(
        'not-found',
        `no Deep Learning AMI in ${this.api.options.region}: none of its SSM parameters (${DLAMI_SSM_PREFIX}…) answered and no image matches "${pattern}"`,
        'ec2',
      );
    return (this.ami = { ...byName, source: `DescribeImages "${pattern}"` });
  }

  /** The newest image the query returns, with its root device name (the block device mapping needs it). */
  private async describeImage(input: Ec2Sdk.DescribeImagesCommandInput, signal?: AbortSignal): Promise<{ id: string; rootDevice: string } | undefined> {
    const res = await this.api.send<{ Images?: Array<{ ImageId?: string; CreationDate?: string; RootDeviceName?: string }> }>(
      (sdk) => new sdk.DescribeImagesCommand(input),
      signal,
    );
    const newest = (res.Images ?? []).filter((i) => i.ImageId).sort((a, b) => (b.CreationDate ?? '').localeCompare(a.CreationDate ?? ''))[0];
    return newest?.ImageId ? { id: newest.ImageId, rootDevice: newest.RootDeviceName ?? '/dev/sda1' } : undefined;
  }

  /**
   * The first DLAMI parameter, in order of preference, that the region has. GetParameters takes at most ten
   * names and lists unknown ones under InvalidParameters. Undefined (and DescribeImages is used) when none
   * exists or SSM refuses (no ssm:GetParameters in the caller's policy); a cancel still cancels.
   */
  private async fromSsm(signal?: AbortSignal): Promise<{ id: string; parameter: string } | undefined> {
    const names = [...(this.api.options.amiParameters ?? dlamiParameterNames())];
    const { ssm, GetParametersCommand } = await this.api.ssmClient();
    const values = new Map<string, string>();
    for (let i = 0; i < names.length; i += 10) {
      try {
        const res = await ssm.send(new GetParametersCommand({ Names: names.slice(i, i + 10) }), { abortSignal: signal });
        for (const p of res.Parameters ?? []) if (p.Name && p.Value && /^ami-[0-9a-f]+$/.test(p.Value)) values.set(p.Name, p.Value);
      } catch (err) {
        if (signal?.aborted) throw new ProviderError('aborted', 'cancelled', 'ec2');
        this.note = `SSM GetParameters failed (${(err as { name?: string }).name ?? 'Error'}), DescribeImages used`;
        return undefined;
      }
    }
    const parameter = names.find((n) => values.has(n));
    return parameter ? { id: values.get(parameter)!, parameter } : undefined;
  }
}
