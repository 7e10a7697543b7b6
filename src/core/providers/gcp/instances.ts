// GCP Compute Engine REST v1. Ownership is the label remote-finetune=owned plus remote-finetune-run=<run id>;
// instance ids here are "<zone>/<name>" because every Compute call is addressed by zone and name.
// Inserts carry a requestId derived from the run id, so a retried insert never makes a second VM.
import { createHash } from 'node:crypto';
import { DEFAULT_RETRY } from '../http';
import { GCP_GPU_SHAPES, GCP_PRICE_SOURCE, gcpOfferName, gcpShapeOf } from './catalog';
import type { GcpGpuShape } from './catalog';
import { launchWithFailover } from '../zoneFailover';
import type { ZoneChoice } from '../zoneFailover';
import { waitForSshViaDescribe } from '../sshProbe';
import { instanceNameFor, launchNameFor, OWNER_ID_TAG, OWNER_TAG, ProviderError } from '../provider';
import { requireCloudName } from '../cloudNames';
import type { Instance, LaunchRequest, Offer, OfferQuery, Provider, WaitForSshOptions } from '../provider';
import { GCP_STATUSES, GcpApi, regionOf, tail, zonePath } from './api';
import type { GcpInstance, GcpOperation, GcpOptions } from './api';
import { bootImage } from './image';
import { ensureFirewall, insertFirewall } from './network';
import { acceleratorZones, listGcpOffers, ZONE_FIELD } from './offerings';
import { checkOsLoginRole, loginFor } from './osLogin';

export type { GcpOptions } from './api';

const RUN_LABEL = 'remote-finetune-run';
const GCS_READ_WRITE_SCOPE = 'https://www.googleapis.com/auth/devstorage.read_write';
/** A UUID made from a string, for requestId: the same run always sends the same id. */
function uuidFrom(text: string): string {
  const h = createHash('sha256').update(text).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** What one insert needs that does not depend on the zone: made once, before the first zone is tried. */
interface InsertPrep {
  readonly shape: GcpGpuShape;
  readonly image: { readonly source: string };
  readonly diskGb: number;
  readonly login: { user: string; osLogin: false } | { user: string; osLogin: true; account: string };
  readonly sshTag: string;
}

/**
 * A multi-node run's network tag, and the name of the firewall rule that admits, on every port, traffic from
 * instances with the tag to instances with the tag: the run's nodes reach each other (rendezvous, NCCL), nothing else.
 */
export function clusterTagFor(runId: string): string {
  return `${instanceNameFor(runId).slice(0, 57).replace(/-+$/, '')}-nodes`;
}

/** GCP labels: lowercase letters, digits, - and _, at most 63 characters. */
function labelValue(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9_-]/g, '-')
    .slice(0, 63);
}

export class GcpProvider implements Provider {
  readonly kind = 'gcp' as const;
  readonly canStop = true;
  private readonly api: GcpApi;
  /** The POSIX user OS Login assigned to the caller in this project, once the project is known to use OS Login. */
  private osLoginUser?: string;

  constructor(private readonly options: GcpOptions) {
    this.api = new GcpApi(options);
  }

  listOffers(query: OfferQuery, signal?: AbortSignal): Promise<Offer[]> {
    return listGcpOffers(this.api, query, signal);
  }

  /**
   * Inserts in the request's zone (or the configured one); a capacity refusal there tries the region's other
   * zones that have the accelerator, then those of target.regions, each VM under its own name and requestId (a
   * reused requestId would answer with the refused operation). A regional quota skips the rest of its region.
   */
  async launch(request: LaunchRequest, signal?: AbortSignal): Promise<Instance> {
    const shape = gcpShapeOf(request.instanceType);
    if (!shape) throw new ProviderError('invalid', `unknown GCP GPU shape ${request.instanceType}`, 'gcp');
    // Before the first request: a bad zone found at the insert would leave a firewall rule made for nothing.
    this.api.checkProject();
    const zone = requireCloudName('gcp', 'gcp-zone', request.zone ? 'target.zone' : ZONE_FIELD, request.zone ?? this.options.zone);
    for (const r of request.regions ?? []) requireCloudName('gcp', 'gcp-region', 'target.regions', r);
    const image = await bootImage(this.api, signal);
    const diskGb = request.diskGiB ?? Math.max(200, image.diskSizeGb);
    if (diskGb < image.diskSizeGb)
      throw new ProviderError(
        'invalid',
        `a ${diskGb} GB boot disk is smaller than the image ${image.source.split('/').pop() ?? ''} (${image.diskSizeGb} GB): ask for at least ${image.diskSizeGb} GB`,
        'gcp',
      );
    const login = await loginFor(this.api, request.sshPublicKey, signal);
    if (login.osLogin) this.osLoginUser = login.user;
    const sshTag = await ensureFirewall(this.api, signal);
    const price = (z: string): ZoneChoice => ({
      region: regionOf(z),
      zone: z,
      pricePerHour: request.spot ? shape.spotPerHour : shape.onDemandPerHour,
      priceSource: GCP_PRICE_SOURCE,
    });
    const { result, placement } = await launchWithFailover({
      provider: 'gcp',
      instanceType: request.instanceType,
      first: price(zone),
      pinned: request.zonePinned === true,
      candidates: async () => (await acceleratorZones(this.api, shape.accelerator, [regionOf(zone), ...(request.regions ?? [])], signal)).map(price),
      attempt: (c, suffix) =>
        this.insertIn(
          { ...request, ...(suffix ? { launchKey: `${request.launchKey ? `${request.launchKey}-` : ''}${c.zone ?? zone}` } : {}) },
          c.zone ?? zone,
          { shape, image, diskGb, login, sshTag },
          signal,
        ),
      scope: (err) => (err.code === 'capacity' ? 'zone' : err.code === 'quota' ? 'region' : undefined),
      ...(request.progress ? { progress: request.progress } : {}),
    });
    return { ...result, placement };
  }

  private async insertIn(request: LaunchRequest, zone: string, prep: InsertPrep, signal?: AbortSignal): Promise<Instance> {
    const { shape, image, diskGb, login, sshTag } = prep;
    const name = launchNameFor(request);
    const body = {
      name,
      machineType: `zones/${zone}/machineTypes/${shape.machineType}`,
      guestAccelerators: shape.attached ? [{ acceleratorType: `zones/${zone}/acceleratorTypes/${shape.accelerator}`, acceleratorCount: shape.gpuCount }] : [],
      disks: [
        {
          boot: true,
          autoDelete: true,
          initializeParams: { sourceImage: image.source, diskSizeGb: String(diskGb), diskType: `zones/${zone}/diskTypes/pd-balanced` },
        },
      ],
      networkInterfaces: [{ network: 'global/networks/default', accessConfigs: [{ type: 'ONE_TO_ONE_NAT', name: 'External NAT' }] }],
      tags: { items: [sshTag, ...(request.cluster ? [clusterTagFor(request.runId)] : [])] },
      // The host's storage client (checkpoints, staged data, outputs on gs://) takes its token from the metadata
      // server, which has one only for a VM with a service account; read/write on Cloud Storage is all it is given.
      serviceAccounts: [{ email: request.serviceAccount ?? 'default', scopes: [GCS_READ_WRITE_SCOPE] }],
      // GPUs cannot live-migrate: maintenance must terminate. Spot VMs are deleted on preemption so nothing bills after.
      scheduling: request.spot
        ? { provisioningModel: 'SPOT', instanceTerminationAction: 'DELETE', onHostMaintenance: 'TERMINATE', automaticRestart: false }
        : { provisioningModel: 'STANDARD', onHostMaintenance: 'TERMINATE', automaticRestart: true },
      // enable-guest-attributes: the guest agent publishes the instance's SSH host keys (hostkeys/), which the
      // first connection then checks instead of trusting whatever answers (gcloud compute ssh does the same).
      // Under OS Login the guest ignores ssh-keys; the key went to the caller's OS Login profile instead.
      metadata: {
        items: [
          ...(login.osLogin ? [] : [{ key: 'ssh-keys', value: `${login.user}:${request.sshPublicKey.trim()}` }]),
          { key: 'install-nvidia-driver', value: 'True' },
          { key: 'enable-guest-attributes', value: 'TRUE' },
        ],
      },
      labels: { [OWNER_TAG]: 'owned', [RUN_LABEL]: labelValue(request.runId), ...(request.ownerId ? { [OWNER_ID_TAG]: labelValue(request.ownerId) } : {}) },
    };
    const op = (await this.api.call(
      'POST',
      `${zonePath(zone, 'target.zone')}/instances?requestId=${uuidFrom(request.runId + (request.launchKey ? `#${request.launchKey}` : ''))}`,
      body,
      signal,
      {
        ...(this.options.retry ?? DEFAULT_RETRY),
        retryServerErrors: true,
      },
    )) as GcpOperation;
    await this.api.waitOperation(op, zone, signal);
    if (login.osLogin) await checkOsLoginRole(this.api, zone, name, login.account, (id, s) => this.terminate(id, s), signal);
    const inst = await this.describe(`${zone}/${name}`, signal);
    if (!inst) throw new ProviderError('server', `insert of ${name} finished but the instance is not there`, 'gcp');
    return inst;
  }

  /** The metadata user, unless the instance is under OS Login (no ssh-keys of ours) and we know our POSIX user. */
  private sshUserOf(i: GcpInstance): string {
    const items = i.metadata?.items ?? [];
    return !items.some((m) => m.key === 'ssh-keys') && this.osLoginUser ? this.osLoginUser : (this.options.sshUser ?? 'ubuntu');
  }

  private toInstance(i: GcpInstance): Instance {
    const zone = tail(i.zone) || this.options.zone;
    const machine = tail(i.machineType);
    const acc = i.guestAccelerators?.[0];
    const shape = GCP_GPU_SHAPES.find(
      (x) => x.machineType === machine && (!x.attached || (x.accelerator === tail(acc?.acceleratorType) && x.gpuCount === acc?.acceleratorCount)),
    );
    const spot = i.scheduling?.provisioningModel === 'SPOT';
    return {
      provider: 'gcp',
      id: `${zone}/${i.name}`,
      name: i.name,
      runId: i.labels?.[RUN_LABEL],
      region: zone.replace(/-[a-z]$/, ''),
      zone,
      ...(i.labels?.[OWNER_ID_TAG] ? { ownerId: i.labels[OWNER_ID_TAG] } : {}),
      instanceType: shape ? gcpOfferName(shape) : machine,
      state: GCP_STATUSES[i.status ?? ''] ?? 'unknown',
      publicIp: i.networkInterfaces?.[0]?.accessConfigs?.[0]?.natIP,
      ...(i.networkInterfaces?.[0]?.networkIP ? { privateIp: i.networkInterfaces[0].networkIP } : {}),
      sshPort: this.options.sshPort ?? 22,
      sshUser: this.sshUserOf(i),
      spot,
      pricePerHour: shape ? (spot ? shape.spotPerHour : shape.onDemandPerHour) : undefined,
      launchedAt: i.creationTimestamp ? Date.parse(i.creationTimestamp) : undefined,
    };
  }

  private split(instanceId: string): { zone: string; name: string } {
    const [zone, name] = instanceId.includes('/') ? instanceId.split('/', 2) : [this.options.zone, instanceId];
    // Instance ids come back from run records and API answers: their zone is checked like a spec's.
    return { zone: requireCloudName('gcp', 'gcp-zone', 'the zone of instance id', zone ?? this.options.zone), name: name ?? instanceId };
  }

  async describe(instanceId: string, signal?: AbortSignal): Promise<Instance | undefined> {
    const { zone, name } = this.split(instanceId);
    try {
      return this.toInstance(
        (await this.api.call('GET', `${zonePath(zone, 'instance zone')}/instances/${encodeURIComponent(name)}`, undefined, signal)) as GcpInstance,
      );
    } catch (err) {
      if (!(err instanceof ProviderError && err.code === 'not-found')) throw err;
    }
    // Gone: a spot VM deleted on preemption leaves a compute.instances.preempted operation behind.
    const filter = encodeURIComponent(`operationType="compute.instances.preempted" AND targetLink:"/instances/${name}"`);
    const ops = (await this.api.call('GET', `${zonePath(zone, 'instance zone')}/operations?filter=${filter}`, undefined, signal)) as
      { items?: ReadonlyArray<{ targetLink?: string }> } | undefined;
    const preempted = (ops?.items ?? []).some((o) => tail(o.targetLink) === name);
    if (!preempted) return undefined;
    return {
      provider: 'gcp',
      id: instanceId,
      name,
      region: zone.replace(/-[a-z]$/, ''),
      zone,
      instanceType: '',
      state: 'terminated',
      sshPort: this.options.sshPort ?? 22,
      sshUser: this.options.sshUser ?? 'ubuntu',
      spot: true,
      interrupted: true,
    };
  }

  async waitForSsh(instanceId: string, options: WaitForSshOptions): Promise<Instance> {
    const instance = await waitForSshViaDescribe(this, instanceId, options);
    const hostKeys = await this.guestHostKeys(instanceId, options.signal);
    return hostKeys.length > 0 ? { ...instance, hostKeys } : instance;
  }

  /**
   * The SSH host keys the guest agent published under guest attributes hostkeys/ ("type base64" lines). None
   * when the image has no agent or it has not published yet (404): the first connection then asks the user.
   */
  async guestHostKeys(instanceId: string, signal?: AbortSignal): Promise<string[]> {
    const [zone, name] = instanceId.split('/');
    if (!zone || !name) return [];
    try {
      const res = (await this.api.call(
        'GET',
        `${zonePath(zone, 'the zone of instance id')}/instances/${encodeURIComponent(name)}/getGuestAttributes?queryPath=${encodeURIComponent('hostkeys/')}`,
        undefined,
        signal,
      )) as { queryValue?: { items?: ReadonlyArray<{ namespace?: string; key?: string; value?: string }> } } | undefined;
      return (res?.queryValue?.items ?? [])
        .filter((i) => i.namespace === 'hostkeys' && /^[a-z0-9@.-]+$/.test(i.key ?? '') && /^[A-Za-z0-9+/=]+$/.test(i.value ?? ''))
        .map((i) => `${i.key} ${i.value}`);
    } catch (err) {
      if (err instanceof ProviderError && err.code === 'not-found') return [];
      throw err;
    }
  }

  async terminate(instanceId: string, signal?: AbortSignal): Promise<void> {
    const { zone, name } = this.split(instanceId);
    let op: GcpOperation;
    try {
      op = (await this.api.call('DELETE', `${zonePath(zone, 'instance zone')}/instances/${encodeURIComponent(name)}`, undefined, signal)) as GcpOperation;
    } catch (err) {
      if (err instanceof ProviderError && err.code === 'not-found') return;
      throw err;
    }
    await this.api.waitOperation(op, zone, signal);
  }

  async stop(instanceId: string, signal?: AbortSignal): Promise<void> {
    const { zone, name } = this.split(instanceId);
    const op = (await this.api.call(
      'POST',
      `${zonePath(zone, 'instance zone')}/instances/${encodeURIComponent(name)}/stop`,
      undefined,
      signal,
    )) as GcpOperation;
    await this.api.waitOperation(op, zone, signal);
  }

  get consistencyWindowMs(): number {
    return this.options.consistencyWindowMs ?? 120_000;
  }

  /** A delete is awaited through its operation: cleanup must allow that long (and the DELETE call's own retries). */
  get terminateTimeoutMs(): number {
    return (this.options.operationTimeoutMs ?? 600_000) + 60_000;
  }

  /** The launch's VM by its own name in its zone (get is strongly consistent), then by the run's label. */
  async findLaunched(request: LaunchRequest, signal?: AbortSignal): Promise<Instance[]> {
    const zone = request.zone ?? this.options.zone;
    const named = await this.describe(`${zone}/${launchNameFor(request)}`, signal);
    const labelled = (await this.listOwned(signal)).filter((i) => i.runId === labelValue(request.runId));
    return [...(named && !named.interrupted ? [named] : []), ...labelled.filter((i) => i.id !== named?.id)];
  }

  /** The firewall rule between the run's nodes (clusterTagFor); its instances all go to one zone (the launches pin it). */
  async prepareCluster(request: LaunchRequest, signal?: AbortSignal): Promise<void> {
    const tag = clusterTagFor(request.runId);
    try {
      await this.api.call('GET', `/global/firewalls/${encodeURIComponent(tag)}`, undefined, signal);
      return;
    } catch (err) {
      if (!(err instanceof ProviderError && err.code === 'not-found')) throw err;
    }
    await insertFirewall(
      this.api,
      {
        name: tag,
        description: `Remote Fine-Tune: the nodes of run ${request.runId} reach each other`,
        sourceTags: [tag],
        targetTags: [tag],
        allowed: [{ IPProtocol: 'tcp' }, { IPProtocol: 'udp' }, { IPProtocol: 'icmp' }],
      },
      signal,
    );
  }

  async releaseCluster(runId: string, signal?: AbortSignal): Promise<void> {
    let op: GcpOperation;
    try {
      op = (await this.api.call('DELETE', `/global/firewalls/${encodeURIComponent(clusterTagFor(runId))}`, undefined, signal)) as GcpOperation;
    } catch (err) {
      if (err instanceof ProviderError && err.code === 'not-found') return;
      throw err;
    }
    await this.api.waitOperation(op, undefined, signal);
  }

  async listOwned(signal?: AbortSignal): Promise<Instance[]> {
    const out: Instance[] = [];
    let pageToken: string | undefined;
    do {
      const q = `filter=${encodeURIComponent(`labels.${OWNER_TAG}=owned`)}${pageToken ? `&pageToken=${encodeURIComponent(pageToken)}` : ''}`;
      const res = (await this.api.call('GET', `/aggregated/instances?${q}`, undefined, signal)) as
        { items?: Record<string, { instances?: GcpInstance[] }>; nextPageToken?: string } | undefined;
      for (const scoped of Object.values(res?.items ?? {})) for (const i of scoped.instances ?? []) out.push(this.toInstance(i));
      pageToken = res?.nextPageToken;
    } while (pageToken);
    return out;
  }
}
