// AWS EC2 through the real @aws-sdk/client-ec2, loaded on first use (dynamic import keeps activation small).
// Credentials come from the SDK's default chain (environment, profiles, SSO, instance roles); nothing is stored.
// Ownership is the remote-finetune:run-id tag; RunInstances carries a ClientToken derived from the run id,
// so a retried or repeated launch of the same run never creates a second instance.
import { createHash } from 'node:crypto';
import type * as Ec2Sdk from '@aws-sdk/client-ec2';
import type { Instance as SdkInstance, _InstanceType } from '@aws-sdk/client-ec2';
import { cloudInitHostKey } from '../instanceHostKey';
import { requireCloudName } from '../cloudNames';
import { sleep } from '../abort';
import { launchWithFailover } from '../zoneFailover';
import { waitForSshViaDescribe } from '../sshProbe';
import { instanceNameFor, OWNER_ID_TAG, OWNER_TAG, ProviderError, RUN_ID_TAG, unlessGone } from '../provider';
import type { Instance, LaunchRequest, Offer, OfferQuery, Provider, WaitForSshOptions } from '../provider';
import { EC2_STATES, Ec2Api } from './api';
import type { Ec2Options, Sdk } from './api';
import { ec2TypeInfo } from './catalog';
import { DlamiLookup } from './dlami';
import { ensureKeyPair, ensureSecurityGroup, network } from './network';
import { Ec2Offerings } from './offerings';
import { attachNamedVolume, findVolume } from './volume';
import type { AttachedVolume, VolumeSpec } from './volume';
import { cancelSpotRequest, opensPersistentRequest, spotLaunchOptions } from './spotRecovery';
import { awsCode, findNodesGroup, placementGroupName, prepareEc2Cluster, releaseEc2Cluster } from './cluster';

export type { Ec2Options } from './api';

export class Ec2Provider implements Provider {
  readonly kind = 'ec2' as const;
  readonly canStop = true;
  private readonly api: Ec2Api;
  private readonly amis: DlamiLookup;
  private readonly offerings: Ec2Offerings;

  constructor(private readonly options: Ec2Options) {
    this.api = new Ec2Api(options);
    this.amis = new DlamiLookup(this.api);
    this.offerings = new Ec2Offerings(this.api);
  }

  get region(): string {
    return this.options.region;
  }

  /** Sends one command (api.ts); the cluster, volume and spot helpers take it as their way to EC2. */
  private send<T>(make: (sdk: Sdk) => object, signal?: AbortSignal): Promise<T> {
    return this.api.send<T>(make, signal);
  }

  /** Ids this provider launched, with when: a NotFound for them inside the window is lag, not absence. */
  private readonly launchedAt = new Map<string, number>();
  /** Each instance seen here: its spot request id, or null for none (no lookup needed before terminating it). */
  private readonly spotRequestOf = new Map<string, string | null>();

  /** Also how long cleanup looks for the instance of a launch whose outcome is unknown (teardown.ts). */
  get consistencyWindowMs(): number {
    return this.api.consistencyWindowMs;
  }

  /** A terminate answered NotFound is confirmed for as long as that can be lag. */
  get terminateTimeoutMs(): number {
    return this.consistencyWindowMs;
  }

  /** How often a NotFound was waited out (for tests and logs). */
  get consistencyRetries(): number {
    return this.api.consistencyRetries;
  }

  private untilConsistent<T>(codes: readonly string[], call: () => Promise<T>, signal?: AbortSignal, windowMs?: number): Promise<T> {
    return this.api.untilConsistent(codes, call, signal, windowMs);
  }

  /** How long a NotFound for this instance may still be lag: what is left of the window since we launched it. */
  private lagLeft(instanceId: string): number {
    const at = this.launchedAt.get(instanceId);
    return at === undefined ? 0 : Math.max(0, at + this.consistencyWindowMs - Date.now());
  }

  listOffers(query: OfferQuery, signal?: AbortSignal): Promise<Offer[]> {
    return this.offerings.list(query, signal);
  }

  /** Why the SSM lookup of the DLAMI was not used, when it was not (for logs and tests). */
  get amiLookupNote(): string | undefined {
    return this.amis.note;
  }

  /** Where the AMI of the last launch came from ("SSM /aws/service/…", or the DescribeImages pattern). */
  get amiSource(): string | undefined {
    return this.amis.source;
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
      candidates: () => this.offerings.zoneCandidates(request.instanceType, request.spot, signal),
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

  private async launchIn(request: LaunchRequest, signal?: AbortSignal): Promise<Instance> {
    const ami = await this.amis.find(request.instanceType, signal);
    const keyName = await ensureKeyPair(this.api, request.sshPublicKey, signal);
    const net = await network(this.api, request.instanceType, request.zone, signal);
    const groupId = await ensureSecurityGroup(this.api, net.vpcId, signal);
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
      state: EC2_STATES[i.State?.Name ?? ''] ?? 'unknown',
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
      this.api.consistencyRetries++;
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
    const net = await network(this.api, request.instanceType, request.zone, signal);
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
