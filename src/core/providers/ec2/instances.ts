// AWS EC2 through the real @aws-sdk/client-ec2, loaded on first use (dynamic import keeps activation small).
// Credentials come from the SDK's default chain (environment, profiles, SSO, instance roles); nothing is stored.
// Ownership is the remote-finetune:run-id tag; RunInstances carries a ClientToken derived from the run id,
// so a retried or repeated launch of the same run never creates a second instance.
import { cloudInitHostKey } from '../instanceHostKey';
import { callerIpv4 } from '../callerIp';
import { requireCloudName } from '../cloudNames';
import { createHash } from 'node:crypto';
import type * as Ec2Sdk from '@aws-sdk/client-ec2';
import type { EC2Client, Instance as SdkInstance, _InstanceType } from '@aws-sdk/client-ec2';
import type { SSMClient } from '@aws-sdk/client-ssm';
import { EC2_GPU_TYPES, ec2TypeInfo } from './catalog';
import { DLAMI_NAME_PATTERN, DLAMI_SSM_PREFIX, dlamiParameterNames, dlamiSupports } from './dlami';
import { matchesQuery } from '../offers';
import { sleep } from '../abort';
import { launchWithFailover } from '../zoneFailover';
import { catalogQuote, Ec2Pricing } from './pricing';
import type { Ec2PricingOptions, PriceQuote } from './pricing';
import type { ZoneChoice } from '../zoneFailover';
import { waitForSshViaDescribe } from '../sshProbe';
import { attachNamedVolume, findVolume } from './volume';
import { cancelSpotRequest, opensPersistentRequest, spotLaunchOptions } from './spotRecovery';
import type { AttachedVolume, VolumeSpec } from './volume';
import { awsCode, findNodesGroup, placementGroupName, prepareEc2Cluster, releaseEc2Cluster } from './cluster';
import { instanceNameFor, OWNER_ID_TAG, OWNER_TAG, ProviderError, RUN_ID_TAG, unlessGone } from '../provider';
import type { Instance, InstanceState, LaunchRequest, Offer, OfferQuery, Provider, ProviderErrorCode, WaitForSshOptions } from '../provider';

type Sdk = typeof Ec2Sdk;

interface SpotQuote {
  readonly price: number;
  readonly at: number;
}

function spotSource(zone: string, q: SpotQuote): string {
  return `DescribeSpotPriceHistory ${zone}, ${new Date(q.at).toISOString().slice(0, 16)}Z`;
}

export interface Ec2Options {
  readonly region: string;
  /** Endpoint override (tests point it at the EC2 emulator). */
  readonly endpoint?: string;
  readonly maxAttempts?: number;
  readonly requestTimeoutMs?: number;
  /** Returns the caller's public IPv4 address for the SSH ingress rule. */
  readonly callerIp?: (signal?: AbortSignal) => Promise<string>;
  /** DescribeImages fallback when no DLAMI SSM parameter answers. */
  readonly amiNamePattern?: string;
  /** Public SSM parameters naming the DLAMI, most wanted first (default: the PyTorch DLAMIs, ec2/dlami.ts). */
  readonly amiParameters?: readonly string[];
  readonly rootVolumeGiB?: number;
  readonly sshUser?: string;
  /** SSH port of the instances; 22 on EC2. Tests point it at a loopback sshd. */
  readonly sshPort?: number;
  /**
   * Waiting out EC2's eventual consistency: a resource just created may be "NotFound" for a while.
   * AWS: retry with exponential backoff "starting with a couple of seconds of wait time, and increasing
   * gradually up to a few minutes" (docs.aws.amazon.com/ec2/latest/devguide/eventual-consistency.html).
   */
  readonly consistency?: { readonly baseMs?: number; readonly maxMs?: number; readonly windowMs?: number };
  /**
   * On-demand prices from the AWS Price List API for this region (ec2/pricing.ts). Default: asked, unless an
   * endpoint override points the client elsewhere (an emulator has no price list); false: the catalog only.
   */
  readonly pricing?: Ec2PricingOptions | false;
}

const CAPACITY_CODES = new Set([
  'InsufficientInstanceCapacity',
  'InsufficientCapacity',
  'InsufficientHostCapacity',
  'SpotMaxPriceTooLow',
  'InsufficientCapacityOnHost',
  'Unsupported',
]);
// MaxSpotInstanceCountExceeded is the account's spot limit (a service quota raised on request), not a lack
// of capacity that waiting or another zone would cure: retrying elsewhere only repeats the refusal.
const QUOTA_CODES = new Set(['InstanceLimitExceeded', 'VcpuLimitExceeded', 'InsufficientReservedInstanceCapacity', 'MaxSpotInstanceCountExceeded']);
const AUTH_CODES = new Set([
  'AuthFailure',
  'UnauthorizedOperation',
  'CredentialsProviderError',
  'InvalidClientTokenId',
  'SignatureDoesNotMatch',
  'ExpiredToken',
  'OptInRequired',
]);

function mapSdkError(err: unknown): ProviderError {
  if (err instanceof ProviderError) return err;
  const e = err as { name?: string; message?: string; $fault?: string };
  const name = e.name ?? 'Error';
  const message = `${name}: ${e.message ?? String(err)}`;
  let code: ProviderErrorCode = e.$fault === 'server' ? 'server' : 'invalid';
  if (CAPACITY_CODES.has(name)) code = 'capacity';
  else if (QUOTA_CODES.has(name)) code = 'quota';
  else if (AUTH_CODES.has(name)) code = 'auth';
  else if (name === 'RequestLimitExceeded' || name === 'Throttling') code = 'rate-limited';
  else if (name.endsWith('.NotFound')) code = 'not-found';
  else if (name === 'AbortError') code = 'aborted';
  else if (name === 'TimeoutError' || /timed? ?out/i.test(message)) code = 'timeout';
  else if (/ECONNREFUSED|ECONNRESET|socket hang up|EPIPE/.test(message)) code = 'unreachable';
  return new ProviderError(code, message, 'ec2');
}

const STATE: Record<string, InstanceState> = {
  pending: 'pending',
  running: 'running',
  'shutting-down': 'terminating',
  terminated: 'terminated',
  stopping: 'stopping',
  stopped: 'stopped',
};

export class Ec2Provider implements Provider {
  readonly kind = 'ec2' as const;
  readonly canStop = true;
  private sdk?: Sdk;
  private client?: EC2Client;
  private ami?: { id: string; rootDevice: string; source: string };
  private ssm?: SSMClient;

  constructor(private readonly options: Ec2Options) {}

  get region(): string {
    return this.options.region;
  }

  private clientConfig(): {
    region: string;
    endpoint?: string;
    maxAttempts: number;
    requestHandler: { requestTimeout: number; connectionTimeout: number; throwOnRequestTimeout: boolean };
  } {
    // The SDK builds the host name from the region (ec2.<region>.amazonaws.com): a region is one host label or nothing is built.
    return {
      region: requireCloudName('ec2', 'ec2-region', 'target.region (or the remoteFinetune.aws.region setting)', this.options.region),
      ...(this.options.endpoint ? { endpoint: this.options.endpoint } : {}),
      maxAttempts: this.options.maxAttempts ?? 4,
      // throwOnRequestTimeout: without it the SDK only warns and a hung endpoint blocks forever.
      requestHandler: { requestTimeout: this.options.requestTimeoutMs ?? 30_000, connectionTimeout: 10_000, throwOnRequestTimeout: true },
    };
  }

  private async connect(): Promise<{ sdk: Sdk; client: EC2Client }> {
    if (!this.sdk || !this.client) {
      this.sdk = await import('@aws-sdk/client-ec2');
      this.client = new this.sdk.EC2Client(this.clientConfig());
    }
    return { sdk: this.sdk, client: this.client };
  }

  /** Sends one command and turns SDK errors into ProviderErrors. */
  private async send<T>(make: (sdk: Sdk) => object, signal?: AbortSignal): Promise<T> {
    const { sdk, client } = await this.connect();
    if (signal?.aborted) throw new ProviderError('aborted', 'cancelled', 'ec2');
    // One generic path for every command: send's overloads cannot be named for a union of commands.
    const send = client.send.bind(client) as (command: object, options: { abortSignal?: AbortSignal }) => Promise<unknown>;
    try {
      return (await send(make(sdk), { abortSignal: signal })) as T;
    } catch (err) {
      if (signal?.aborted) throw new ProviderError('aborted', 'cancelled', 'ec2');
      throw mapSdkError(err);
    }
  }

  /** Ids this provider launched, with when: a NotFound for them inside the window is lag, not absence. */
  private readonly launchedAt = new Map<string, number>();
  /** Each instance seen here: its spot request id, or null for none (no lookup needed before terminating it). */
  private readonly spotRequestOf = new Map<string, string | null>();

  /** Also how long cleanup looks for the instance of a launch whose outcome is unknown (teardown.ts). */
  get consistencyWindowMs(): number {
    return this.options.consistency?.windowMs ?? 300_000;
  }

  /** A terminate answered NotFound is confirmed for as long as that can be lag. */
  get terminateTimeoutMs(): number {
    return this.consistencyWindowMs;
  }

  /**
   * Runs `call` again while it fails with one of `codes` (EC2's NotFound for something that exists but has not
   * propagated yet), backing off exponentially, until `windowMs` has passed; then the last error stands.
   */
  private async untilConsistent<T>(codes: readonly string[], call: () => Promise<T>, signal?: AbortSignal, windowMs = this.consistencyWindowMs): Promise<T> {
    const base = this.options.consistency?.baseMs ?? 2000;
    const max = this.options.consistency?.maxMs ?? 30_000;
    const deadline = Date.now() + windowMs;
    for (let attempt = 0; ; attempt++) {
      try {
        return await call();
      } catch (err) {
        const code = awsCode(err);
        if (!code || !codes.includes(code) || Date.now() >= deadline) throw err;
        this.consistencyRetries++;
        await sleep(Math.min(max, base * 2 ** attempt, Math.max(1, deadline - Date.now())), signal);
      }
    }
  }

  /** How often a NotFound was waited out (for tests and logs). */
  consistencyRetries = 0;

  /** How long a NotFound for this instance may still be lag: what is left of the window since we launched it. */
  private lagLeft(instanceId: string): number {
    const at = this.launchedAt.get(instanceId);
    return at === undefined ? 0 : Math.max(0, at + this.consistencyWindowMs - Date.now());
  }

  async listOffers(query: OfferQuery, signal?: AbortSignal): Promise<Offer[]> {
    // The SDK client is bound to one region: another region's offers come from a provider made for it.
    const region = this.options.region;
    if (query.region && query.region !== region) return [];
    if (query.zone) requireCloudName('ec2', 'ec2-zone', 'target.zone', query.zone);
    const candidates = EC2_GPU_TYPES.filter((x) =>
      matchesQuery(
        {
          provider: 'ec2',
          instanceType: x.instanceType,
          gpu: x.gpu,
          gpuCount: x.gpuCount,
          vramGiB: x.vramGiB,
          region,
          pricePerHour: 0,
          spot: false,
          capacity: 'unknown',
        },
        { ...query, spot: undefined, zone: undefined },
      ),
    );
    if (candidates.length === 0) return [];
    const types = candidates.map((c) => c.instanceType);
    // EC2 publishes no capacity figure; which types the region offers at all is the best "now" there is.
    const offered = await this.send<{ InstanceTypeOfferings?: Array<{ InstanceType?: string; Location?: string }> }>(
      (sdk) => new sdk.DescribeInstanceTypeOfferingsCommand({ LocationType: 'availability-zone', Filters: [{ Name: 'instance-type', Values: types }] }),
      signal,
    );
    const zonesOf = new Map<string, string[]>();
    for (const o of offered.InstanceTypeOfferings ?? [])
      if (o.InstanceType && o.Location) zonesOf.set(o.InstanceType, [...(zonesOf.get(o.InstanceType) ?? []), o.Location]);
    const offers: Offer[] = [];
    if (query.spot !== true) {
      const quotes = await Promise.all(candidates.map((c) => this.onDemandQuote(c.instanceType, signal)));
      for (const [n, c] of candidates.entries()) {
        const quote = quotes[n];
        // Asked for a zone: the offer is for that zone, and only where the zone offers the type.
        const where = query.zone ? (zonesOf.get(c.instanceType) ?? []).includes(query.zone) : zonesOf.has(c.instanceType);
        offers.push({
          provider: 'ec2',
          instanceType: c.instanceType,
          gpu: c.gpu,
          gpuCount: c.gpuCount,
          vramGiB: c.vramGiB,
          region,
          ...(query.zone ? { zone: query.zone } : {}),
          pricePerHour: quote?.pricePerHour ?? c.onDemandPerHour,
          ...(quote ? { priceSource: quote.source } : {}),
          spot: false,
          capacity: where ? 'unknown' : 'unavailable',
          vcpus: c.vcpus,
          memoryGiB: c.memoryGiB,
        });
      }
    }
    if (query.spot !== false) {
      const prices = await this.spotPrices(types, query.zone, signal);
      for (const c of candidates) {
        // The latest price per zone, then the cheapest zone.
        const latest = prices.get(c.instanceType) ?? new Map<string, SpotQuote>();
        const best = [...latest.entries()].sort((a, b) => a[1].price - b[1].price)[0];
        if (best)
          offers.push({
            provider: 'ec2',
            instanceType: c.instanceType,
            gpu: c.gpu,
            gpuCount: c.gpuCount,
            vramGiB: c.vramGiB,
            region,
            zone: best[0],
            pricePerHour: best[1].price,
            priceSource: spotSource(best[0], best[1]),
            spot: true,
            capacity: 'unknown',
            vcpus: c.vcpus,
            memoryGiB: c.memoryGiB,
          });
      }
    }
    return offers;
  }

  /**
   * The DLAMI for this instance type: the first of the public SSM parameters that exists in the region (AWS's
   * recommended lookup), confirmed with DescribeImages for its root device; DescribeImages by name when the
   * caller may not read SSM (AccessDeniedException) or no parameter exists there. Instance types no current
   * DLAMI supports are refused before anything is created.
   */
  private async findAmi(instanceType: string, signal?: AbortSignal): Promise<{ id: string; rootDevice: string; source: string }> {
    if (!dlamiSupports(instanceType)) {
      throw new ProviderError(
        'unsupported',
        `${instanceType}: no current AWS Deep Learning AMI supports this instance family (P3/V100 needs a driver the DLAMIs no longer ship); pick a g4dn (T4), g5 (A10G), g6 (L4), p4d/p4de (A100) or p5 (H100) type`,
        'ec2',
      );
    }
    if (this.ami) return this.ami;
    const fromSsm = await this.amiFromSsm(signal);
    if (fromSsm) {
      const found = await this.describeImage({ ImageIds: [fromSsm.id] }, signal).catch((err: unknown) => {
        // A parameter pointing at an image this region does not have (deregistered, not yet copied): fall back.
        if (err instanceof ProviderError && err.code === 'not-found') return undefined;
        throw err;
      });
      if (found) return (this.ami = { ...found, source: `SSM ${fromSsm.parameter}` });
    }
    const pattern = this.options.amiNamePattern ?? DLAMI_NAME_PATTERN;
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
        `no Deep Learning AMI in ${this.options.region}: none of its SSM parameters (${DLAMI_SSM_PREFIX}…) answered and no image matches "${pattern}"`,
        'ec2',
      );
    return (this.ami = { ...byName, source: `DescribeImages "${pattern}"` });
  }

  /** The newest image the query returns, with its root device name (the block device mapping needs it). */
  private async describeImage(input: Ec2Sdk.DescribeImagesCommandInput, signal?: AbortSignal): Promise<{ id: string; rootDevice: string } | undefined> {
    const res = await this.send<{ Images?: Array<{ ImageId?: string; CreationDate?: string; RootDeviceName?: string }> }>(
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
  private async amiFromSsm(signal?: AbortSignal): Promise<{ id: string; parameter: string } | undefined> {
    const names = [...(this.options.amiParameters ?? dlamiParameterNames())];
    const { SSMClient, GetParametersCommand } = await import('@aws-sdk/client-ssm');
    this.ssm ??= new SSMClient(this.clientConfig());
    const values = new Map<string, string>();
    for (let i = 0; i < names.length; i += 10) {
      try {
        const res = await this.ssm.send(new GetParametersCommand({ Names: names.slice(i, i + 10) }), { abortSignal: signal });
        for (const p of res.Parameters ?? []) if (p.Name && p.Value && /^ami-[0-9a-f]+$/.test(p.Value)) values.set(p.Name, p.Value);
      } catch (err) {
        if (signal?.aborted) throw new ProviderError('aborted', 'cancelled', 'ec2');
        this.amiLookupNote = `SSM GetParameters failed (${(err as { name?: string }).name ?? 'Error'}), DescribeImages used`;
        return undefined;
      }
    }
    const parameter = names.find((n) => values.has(n));
    return parameter ? { id: values.get(parameter)!, parameter } : undefined;
  }

  /** Why the SSM lookup was not used, when it was not (for logs and tests). */
  amiLookupNote?: string;

  /** Where the AMI of the last launch came from ("SSM /aws/service/…", or the DescribeImages pattern). */
  get amiSource(): string | undefined {
    return this.ami?.source;
  }

  /** Key pair named after the key's hash: importing the same key twice reuses it. */
  private async ensureKeyPair(publicKey: string, signal?: AbortSignal): Promise<string> {
    const material = publicKey.trim();
    const name = `remote-finetune-${createHash('sha256').update(material.split(/\s+/).slice(0, 2).join(' ')).digest('hex').slice(0, 16)}`;
    try {
      const found = await this.send<{ KeyPairs?: unknown[] }>((sdk) => new sdk.DescribeKeyPairsCommand({ KeyNames: [name] }), signal);
      if ((found.KeyPairs ?? []).length > 0) return name;
    } catch (err) {
      if (!(err instanceof ProviderError && err.code === 'not-found')) throw err;
    }
    try {
      await this.send(
        (sdk) =>
          new sdk.ImportKeyPairCommand({
            KeyName: name,
            PublicKeyMaterial: new TextEncoder().encode(material),
            TagSpecifications: [{ ResourceType: 'key-pair', Tags: [{ Key: OWNER_TAG, Value: 'true' }] }],
          }),
        signal,
      );
    } catch (err) {
      // DescribeKeyPairs lagged behind an earlier import of the same key: it is there.
      if (awsCode(err) !== 'InvalidKeyPair.Duplicate') throw err;
    }
    return name;
  }

  /**
   * A security group that opens 22 only to the caller's address, one per address. A group found by name is
   * checked, not trusted: a launch cut short between CreateSecurityGroup and AuthorizeSecurityGroupIngress
   * (or a hand edit) leaves one with no rule for 22, or with more than ours; the rule is added and anything
   * else revoked before an instance uses it.
   */
  private async ensureSecurityGroup(vpcId: string, signal?: AbortSignal): Promise<string> {
    const ip = await callerIpv4('ec2', this.options.callerIp, signal);
    const groupName = `remote-finetune-ssh-${ip.replace(/\./g, '-')}`;
    const cidr = `${ip}/32`;
    // Group names are unique per VPC: the one found must live in the VPC the instance goes to.
    const byName = [
      { Name: 'group-name', Values: [groupName] },
      { Name: 'vpc-id', Values: [vpcId] },
    ];
    const existing = await this.send<{ SecurityGroups?: Ec2Sdk.SecurityGroup[] }>((sdk) => new sdk.DescribeSecurityGroupsCommand({ Filters: byName }), signal);
    let group = existing.SecurityGroups?.[0];
    let id = group?.GroupId;
    if (!id) {
      try {
        const created = await this.send<{ GroupId?: string }>(
          (sdk) =>
            new sdk.CreateSecurityGroupCommand({
              GroupName: groupName,
              VpcId: vpcId,
              Description: `Remote Fine-Tune: SSH from ${ip} only`,
              TagSpecifications: [{ ResourceType: 'security-group', Tags: [{ Key: OWNER_TAG, Value: 'true' }] }],
            }),
          signal,
        );
        id = created.GroupId;
        group = undefined;
      } catch (err) {
        // Created a moment ago (by us, a retry, another window) and not yet visible to DescribeSecurityGroups.
        if (awsCode(err) !== 'InvalidGroup.Duplicate') throw err;
        const again = await this.untilConsistent(
          ['InvalidGroup.NotFound'],
          async () => {
            const r = await this.send<{ SecurityGroups?: Ec2Sdk.SecurityGroup[] }>((sdk) => new sdk.DescribeSecurityGroupsCommand({ Filters: byName }), signal);
            if (!r.SecurityGroups?.[0]?.GroupId) throw new ProviderError('not-found', `InvalidGroup.NotFound: ${groupName} not visible yet`, 'ec2');
            return r.SecurityGroups[0];
          },
          signal,
        );
        group = again;
        id = again.GroupId;
      }
      if (!id) throw new ProviderError('server', 'CreateSecurityGroup returned no id', 'ec2');
    }
    const groupId = id;
    const perms = group?.IpPermissions ?? [];
    const ours = (p: Ec2Sdk.IpPermission): boolean => p.IpProtocol === 'tcp' && p.FromPort === 22 && p.ToPort === 22;
    const hasRule = perms.some((p) => ours(p) && (p.IpRanges ?? []).some((r) => r.CidrIp === cidr));
    // Anything but tcp/22 from our /32: other ports, other ranges, IPv6, prefix lists, other groups.
    const extra: Ec2Sdk.IpPermission[] = [];
    for (const p of perms) {
      const ranges = (p.IpRanges ?? []).filter((r) => !(ours(p) && r.CidrIp === cidr));
      const others = (p.Ipv6Ranges?.length ?? 0) + (p.PrefixListIds?.length ?? 0) + (p.UserIdGroupPairs?.length ?? 0);
      if (ranges.length || others) extra.push({ ...p, IpRanges: ranges });
    }
    if (extra.length) {
      await this.untilConsistent(
        ['InvalidGroup.NotFound'],
        () => this.send((sdk) => new sdk.RevokeSecurityGroupIngressCommand({ GroupId: groupId, IpPermissions: extra })),
        signal,
      );
    }
    if (!hasRule) {
      // Right after CreateSecurityGroup the new id may be unknown to the next call (InvalidGroup.NotFound).
      await this.untilConsistent(
        ['InvalidGroup.NotFound'],
        async () => {
          try {
            await this.send(
              (sdk) =>
                new sdk.AuthorizeSecurityGroupIngressCommand({
                  GroupId: groupId,
                  IpPermissions: [{ IpProtocol: 'tcp', FromPort: 22, ToPort: 22, IpRanges: [{ CidrIp: cidr, Description: 'Remote Fine-Tune SSH' }] }],
                }),
              signal,
            );
          } catch (err) {
            // An earlier attempt whose answer was lost already added it.
            if (awsCode(err) !== 'InvalidPermission.Duplicate') throw err;
          }
        },
        signal,
      );
    }
    return groupId;
  }

  /**
   * Where the instance goes. With a default VPC: there, as EC2 places a launch that names no subnet (its
   * subnets are public by construction). Without one (deleted, or an account that never had it), EC2 refuses
   * such a launch (VPCIdNotSpecified), so a subnet is picked here: public (its route table, or its VPC's main
   * table, sends 0.0.0.0/0 to an internet gateway; SSH from here cannot reach anything else), in a zone that
   * offers the type, the requested zone when there is one. None: a clear error naming what to create.
   */
  private async network(instanceType: string, zone: string | undefined, signal?: AbortSignal): Promise<{ vpcId: string; subnetId?: string }> {
    const vpcs = await this.send<{ Vpcs?: Ec2Sdk.Vpc[] }>(
      (sdk) => new sdk.DescribeVpcsCommand({ Filters: [{ Name: 'is-default', Values: ['true'] }] }),
      signal,
    );
    const def = vpcs.Vpcs?.find((v) => v.IsDefault && v.VpcId);
    if (def?.VpcId) return { vpcId: def.VpcId };
    const region = this.options.region;
    const subnets =
      (await this.send<{ Subnets?: Ec2Sdk.Subnet[] }>((sdk) => new sdk.DescribeSubnetsCommand({ Filters: [{ Name: 'state', Values: ['available'] }] }), signal))
        .Subnets ?? [];
    const vpcIds = [...new Set(subnets.map((x) => x.VpcId).filter((x): x is string => !!x))];
    const tables = vpcIds.length
      ? ((
          await this.send<{ RouteTables?: Ec2Sdk.RouteTable[] }>(
            (sdk) => new sdk.DescribeRouteTablesCommand({ Filters: [{ Name: 'vpc-id', Values: vpcIds }] }),
            signal,
          )
        ).RouteTables ?? [])
      : [];
    const tableOf = (sub: Ec2Sdk.Subnet): Ec2Sdk.RouteTable | undefined =>
      tables.find((t) => (t.Associations ?? []).some((a) => a.SubnetId === sub.SubnetId)) ??
      tables.find((t) => t.VpcId === sub.VpcId && (t.Associations ?? []).some((a) => a.Main));
    const isPublic = (sub: Ec2Sdk.Subnet): boolean =>
      (tableOf(sub)?.Routes ?? []).some((r) => r.DestinationCidrBlock === '0.0.0.0/0' && (r.GatewayId ?? '').startsWith('igw-'));
    const publicSubnets = subnets.filter((x) => x.SubnetId && x.AvailabilityZone && isPublic(x));
    const offered = await this.send<{ InstanceTypeOfferings?: Array<{ Location?: string }> }>(
      (sdk) =>
        new sdk.DescribeInstanceTypeOfferingsCommand({ LocationType: 'availability-zone', Filters: [{ Name: 'instance-type', Values: [instanceType] }] }),
      signal,
    );
    const zones = new Set((offered.InstanceTypeOfferings ?? []).map((o) => o.Location));
    const fits = publicSubnets.filter((x) => zones.has(x.AvailabilityZone) && (!zone || x.AvailabilityZone === zone));
    // Subnets that hand out public addresses themselves first, then a stable order.
    const best = fits.sort(
      (a, b) =>
        Number(b.MapPublicIpOnLaunch ?? false) - Number(a.MapPublicIpOnLaunch ?? false) ||
        (a.AvailabilityZone ?? '').localeCompare(b.AvailabilityZone ?? '') ||
        (a.SubnetId ?? '').localeCompare(b.SubnetId ?? ''),
    )[0];
    if (best?.SubnetId && best.VpcId) return { vpcId: best.VpcId, subnetId: best.SubnetId };
    const fix = `create a default VPC (\`aws ec2 create-default-vpc --region ${region}\`) or a public subnet (a route 0.0.0.0/0 to an internet gateway) in a zone that offers ${instanceType}, then retry`;
    if (publicSubnets.length === 0)
      throw new ProviderError(
        'invalid',
        `no default VPC in ${region} and no public subnet (none of its ${subnets.length} subnet(s) routes 0.0.0.0/0 to an internet gateway): ${fix}`,
        'ec2',
      );
    const where = [...new Set(publicSubnets.map((x) => x.AvailabilityZone))].join(', ');
    throw new ProviderError(
      'invalid',
      `no default VPC in ${region}, and its public subnets (${where}) are not in a zone that offers ${instanceType}${zone ? ` in ${zone}` : ''} (${[...zones].join(', ') || 'none'}): ${fix}`,
      'ec2',
    );
  }

  /** The DLAMIs are Ubuntu with cloud-init: the user-data's host key becomes the instance's. */
  readonly deliversHostKey = true;

  /**
   * Launches in the request's zone; a capacity refusal there tries the region's other zones that offer the type
   * (DescribeInstanceTypeOfferings), cheapest spot price first, each with its own ClientToken. The SDK client is
   * bound to one region: target.regions is for providers that address zones across regions (GCP).
   */
  async launch(request: LaunchRequest, signal?: AbortSignal): Promise<Instance> {
    if (request.zone) requireCloudName('ec2', 'ec2-zone', 'target.zone', request.zone);
    const region = this.options.region;
    const { result, placement } = await launchWithFailover({
      provider: 'ec2',
      instanceType: request.instanceType,
      first: { region, ...(request.zone ? { zone: request.zone } : {}) },
      pinned: request.zonePinned === true,
      candidates: () => this.zoneCandidates(request.instanceType, request.spot, signal),
      attempt: (c, suffix) =>
        this.launchIn({ ...request, ...(c.zone ? { zone: c.zone } : {}), ...(suffix ? { launchKey: `${request.launchKey ?? ''}${suffix}` } : {}) }, signal),
      // Capacity is a zone's; the account's vCPU or spot limits are the region's and no zone of it cures them.
      scope: (err) => (err.code === 'capacity' ? 'zone' : undefined),
      ...(request.progress ? { progress: request.progress } : {}),
    });
    return placement.refused.length
      ? { ...result, placement, ...(placement.pricePerHour !== undefined ? { pricePerHour: placement.pricePerHour } : {}) }
      : result;
  }

  private pricing?: Ec2Pricing;

  /** This region's on-demand price (Price List API, cached), or the catalog's named as such. */
  private async onDemandQuote(instanceType: string, signal?: AbortSignal): Promise<PriceQuote | undefined> {
    const opts = this.options.pricing;
    if (opts === false || (opts === undefined && this.options.endpoint))
      return catalogQuote(instanceType, opts === false ? 'the Price List API is turned off' : 'the EC2 endpoint is overridden');
    this.pricing ??= new Ec2Pricing(opts ?? {});
    return await this.pricing.onDemand(this.options.region, instanceType, signal);
  }

  /** The region's zones that offer the type; for spot, with each zone's latest spot price, cheapest first. */
  private async zoneCandidates(instanceType: string, spot: boolean, signal?: AbortSignal): Promise<ZoneChoice[]> {
    const region = this.options.region;
    const offered = await this.send<{ InstanceTypeOfferings?: Array<{ Location?: string }> }>(
      (sdk) =>
        new sdk.DescribeInstanceTypeOfferingsCommand({ LocationType: 'availability-zone', Filters: [{ Name: 'instance-type', Values: [instanceType] }] }),
      signal,
    );
    const zones = [...new Set((offered.InstanceTypeOfferings ?? []).map((o) => o.Location).filter((z): z is string => !!z))].sort();
    if (!spot) return zones.map((zone) => ({ region, zone }));
    const prices = await this.spotPrices([instanceType], undefined, signal);
    const of = (z: string): SpotQuote | undefined => prices.get(instanceType)?.get(z);
    return zones
      .map((zone): ZoneChoice => {
        const q = of(zone);
        return { region, zone, ...(q ? { pricePerHour: q.price, priceSource: spotSource(zone, q) } : {}) };
      })
      .sort((a, b) => (a.pricePerHour ?? Infinity) - (b.pricePerHour ?? Infinity));
  }

  /** The latest Linux spot price per type and zone (the last hour's DescribeSpotPriceHistory). */
  private async spotPrices(types: readonly string[], zone: string | undefined, signal?: AbortSignal): Promise<Map<string, Map<string, SpotQuote>>> {
    const history = await this.send<{ SpotPriceHistory?: Array<{ InstanceType?: string; AvailabilityZone?: string; SpotPrice?: string; Timestamp?: Date }> }>(
      (sdk) =>
        new sdk.DescribeSpotPriceHistoryCommand({
          InstanceTypes: types as _InstanceType[],
          ProductDescriptions: ['Linux/UNIX'],
          StartTime: new Date(Date.now() - 3600_000),
          ...(zone ? { AvailabilityZone: zone } : {}),
        }),
      signal,
    );
    const out = new Map<string, Map<string, SpotQuote>>();
    for (const h of history.SpotPriceHistory ?? []) {
      if (!h.InstanceType || !h.AvailabilityZone || !h.SpotPrice || (zone && h.AvailabilityZone !== zone)) continue;
      const at = h.Timestamp?.getTime() ?? 0;
      const perZone = out.get(h.InstanceType) ?? new Map<string, SpotQuote>();
      const prev = perZone.get(h.AvailabilityZone);
      if (!prev || at > prev.at) perZone.set(h.AvailabilityZone, { price: Number(h.SpotPrice), at });
      out.set(h.InstanceType, perZone);
    }
    return out;
  }

  private async launchIn(request: LaunchRequest, signal?: AbortSignal): Promise<Instance> {
    const ami = await this.findAmi(request.instanceType, signal);
    const keyName = await this.ensureKeyPair(request.sshPublicKey, signal);
    const net = await this.network(request.instanceType, request.zone, signal);
    const groupId = await this.ensureSecurityGroup(net.vpcId, signal);
    // A node of a multi-node run joins the run's placement group and its nodes' group (prepareCluster made them).
    const nodesGroup = request.cluster
      ? (this.nodesGroups.get(request.runId) ?? (await findNodesGroup((make, sig) => this.send(make, sig), request.runId, net.vpcId, signal)))
      : undefined;
    if (request.cluster && !nodesGroup) throw new ProviderError('invalid', `the security group of run ${request.runId}'s nodes is missing`, 'ec2');
    const groups = nodesGroup ? [groupId, nodesGroup] : [groupId];
    const name = instanceNameFor(request.runId);
    const market = spotLaunchOptions(request);
    if (market.note) request.progress?.(market.note);
    const tags = [
      { Key: 'Name', Value: name },
      { Key: OWNER_TAG, Value: 'true' },
      { Key: RUN_ID_TAG, Value: request.runId },
      ...(request.ownerId ? [{ Key: OWNER_ID_TAG, Value: request.ownerId }] : []),
    ];
    // A key pair or group made a moment ago may be NotFound to RunInstances; the ClientToken makes the retry safe.
    const res = await this.untilConsistent(
      ['InvalidKeyPair.NotFound', 'InvalidGroup.NotFound'],
      () =>
        this.send<{ Instances?: SdkInstance[] }>(
          (sdk) =>
            new sdk.RunInstancesCommand({
              ImageId: ami.id,
              InstanceType: request.instanceType as _InstanceType,
              MinCount: 1,
              MaxCount: 1,
              KeyName: keyName,
              // In a subnet of our choosing the address must be asked for: such subnets rarely hand them out.
              ...(net.subnetId
                ? {
                    NetworkInterfaces: [{ DeviceIndex: 0, SubnetId: net.subnetId, Groups: groups, AssociatePublicIpAddress: true, DeleteOnTermination: true }],
                  }
                : { SecurityGroupIds: groups }),
              // Same run, same token: EC2 returns the first instance instead of launching another (a replacement has its own key).
              ClientToken: clientTokenFor(request),
              // The on-host watchdog powers off; with terminate, power-off ends billing instead of leaving a stopped
              // instance (a persistent spot request stops instead: ec2/spotRecovery.ts says why).
              InstanceInitiatedShutdownBehavior: market.InstanceInitiatedShutdownBehavior,
              BlockDeviceMappings: [
                {
                  DeviceName: ami.rootDevice,
                  Ebs: { VolumeSize: request.diskGiB ?? this.options.rootVolumeGiB ?? 200, VolumeType: 'gp3', DeleteOnTermination: true, Encrypted: true },
                },
              ],
              // The host reads S3 (checkpoints, staged data, outputs) as this role through IMDS: no keys shipped, none expiring.
              ...(request.iamInstanceProfile
                ? {
                    IamInstanceProfile: request.iamInstanceProfile.startsWith('arn:')
                      ? { Arn: request.iamInstanceProfile }
                      : { Name: request.iamInstanceProfile },
                  }
                : {}),
              // IMDSv2 only: a process on the instance (or an SSRF in a notebook) cannot read credentials with one GET.
              MetadataOptions: { HttpTokens: 'required', HttpEndpoint: 'enabled', HttpPutResponseHopLimit: 1 },
              ...(request.hostKey ? { UserData: Buffer.from(cloudInitHostKey(request.hostKey)).toString('base64') } : {}),
              TagSpecifications: [
                { ResourceType: 'instance', Tags: tags },
                { ResourceType: 'volume', Tags: tags },
                // The request carries the run too, so a request left open is seen for what it is.
                ...(opensPersistentRequest(request) ? [{ ResourceType: 'spot-instances-request' as const, Tags: tags }] : []),
              ],
              Placement:
                request.zone && !net.subnetId
                  ? { AvailabilityZone: request.zone, ...(request.cluster ? { GroupName: placementGroupName(request.runId) } : {}) }
                  : request.cluster
                    ? { GroupName: placementGroupName(request.runId) }
                    : undefined,
              InstanceMarketOptions: market.InstanceMarketOptions,
              ...(market.HibernationOptions ? { HibernationOptions: market.HibernationOptions } : {}),
            }),
          signal,
        ),
      signal,
    );
    const first = res.Instances?.[0];
    if (!first?.InstanceId) throw new ProviderError('server', 'RunInstances returned no instance', 'ec2');
    if (!this.launchedAt.has(first.InstanceId)) this.launchedAt.set(first.InstanceId, Date.now());
    return this.toInstance(first);
  }

  private toInstance(i: SdkInstance): Instance {
    const tags = new Map((i.Tags ?? []).map((t) => [t.Key ?? '', t.Value ?? '']));
    const type = String(i.InstanceType ?? '');
    const spot = i.InstanceLifecycle === 'spot';
    if (i.InstanceId) this.spotRequestOf.set(i.InstanceId, i.SpotInstanceRequestId ?? null);
    return {
      provider: 'ec2',
      id: i.InstanceId ?? '',
      name: tags.get('Name'),
      runId: tags.get(RUN_ID_TAG),
      ...(tags.get(OWNER_ID_TAG) ? { ownerId: tags.get(OWNER_ID_TAG) } : {}),
      region: this.options.region,
      zone: i.Placement?.AvailabilityZone,
      instanceType: type,
      state: STATE[i.State?.Name ?? ''] ?? 'unknown',
      publicIp: i.PublicIpAddress,
      ...(i.PrivateIpAddress ? { privateIp: i.PrivateIpAddress } : {}),
      sshPort: this.options.sshPort ?? 22,
      sshUser: this.options.sshUser ?? 'ubuntu',
      spot,
      pricePerHour: spot ? undefined : ec2TypeInfo(type)?.onDemandPerHour,
      launchedAt: i.LaunchTime?.getTime(),
      // Shutdown: stopped by a spot interruption, for EC2 to start again (target.spot_recovery: cloud).
      interrupted: i.StateReason?.Code === 'Server.SpotInstanceTermination' || i.StateReason?.Code === 'Server.SpotInstanceShutdown',
    };
  }

  /**
   * undefined only when EC2 does not know the instance and it cannot be lag: right after RunInstances,
   * DescribeInstances may answer InvalidInstanceID.NotFound for an instance that exists and bills
   * ("This doesn't mean the instance does not exist", AWS's eventual-consistency page), so for instances
   * launched here the NotFound is retried with backoff until the consistency window has passed.
   */
  async describe(instanceId: string, signal?: AbortSignal): Promise<Instance | undefined> {
    const res = await unlessGone(
      this.untilConsistent(
        ['InvalidInstanceID.NotFound'],
        () =>
          this.send<{ Reservations?: Array<{ Instances?: SdkInstance[] }> }>((sdk) => new sdk.DescribeInstancesCommand({ InstanceIds: [instanceId] }), signal),
        signal,
        this.lagLeft(instanceId),
      ),
    );
    const i = res?.Reservations?.flatMap((r) => r.Instances ?? [])[0];
    return i ? this.toInstance(i) : undefined;
  }

  waitForSsh(instanceId: string, options: WaitForSshOptions): Promise<Instance> {
    return waitForSshViaDescribe(this, instanceId, options);
  }

  /**
   * Resolves only once EC2 has confirmed: TerminateInstances answered (shutting-down or terminated), or the
   * instance is described as terminated, or EC2 has no record of it and it cannot be lag. A NotFound from
   * TerminateInstances "doesn't mean the instance was or will be terminated" (AWS's eventual-consistency
   * page): it is confirmed with DescribeInstances and the terminate tried again, never taken as done.
   */
  async terminate(instanceId: string, signal?: AbortSignal): Promise<void> {
    const base = this.options.consistency?.baseMs ?? 2000;
    const max = this.options.consistency?.maxMs ?? 30_000;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.cancelSpotRequestOf(instanceId, signal);
        await this.send((sdk) => new sdk.TerminateInstancesCommand({ InstanceIds: [instanceId] }), signal);
        return;
      } catch (err) {
        if (awsCode(err) !== 'InvalidInstanceID.NotFound') throw err;
      }
      const lag = this.lagLeft(instanceId);
      const seen = await this.describe(instanceId, signal);
      if (!seen && this.lagLeft(instanceId) === 0 && lag === 0) return;
      if (seen?.state === 'terminated' || seen?.state === 'terminating') return;
      if (!seen && this.lagLeft(instanceId) === 0) {
        throw new ProviderError(
          'timeout',
          `EC2 still answers NotFound for ${instanceId}, launched ${Math.round(this.consistencyWindowMs / 1000)} s ago or more; it may be running: check the EC2 console`,
          'ec2',
        );
      }
      this.consistencyRetries++;
      await sleep(Math.min(max, base * 2 ** attempt), signal);
    }
  }

  /**
   * Cancels the instance's spot request before it is terminated: under a persistent request EC2 would launch
   * a new instance in its place. An instance not seen here is looked up once (DescribeInstances names its request).
   */
  private async cancelSpotRequestOf(instanceId: string, signal?: AbortSignal): Promise<void> {
    let requestId = this.spotRequestOf.get(instanceId);
    if (requestId === undefined) {
      const res = await this.send<{ Reservations?: Array<{ Instances?: SdkInstance[] }> }>(
        (sdk) => new sdk.DescribeInstancesCommand({ InstanceIds: [instanceId] }),
        signal,
      ).catch((err: unknown) => {
        if (awsCode(err) === 'InvalidInstanceID.NotFound') return undefined;
        throw err;
      });
      const i = res?.Reservations?.flatMap((r) => r.Instances ?? [])[0];
      requestId = i?.SpotInstanceRequestId;
    }
    if (requestId) await cancelSpotRequest((make, sig) => this.send(make, sig), requestId, signal);
  }

  async stop(instanceId: string, signal?: AbortSignal): Promise<void> {
    await this.send((sdk) => new sdk.StopInstancesCommand({ InstanceIds: [instanceId] }), signal);
  }

  /** The zone of the named persistent volume (ec2/volume.ts), when it exists: the launch must go there. */
  async volumeZone(name: string, signal?: AbortSignal): Promise<string | undefined> {
    return (await findVolume((make, sig) => this.send(make, sig), name, signal))?.AvailabilityZone;
  }

  /** Finds or makes the named EBS volume and attaches it to the (running) instance; teardown never deletes it. */
  async attachVolume(instance: Instance, volume: VolumeSpec, signal?: AbortSignal): Promise<AttachedVolume> {
    const tags = instance.ownerId ? [{ Key: OWNER_ID_TAG, Value: instance.ownerId }] : [];
    return await attachNamedVolume((make, sig) => this.send(make, sig), instance, volume, tags, signal);
  }

  /** The run's cluster placement group and its nodes' security group (ec2/cluster.ts), in the VPC its nodes go to. */
  async prepareCluster(request: LaunchRequest, signal?: AbortSignal): Promise<void> {
    const net = await this.network(request.instanceType, request.zone, signal);
    const groupId = await prepareEc2Cluster(
      (make, sig) => this.send(make, sig),
      (codes, call) => this.untilConsistent(codes, call, signal),
      request.runId,
      net.vpcId,
      signal,
    );
    // DescribeSecurityGroups may not list a group made a moment ago: the nodes' launches take its id from here.
    this.nodesGroups.set(request.runId, groupId);
  }

  /** Each multi-node run's nodes' group made here, by run id. */
  private readonly nodesGroups = new Map<string, string>();

  async releaseCluster(runId: string, signal?: AbortSignal): Promise<void> {
    await releaseEc2Cluster((make, sig) => this.send(make, sig), runId, signal, this.options.consistency?.windowMs ?? 180_000, this.nodesGroups.get(runId));
    this.nodesGroups.delete(runId);
  }

  async listOwned(signal?: AbortSignal): Promise<Instance[]> {
    return this.listFiltered({ Name: 'tag-key', Values: [RUN_ID_TAG] }, signal);
  }

  /** Not terminated instances matching one filter, every page. */
  private async listFiltered(filter: Ec2Sdk.Filter, signal?: AbortSignal): Promise<Instance[]> {
    const out: Instance[] = [];
    let token: string | undefined;
    do {
      const res = await this.send<{ Reservations?: Array<{ Instances?: SdkInstance[] }>; NextToken?: string }>(
        (sdk) =>
          new sdk.DescribeInstancesCommand({
            Filters: [filter, { Name: 'instance-state-name', Values: ['pending', 'running', 'stopping', 'stopped'] }],
            NextToken: token,
          }),
        signal,
      );
      for (const r of res.Reservations ?? []) for (const i of r.Instances ?? []) out.push(this.toInstance(i));
      token = res.NextToken;
    } while (token);
    return out;
  }

  /**
   * What a launch of unknown outcome made: by its ClientToken (DescribeInstances' client-token filter), then by
   * the run tag (an implementation without that filter, or a tag that reached the listing first). A refusal of
   * the token filter other than for credentials is not fatal: the tag still finds the instance.
   */
  async findLaunched(request: LaunchRequest, signal?: AbortSignal): Promise<Instance[]> {
    const byToken = await this.listFiltered({ Name: 'client-token', Values: [clientTokenFor(request)] }, signal).catch((err: unknown) => {
      if (err instanceof ProviderError && (err.code === 'auth' || err.code === 'aborted')) throw err;
      return [];
    });
    const byTag = await this.listFiltered({ Name: `tag:${RUN_ID_TAG}`, Values: [request.runId] }, signal);
    const seen = new Set(byToken.map((i) => i.id));
    return [...byToken, ...byTag.filter((i) => !seen.has(i.id))];
  }
}

/** The launch's idempotency token: same run and launch key, same token, so EC2 hands back the first instance. */
function clientTokenFor(request: LaunchRequest): string {
  return createHash('sha256')
    .update(request.runId + (request.launchKey ? `#${request.launchKey}` : ''))
    .digest('hex')
    .slice(0, 64);
}
