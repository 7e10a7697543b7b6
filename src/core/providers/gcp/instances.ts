// GCP Compute Engine REST v1. Ownership is the label remote-finetune=owned plus remote-finetune-run=<run id>;
// instance ids here are "<zone>/<name>" because every Compute call is addressed by zone and name.
// Inserts carry a requestId derived from the run id, so a retried insert never makes a second VM.
import { createHash } from 'node:crypto';
import { sleep } from '../abort';
import { codeForStatus, DEFAULT_RETRY, requestJson } from '../http';
import type { HttpErrorDetail, RetryPolicy } from '../http';
import { DLVM_IMAGE_FAMILY, DLVM_IMAGE_PROJECT, GCP_GPU_SHAPES, GCP_PRICE_SOURCE, gcpOfferName, gcpShapeOf } from './catalog';
import type { GcpGpuShape } from './catalog';
import type { TokenSource } from './token';
import { matchesQuery } from '../offers';
import { launchWithFailover } from '../zoneFailover';
import type { ZoneChoice } from '../zoneFailover';
import { waitForSshViaDescribe } from '../sshProbe';
import { instanceNameFor, launchNameFor, OWNER_ID_TAG, OWNER_TAG, ProviderError } from '../provider';
import { callerIpv4 } from '../callerIp';
import { requireCloudName } from '../cloudNames';
import { memberOf, noAccountError, OSLOGIN_BASE, osLoginRefusal, osLoginState, posixUser } from './osLogin';
import type { Instance, InstanceState, LaunchRequest, Offer, OfferQuery, Provider, ProviderErrorCode, WaitForSshOptions } from '../provider';

const GCP_COMPUTE_BASE = 'https://compute.googleapis.com/compute/v1';
const RUN_LABEL = 'remote-finetune-run';
const GCS_READ_WRITE_SCOPE = 'https://www.googleapis.com/auth/devstorage.read_write';
/** Where the default zone comes from: a spec's target.zone replaces the setting (providerSelection.ts). */
const ZONE_FIELD = 'target.zone (or the remoteFinetune.gcp.zone setting)';

/** The URL path of a zone, refused unless it is a zone name: a zone is one path segment, never `..` or `a/b`. */
function zonePath(zone: string, field: string): string {
  return `/zones/${encodeURIComponent(requireCloudName('gcp', 'gcp-zone', field, zone))}`;
}

export interface GcpOptions {
  readonly project: string;
  /** Default zone for launches and offers (us-central1-a). */
  readonly zone: string;
  readonly auth: TokenSource;
  readonly baseUrl?: string;
  readonly imageFamily?: string;
  readonly imageProject?: string;
  /** The user the ssh-keys metadata opens (default ubuntu); under OS Login the POSIX user OS Login assigns instead. */
  readonly sshUser?: string;
  /** OS Login API root (tests point it at the emulator). */
  readonly osLoginBaseUrl?: string;
  /** SSH port of the instances; 22 on GCP. Tests point it at a loopback sshd. */
  readonly sshPort?: number;
  /** This machine's public IPv4 (tests); default: asked of checkip.amazonaws.com. */
  readonly callerIp?: (signal?: AbortSignal) => Promise<string>;
  readonly retry?: RetryPolicy;
  readonly requestTimeoutMs?: number;
  readonly operationPollMs?: number;
  /** How long an operation (an insert, a delete) is awaited; Compute Engine's deletes of GPU VMs take minutes. */
  readonly operationTimeoutMs?: number;
  /** How long after an insert whose answer never came its VM may still appear (the operation runs on). */
  readonly consistencyWindowMs?: number;
}

interface GcpOperation {
  readonly name: string;
  readonly status: 'PENDING' | 'RUNNING' | 'DONE';
  readonly zone?: string;
  readonly error?: { readonly errors?: ReadonlyArray<{ readonly code?: string; readonly message?: string }> };
  readonly httpErrorStatusCode?: number;
}

interface GcpInstance {
  readonly id?: string;
  readonly name: string;
  readonly zone?: string;
  readonly machineType?: string;
  readonly status?: string;
  readonly labels?: Record<string, string>;
  readonly creationTimestamp?: string;
  readonly networkInterfaces?: ReadonlyArray<{ readonly networkIP?: string; readonly accessConfigs?: ReadonlyArray<{ readonly natIP?: string }> }>;
  readonly guestAccelerators?: ReadonlyArray<{ readonly acceleratorType?: string; readonly acceleratorCount?: number }>;
  readonly scheduling?: { readonly provisioningModel?: string };
  readonly metadata?: { readonly items?: ReadonlyArray<{ readonly key?: string; readonly value?: string }> };
}

const STATUS: Record<string, InstanceState> = {
  PROVISIONING: 'pending',
  STAGING: 'pending',
  RUNNING: 'running',
  STOPPING: 'stopping',
  SUSPENDING: 'stopping',
  SUSPENDED: 'stopped',
  STOPPED: 'stopped',
  TERMINATED: 'stopped',
  REPAIRING: 'pending',
};

/**
 * Compute Engine's error reasons (cloud.google.com/compute/docs/api/errors, .../troubleshooting/quota-errors):
 * a 403 is not always auth. 403 quotaExceeded (and the QUOTA_EXCEEDED operation error) is a quota the person
 * raises in the console; 403 rateLimitExceeded / userRateLimitExceeded is the API's rate limit, retried with
 * exponential backoff as Google asks; only forbidden/insufficientPermissions and the like are auth.
 */
const RATE_REASONS = new Set(['rateLimitExceeded', 'userRateLimitExceeded', 'RATE_LIMIT_EXCEEDED']);

function codeOf(errCode: string | undefined, status: number): ProviderErrorCode {
  const c = errCode ?? '';
  if (c.startsWith('ZONE_RESOURCE_POOL_EXHAUSTED') || c === 'RESOURCE_EXHAUSTED') return 'capacity';
  if (RATE_REASONS.has(c)) return 'rate-limited';
  if (c.includes('QUOTA') || c === 'quotaExceeded' || c === 'dailyLimitExceeded') return 'quota';
  if (c === 'notFound' || c === 'RESOURCE_NOT_FOUND') return 'not-found';
  return codeForStatus(status);
}

function gcpError(detail: HttpErrorDetail): { code: ProviderErrorCode; message: string } {
  const body = detail.body as { error?: { message?: string; errors?: ReadonlyArray<{ reason?: string; message?: string }>; status?: string } } | undefined;
  const reason = body?.error?.errors?.[0]?.reason;
  const code = codeOf(reason, detail.status);
  return { code, message: body?.error?.message ?? `HTTP ${detail.status}`, ...(code === 'rate-limited' ? { retriable: true } : {}) };
}

/** A UUID made from a string, for requestId: the same run always sends the same id. */
function uuidFrom(text: string): string {
  const h = createHash('sha256').update(text).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

function regionOf(zone: string): string {
  return zone.replace(/-[a-z]$/, '');
}

/** What one insert needs that does not depend on the zone: made once, before the first zone is tried. */
interface InsertPrep {
  readonly shape: GcpGpuShape;
  readonly image: { readonly source: string };
  readonly diskGb: number;
  readonly login: { user: string; osLogin: false } | { user: string; osLogin: true; account: string };
  readonly sshTag: string;
}

function tail(url: string | undefined): string {
  return (url ?? '').split('/').pop() ?? '';
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
  private readonly root: string;
  private readonly base: string;
  /** The POSIX user OS Login assigned to the caller in this project, once the project is known to use OS Login. */
  private osLoginUser?: string;

  constructor(private readonly options: GcpOptions) {
    this.root = (options.baseUrl ?? GCP_COMPUTE_BASE).replace(/\/$/, '');
    this.base = `${this.root}/projects/${encodeURIComponent(options.project)}`;
  }

  private call(method: 'GET' | 'POST' | 'DELETE', path: string, body: unknown, signal: AbortSignal | undefined, retry?: RetryPolicy): Promise<unknown> {
    this.checkProject();
    return this.callUrl(method, `${this.base}${path}`, body, signal, retry);
  }

  private async callUrl(method: 'GET' | 'POST' | 'DELETE', url: string, body: unknown, signal: AbortSignal | undefined, retry?: RetryPolicy): Promise<unknown> {
    const token = await this.options.auth.token(signal);
    // The quota project the credentials name is billed for the call, as google-auth-library sends it.
    const quota = this.options.auth.quotaProjectId;
    const res = await requestJson(
      {
        method,
        url,
        headers: { authorization: `Bearer ${token}`, ...(quota ? { 'x-goog-user-project': quota } : {}) },
        body,
        timeoutMs: this.options.requestTimeoutMs ?? 30_000,
        retry: retry ?? this.options.retry ?? DEFAULT_RETRY,
        signal,
      },
      'gcp',
      gcpError,
    );
    return res.body;
  }

  /** The project is the user's own setting, but an environment variable can supply it too: refused unless it is a project id. */
  private checkProject(): void {
    requireCloudName('gcp', 'gcp-project', 'the remoteFinetune.gcp.project setting (or GOOGLE_CLOUD_PROJECT)', this.options.project);
  }

  /**
   * The boot image: the newest non-deprecated image of the family (images.getFromFamily), named exactly in
   * the insert so the image checked is the image booted. A retired family is a clear error before anything
   * is created (an insert naming it fails with a bare 404 after the firewall rule is made).
   */
  private async bootImage(signal?: AbortSignal): Promise<{ source: string; diskSizeGb: number }> {
    const project = this.options.imageProject ?? DLVM_IMAGE_PROJECT;
    const family = this.options.imageFamily ?? DLVM_IMAGE_FAMILY;
    requireCloudName('gcp', 'gcp-project', 'image project', project);
    let image: { name?: string; status?: string; diskSizeGb?: string } | undefined;
    try {
      image = (await this.callUrl(
        'GET',
        `${this.root}/projects/${encodeURIComponent(project)}/global/images/family/${encodeURIComponent(family)}`,
        undefined,
        signal,
      )) as typeof image;
    } catch (err) {
      if (!(err instanceof ProviderError && err.code === 'not-found')) throw err;
    }
    if (!image?.name || (image.status && image.status !== 'READY')) {
      throw new ProviderError(
        'not-found',
        `the image family ${family} in project ${project} has no usable image (retired or deprecated): list the current ones with \`gcloud compute images list --project ${project} --no-standard-images\``,
        'gcp',
      );
    }
    return { source: `projects/${project}/global/images/${image.name}`, diskSizeGb: Number(image.diskSizeGb ?? 0) };
  }

  /** Polls a zone operation until DONE; an operation error becomes a ProviderError. */
  private async waitOperation(op: GcpOperation, zone: string | undefined, signal?: AbortSignal): Promise<void> {
    const deadline = Date.now() + (this.options.operationTimeoutMs ?? 600_000);
    let current = op;
    while (current.status !== 'DONE') {
      if (Date.now() > deadline) throw new ProviderError('timeout', `operation ${op.name} still ${current.status}`, 'gcp');
      await sleep(this.options.operationPollMs ?? 2000, signal);
      current = (await this.call(
        'GET',
        `${zone ? zonePath(zone, 'operation zone') : '/global'}/operations/${encodeURIComponent(op.name)}`,
        undefined,
        signal,
      )) as GcpOperation;
    }
    const first = current.error?.errors?.[0];
    if (first) throw new ProviderError(codeOf(first.code, current.httpErrorStatusCode ?? 400), `${first.code ?? 'error'}: ${first.message ?? ''}`, 'gcp');
  }

  async listOffers(query: OfferQuery, signal?: AbortSignal): Promise<Offer[]> {
    // A three-part region (us-central1-a) is a zone; an unchecked region would only filter the offers.
    const regionIsZone = query.region !== undefined && query.region.split('-').length === 3;
    const zone = query.zone ?? (regionIsZone ? query.region : undefined) ?? this.options.zone;
    const field = query.zone ? 'target.zone' : regionIsZone ? 'target.region' : ZONE_FIELD;
    if (query.region && !regionIsZone) requireCloudName('gcp', 'gcp-region', 'target.region', query.region);
    const res = (await this.call('GET', `${zonePath(zone, field)}/acceleratorTypes`, undefined, signal)) as
      { items?: ReadonlyArray<{ name: string }> } | undefined;
    const inZone = new Set((res?.items ?? []).map((a) => a.name));
    const region = zone.replace(/-[a-z]$/, '');
    const offers: Offer[] = [];
    for (const shape of GCP_GPU_SHAPES) {
      for (const spot of [false, true]) {
        offers.push({
          provider: 'gcp',
          instanceType: gcpOfferName(shape),
          gpu: shape.gpu,
          gpuCount: shape.gpuCount,
          vramGiB: shape.vramGiB,
          region,
          zone,
          pricePerHour: spot ? shape.spotPerHour : shape.onDemandPerHour,
          priceSource: GCP_PRICE_SOURCE,
          spot,
          // GCP reports which accelerators a zone has, not free capacity: present is "unknown", absent is "unavailable".
          capacity: inZone.has(shape.accelerator) ? 'unknown' : 'unavailable',
          vcpus: shape.vcpus,
          memoryGiB: shape.memoryGiB,
        });
      }
    }
    return offers.filter((o) =>
      matchesQuery(o, { ...query, region: query.region ? (query.region.split('-').length === 3 ? region : query.region) : undefined }),
    );
  }

  /**
   * A firewall rule opening 22 to this machine's /32 only, applied by a target tag to our instances. Without
   * it an instance relies on the default network's default-allow-ssh (0.0.0.0/0), where one exists at all.
   * A rule of ours found by name is verified before reuse.
   */
  private async ensureFirewall(signal?: AbortSignal): Promise<string> {
    const ip = await callerIpv4('gcp', this.options.callerIp, signal);
    const tag = `rft-ssh-${ip.replace(/\./g, '-')}`;
    type Rule = { sourceRanges?: string[]; targetTags?: string[]; allowed?: Array<{ IPProtocol?: string; ports?: string[] }>; direction?: string };
    let rule: Rule | undefined;
    try {
      rule = (await this.call('GET', `/global/firewalls/${encodeURIComponent(tag)}`, undefined, signal)) as Rule;
    } catch (err) {
      if (!(err instanceof ProviderError && err.code === 'not-found')) throw err;
    }
    if (rule) {
      const ok = JSON.stringify(rule.sourceRanges ?? []) === JSON.stringify([`${ip}/32`]) && (rule.targetTags ?? []).includes(tag);
      if (!ok)
        throw new ProviderError(
          'invalid',
          `firewall rule ${tag} allows ${(rule.sourceRanges ?? []).join(', ') || 'nothing'} to ${(rule.targetTags ?? []).join(', ') || 'every instance'}, not ${ip}/32 to ${tag}: delete it, then retry`,
          'gcp',
        );
      return tag;
    }
    await this.insertFirewall(
      {
        name: tag,
        description: `Remote Fine-Tune: SSH from ${ip} only`,
        sourceRanges: [`${ip}/32`],
        targetTags: [tag],
        allowed: [{ IPProtocol: 'tcp', ports: ['22'] }],
      },
      signal,
    );
    return tag;
  }

  /** An ingress rule on the default network, awaited through its global operation. */
  private async insertFirewall(rule: Record<string, unknown>, signal?: AbortSignal): Promise<void> {
    const op = (await this.call(
      'POST',
      '/global/firewalls',
      { network: 'global/networks/default', direction: 'INGRESS', priority: 1000, ...rule },
      signal,
    )) as GcpOperation;
    await this.waitOperation(op, undefined, signal);
  }

  /**
   * Who the instance will be reached as. Without OS Login: the ssh-keys metadata user. With it (project
   * metadata enable-oslogin=TRUE; our instances set no override): the key is imported into the caller's OS
   * Login profile and the POSIX user OS Login returns is the login. Refused up front when OS Login needs a
   * human (2-step verification, certificates) or the credentials name no account.
   */
  private async loginFor(
    publicKey: string,
    signal?: AbortSignal,
  ): Promise<{ user: string; osLogin: false } | { user: string; osLogin: true; account: string }> {
    const project = this.options.project;
    const meta = (await this.call('GET', '', undefined, signal)) as
      { commonInstanceMetadata?: { items?: Array<{ key?: string; value?: string }> } } | undefined;
    const state = osLoginState(meta?.commonInstanceMetadata?.items);
    if (!state.enabled) return { user: this.options.sshUser ?? 'ubuntu', osLogin: false };
    const refusal = osLoginRefusal(state, project);
    if (refusal) throw refusal;
    const account = await this.options.auth.account?.(signal);
    if (!account) throw noAccountError(project, this.options.auth.describe);
    const res = (await this.callUrl(
      'POST',
      `${(this.options.osLoginBaseUrl ?? OSLOGIN_BASE).replace(/\/$/, '')}/users/${encodeURIComponent(account)}:importSshPublicKey?projectId=${encodeURIComponent(project)}`,
      { key: publicKey.trim() },
      signal,
    )) as { loginProfile?: Parameters<typeof posixUser>[0] } | undefined;
    const user = posixUser(res?.loginProfile);
    if (!user) throw new ProviderError('server', `OS Login imported the key for ${account} but returned no POSIX account in project ${project}`, 'gcp');
    this.osLoginUser = user;
    return { user, osLogin: true, account };
  }

  /**
   * Under OS Login the key opens the instance only while the caller holds compute.instances.osAdminLogin on it
   * (osAdminLogin: the runner's watchdog powers the instance off with sudo). Asked of the instance itself
   * (testIamPermissions sees grants inherited from project, folder and organisation); without it the instance
   * is deleted again and the error names the role to grant.
   */
  private async checkOsLoginRole(zone: string, name: string, account: string, signal?: AbortSignal): Promise<void> {
    const wanted = ['compute.instances.osAdminLogin'];
    const res = (await this.call(
      'POST',
      `${zonePath(zone, 'instance zone')}/instances/${encodeURIComponent(name)}/testIamPermissions`,
      { permissions: wanted },
      signal,
    )) as { permissions?: string[] } | undefined;
    if ((res?.permissions ?? []).includes('compute.instances.osAdminLogin')) return;
    await this.terminate(`${zone}/${name}`, signal).catch(() => undefined);
    throw new ProviderError(
      'auth',
      `${account} may not log in to instances of project ${this.options.project} through OS Login with sudo (the on-host watchdog powers an idle instance off): grant roles/compute.osAdminLogin, e.g. \`gcloud projects add-iam-policy-binding ${this.options.project} --member=${memberOf(account)} --role=roles/compute.osAdminLogin\`; the instance was deleted again`,
      'gcp',
    );
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
    this.checkProject();
    const zone = requireCloudName('gcp', 'gcp-zone', request.zone ? 'target.zone' : ZONE_FIELD, request.zone ?? this.options.zone);
    for (const r of request.regions ?? []) requireCloudName('gcp', 'gcp-region', 'target.regions', r);
    const image = await this.bootImage(signal);
    const diskGb = request.diskGiB ?? Math.max(200, image.diskSizeGb);
    if (diskGb < image.diskSizeGb)
      throw new ProviderError(
        'invalid',
        `a ${diskGb} GB boot disk is smaller than the image ${image.source.split('/').pop() ?? ''} (${image.diskSizeGb} GB): ask for at least ${image.diskSizeGb} GB`,
        'gcp',
      );
    const login = await this.loginFor(request.sshPublicKey, signal);
    const sshTag = await this.ensureFirewall(signal);
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
      candidates: async () => (await this.acceleratorZones(shape.accelerator, [regionOf(zone), ...(request.regions ?? [])], signal)).map(price),
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

  /**
   * Zones of these regions that have the accelerator (aggregated acceleratorTypes filtered by name), the regions
   * in the order given, zones by name within each.
   */
  private async acceleratorZones(accelerator: string, regions: readonly string[], signal?: AbortSignal): Promise<string[]> {
    const res = (await this.call('GET', `/aggregated/acceleratorTypes?filter=${encodeURIComponent(`name = "${accelerator}"`)}`, undefined, signal)) as
      { items?: Record<string, { acceleratorTypes?: ReadonlyArray<{ name?: string; zone?: string }> }> } | undefined;
    const zones = new Set<string>();
    for (const [scope, v] of Object.entries(res?.items ?? {}))
      for (const a of v.acceleratorTypes ?? []) if (a.name === accelerator) zones.add(tail(a.zone) || scope.replace(/^zones\//, ''));
    const order = [...new Set(regions)];
    return [...zones].filter((z) => order.includes(regionOf(z))).sort((a, b) => order.indexOf(regionOf(a)) - order.indexOf(regionOf(b)) || a.localeCompare(b));
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
    const op = (await this.call(
      'POST',
      `${zonePath(zone, 'target.zone')}/instances?requestId=${uuidFrom(request.runId + (request.launchKey ? `#${request.launchKey}` : ''))}`,
      body,
      signal,
      {
        ...(this.options.retry ?? DEFAULT_RETRY),
        retryServerErrors: true,
      },
    )) as GcpOperation;
    await this.waitOperation(op, zone, signal);
    if (login.osLogin) await this.checkOsLoginRole(zone, name, login.account, signal);
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
      state: STATUS[i.status ?? ''] ?? 'unknown',
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
        (await this.call('GET', `${zonePath(zone, 'instance zone')}/instances/${encodeURIComponent(name)}`, undefined, signal)) as GcpInstance,
      );
    } catch (err) {
      if (!(err instanceof ProviderError && err.code === 'not-found')) throw err;
    }
    // Gone: a spot VM deleted on preemption leaves a compute.instances.preempted operation behind.
    const filter = encodeURIComponent(`operationType="compute.instances.preempted" AND targetLink:"/instances/${name}"`);
    const ops = (await this.call('GET', `${zonePath(zone, 'instance zone')}/operations?filter=${filter}`, undefined, signal)) as
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
      const res = (await this.call(
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
      op = (await this.call('DELETE', `${zonePath(zone, 'instance zone')}/instances/${encodeURIComponent(name)}`, undefined, signal)) as GcpOperation;
    } catch (err) {
      if (err instanceof ProviderError && err.code === 'not-found') return;
      throw err;
    }
    await this.waitOperation(op, zone, signal);
  }

  async stop(instanceId: string, signal?: AbortSignal): Promise<void> {
    const { zone, name } = this.split(instanceId);
    const op = (await this.call('POST', `${zonePath(zone, 'instance zone')}/instances/${encodeURIComponent(name)}/stop`, undefined, signal)) as GcpOperation;
    await this.waitOperation(op, zone, signal);
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
      await this.call('GET', `/global/firewalls/${encodeURIComponent(tag)}`, undefined, signal);
      return;
    } catch (err) {
      if (!(err instanceof ProviderError && err.code === 'not-found')) throw err;
    }
    await this.insertFirewall(
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
      op = (await this.call('DELETE', `/global/firewalls/${encodeURIComponent(clusterTagFor(runId))}`, undefined, signal)) as GcpOperation;
    } catch (err) {
      if (err instanceof ProviderError && err.code === 'not-found') return;
      throw err;
    }
    await this.waitOperation(op, undefined, signal);
  }

  async listOwned(signal?: AbortSignal): Promise<Instance[]> {
    const out: Instance[] = [];
    let pageToken: string | undefined;
    do {
      const q = `filter=${encodeURIComponent(`labels.${OWNER_TAG}=owned`)}${pageToken ? `&pageToken=${encodeURIComponent(pageToken)}` : ''}`;
      const res = (await this.call('GET', `/aggregated/instances?${q}`, undefined, signal)) as
        { items?: Record<string, { instances?: GcpInstance[] }>; nextPageToken?: string } | undefined;
      for (const scoped of Object.values(res?.items ?? {})) for (const i of scoped.instances ?? []) out.push(this.toInstance(i));
      pageToken = res?.nextPageToken;
    } while (pageToken);
    return out;
  }
}
