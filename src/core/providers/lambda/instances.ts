// Lambda Cloud REST API v1 (https://cloud.lambda.ai/api/v1, docs.lambda.ai/api/cloud, OpenAPI 1.10).
// Ownership is the instance name (rft-<run id>) and, on launch, tags naming the owner and the run.
// "Requests to the /instance-operations/launch endpoint are limited to one request per 12 seconds":
// launches are spaced by launchMinIntervalMs (12 s) and a 429 is retried with backoff, never a 5xx (that
// launch may have happened). Errors are read by their `code` ("avoid relying on the values of message"):
// global/object-does-not-exist is not-found, whatever the HTTP status.
import { sleep, throwIfAborted } from '../abort';
import { codeForStatus, DEFAULT_RETRY, requestJson } from '../http';
import type { HttpErrorDetail, RetryPolicy } from '../http';
import { waitForSshViaDescribe } from '../sshProbe';
import { launchNameFor, INSTANCE_NAME_PREFIX, OWNER_ID_TAG, OWNER_TAG, ProviderError, runIdFromName, unlessGone } from '../provider';
import type { Instance, InstanceState, LaunchRequest, Offer, OfferQuery, Provider, ProviderErrorCode, WaitForSshOptions } from '../provider';
import { matchesQuery } from '../offers';
import { requireCloudName } from '../cloudNames';
import { lambdaGpuOf } from './catalog';
import type { LambdaInstanceType } from './catalog';

const LAMBDA_API_BASE = 'https://cloud.lambda.ai/api/v1';
/** Lambda tag keys are letters, digits and dashes: the run id tag under a dash name. */
const LAMBDA_RUN_TAG = 'remote-finetune-run-id';

export interface LambdaOptions {
  readonly apiKey: string;
  readonly baseUrl?: string;
  /** Lambda's documented launch limit; tests inject a few ms. */
  readonly launchMinIntervalMs?: number;
  readonly retry?: RetryPolicy;
  readonly requestTimeoutMs?: number;
  /** SSH port of the instances; 22 on Lambda. Tests point it at a loopback sshd. */
  readonly sshPort?: number;
  /** This person's owner id: tagged on launch; listOwned then offers only instances carrying it (or none). */
  readonly ownerId?: string;
  /** How long after a launch whose answer never came its instance may still be missing from the listing. */
  readonly consistencyWindowMs?: number;
}

interface LambdaInstanceTypeEntry {
  readonly instance_type: LambdaInstanceType;
  readonly regions_with_capacity_available: ReadonlyArray<{ readonly name: string }>;
}

interface LambdaInstance {
  readonly id: string;
  readonly name?: string | null;
  readonly ip?: string | null;
  readonly private_ip?: string | null;
  readonly status: string;
  readonly region?: { readonly name: string };
  readonly instance_type?: LambdaInstanceType;
  /** Launch tags, as the API returns them (key/value pairs). */
  readonly tags?: ReadonlyArray<{ readonly key: string; readonly value: string }> | null;
}

function ownerOf(i: LambdaInstance): string | undefined {
  const v = i.tags?.find((t) => t.key === OWNER_ID_TAG || t.key === OWNER_TAG)?.value;
  return v && v !== 'true' ? v : undefined;
}

function stateOf(status: string): InstanceState {
  switch (status) {
    case 'booting':
      return 'pending';
    case 'active':
      return 'running';
    // Unhealthy still bills and may recover; waitForSsh gives up on it at once (see there).
    case 'unhealthy':
      return 'running';
    case 'terminating':
      return 'terminating';
    case 'terminated':
      return 'terminated';
    // Lambda took it back: gone, not billing, the run is interrupted.
    case 'preempted':
      return 'terminated';
    default:
      return 'unknown';
  }
}

function lambdaError(detail: HttpErrorDetail): { code: ProviderErrorCode; message: string } {
  const body = detail.body as { error?: { code?: string; message?: string; suggestion?: string } } | undefined;
  const code = body?.error?.code ?? '';
  const message = [body?.error?.message, body?.error?.suggestion].filter(Boolean).join(' ') || `HTTP ${detail.status}`;
  if (code.includes('insufficient-capacity')) return { code: 'capacity', message };
  if (code.includes('quota')) return { code: 'quota', message };
  if (code.includes('unauthorized') || code.includes('invalid-api-key')) return { code: 'auth', message };
  if (code === 'global/object-does-not-exist' || code.includes('not-found')) return { code: 'not-found', message };
  if (code === 'global/rate-limited' || code.includes('rate-limit')) return { code: 'rate-limited', message };
  return { code: codeForStatus(detail.status), message };
}

export class LambdaProvider implements Provider {
  readonly kind = 'lambda' as const;
  readonly canStop = false;
  private readonly base: string;
  private readonly retry: RetryPolicy;
  private readonly timeoutMs: number;
  private readonly launchInterval: number;
  private readonly sshPort: number;
  private lastLaunchAt = 0;
  private launchQueue: Promise<void> = Promise.resolve();
  private prices = new Map<string, number>();

  constructor(private readonly options: LambdaOptions) {
    this.base = (options.baseUrl ?? LAMBDA_API_BASE).replace(/\/$/, '');
    this.retry = options.retry ?? DEFAULT_RETRY;
    this.timeoutMs = options.requestTimeoutMs ?? 30_000;
    this.launchInterval = options.launchMinIntervalMs ?? 12_000;
    this.sshPort = options.sshPort ?? 22;
  }

  private async call(method: 'GET' | 'POST', path: string, body: unknown, signal: AbortSignal | undefined, retry?: RetryPolicy): Promise<unknown> {
    const res = await requestJson(
      {
        method,
        url: `${this.base}${path}`,
        // Bearer header, never the URL: query strings end up in proxy logs.
        headers: { authorization: `Bearer ${this.options.apiKey}` },
        body,
        timeoutMs: this.timeoutMs,
        retry: retry ?? this.retry,
        signal,
      },
      'lambda',
      lambdaError,
    );
    return (res.body as { data?: unknown } | undefined)?.data;
  }

  async listOffers(query: OfferQuery, signal?: AbortSignal): Promise<Offer[]> {
    const data = (await this.call('GET', '/instance-types', undefined, signal)) as Record<string, LambdaInstanceTypeEntry> | undefined;
    const offers: Offer[] = [];
    // Lambda's own price for the type, as of this answer: one price everywhere, no spot.
    const priceSource = `Lambda Cloud /instance-types, ${new Date().toISOString().slice(0, 16)}Z`;
    for (const entry of Object.values(data ?? {})) {
      const t = entry.instance_type;
      const { gpu, count, vramGiB } = lambdaGpuOf(t);
      const price = t.price_cents_per_hour / 100;
      this.prices.set(t.name, price);
      const regions = entry.regions_with_capacity_available.map((r) => r.name);
      const common = {
        provider: 'lambda' as const,
        instanceType: t.name,
        gpu,
        gpuCount: count,
        vramGiB,
        pricePerHour: price,
        priceSource,
        spot: false,
        vcpus: t.specs?.vcpus,
        memoryGiB: t.specs?.memory_gib,
      };
      // No capacity anywhere still gets one row, so the person sees the type exists and what it costs.
      if (regions.length === 0) offers.push({ ...common, region: query.region ?? '-', capacity: 'unavailable' });
      for (const region of regions) offers.push({ ...common, region, capacity: 'available' });
    }
    // Lambda sells on-demand only; a spot query gets nothing rather than a wrong promise.
    return offers.filter((o) => matchesQuery(o, { ...query, spot: query.spot ? true : undefined }));
  }

  /** Lambda wants a named key registered once; reuse one with the same public key. */
  private async ensureSshKey(publicKey: string, signal?: AbortSignal): Promise<string> {
    const keys = ((await this.call('GET', '/ssh-keys', undefined, signal)) as ReadonlyArray<{ name: string; public_key: string }> | undefined) ?? [];
    const wanted = publicKey.trim().split(/\s+/).slice(0, 2).join(' ');
    const found = keys.find((k) => k.public_key.trim().split(/\s+/).slice(0, 2).join(' ') === wanted);
    if (found) return found.name;
    const name = `remote-finetune-${Date.now().toString(36)}`;
    await this.call('POST', '/ssh-keys', { name, public_key: publicKey.trim() }, signal, { ...this.retry, retryServerErrors: false });
    return name;
  }

  /** Serialises launches and spaces them by the documented minimum interval. */
  private async launchSlot(signal?: AbortSignal): Promise<() => void> {
    const previous = this.launchQueue;
    let release!: () => void;
    this.launchQueue = new Promise<void>((r) => (release = r));
    await previous;
    try {
      const wait = this.lastLaunchAt + this.launchInterval - Date.now();
      if (wait > 0) await sleep(wait, signal);
    } catch (err) {
      release();
      throw err;
    }
    return () => {
      this.lastLaunchAt = Date.now();
      release();
    };
  }

  async launch(request: LaunchRequest, signal?: AbortSignal): Promise<Instance> {
    throwIfAborted(signal);
    // From target.region or an offer (Lambda's own answer): either way checked before the key is registered.
    requireCloudName('lambda', 'lambda-region', 'target.region', request.region);
    const keyName = await this.ensureSshKey(request.sshPublicKey, signal);
    const release = await this.launchSlot(signal);
    let ids: string[];
    try {
      const data = (await this.call(
        'POST',
        '/instance-operations/launch',
        {
          region_name: request.region,
          instance_type_name: request.instanceType,
          ssh_key_names: [keyName],
          file_system_names: [],
          quantity: 1,
          name: launchNameFor(request),
          // The owner tag's value is this installation's owner id (or 'true' without one).
          tags: [
            { key: OWNER_TAG, value: request.ownerId ?? this.options.ownerId ?? 'true' },
            { key: LAMBDA_RUN_TAG, value: request.runId },
          ],
        },
        signal,
        { ...this.retry, retryServerErrors: false },
      )) as { instance_ids?: string[] } | undefined;
      ids = data?.instance_ids ?? [];
    } finally {
      release();
    }
    const id = ids[0];
    if (!id) throw new ProviderError('server', 'launch returned no instance id', 'lambda');
    return (
      (await this.describe(id, signal)) ?? {
        provider: 'lambda',
        id,
        name: launchNameFor(request),
        runId: request.runId,
        region: request.region,
        instanceType: request.instanceType,
        state: 'pending',
        sshPort: this.sshPort,
        sshUser: 'ubuntu',
        spot: false,
        pricePerHour: this.prices.get(request.instanceType),
        launchedAt: Date.now(),
      }
    );
  }

  /** Last raw status per id (unhealthy and preempted are finer than InstanceState). */
  private readonly statusOf = new Map<string, string>();

  private toInstance(i: LambdaInstance): Instance {
    this.statusOf.set(i.id, i.status);
    const name = i.name ?? undefined;
    const type = i.instance_type?.name ?? '';
    const price = i.instance_type ? i.instance_type.price_cents_per_hour / 100 : this.prices.get(type);
    return {
      provider: 'lambda',
      id: i.id,
      name,
      // A multi-node run's nodes after the first carry the run in their tag only (their names are the node's own).
      runId: i.tags?.find((t) => t.key === LAMBDA_RUN_TAG)?.value ?? runIdFromName(name),
      region: i.region?.name ?? '',
      instanceType: type,
      state: stateOf(i.status),
      publicIp: i.ip ?? undefined,
      ...(i.private_ip ? { privateIp: i.private_ip } : {}),
      sshPort: this.sshPort,
      sshUser: 'ubuntu',
      spot: false,
      pricePerHour: price,
      ...(ownerOf(i) ? { ownerId: ownerOf(i) } : {}),
      ...(i.status === 'preempted' ? { interrupted: true } : {}),
    };
  }

  async describe(instanceId: string, signal?: AbortSignal): Promise<Instance | undefined> {
    const data = (await unlessGone(this.call('GET', `/instances/${encodeURIComponent(instanceId)}`, undefined, signal))) as LambdaInstance | undefined;
    return data ? this.toInstance(data) : undefined;
  }

  /** As the others, but an instance Lambda reports unhealthy is given up at once instead of waited on to the timeout. */
  waitForSsh(instanceId: string, options: WaitForSshOptions): Promise<Instance> {
    const describe = async (id: string, signal?: AbortSignal): Promise<Instance | undefined> => {
      const i = await this.describe(id, signal);
      if (i && this.statusOf.get(id) === 'unhealthy')
        throw new ProviderError('unreachable', `Lambda reports instance ${id} unhealthy; it is not usable`, 'lambda');
      return i;
    };
    const watched: Provider = { ...this.asProvider(), describe };
    return waitForSshViaDescribe(watched, instanceId, options);
  }

  private asProvider(): Provider {
    return {
      kind: this.kind,
      canStop: this.canStop,
      listOffers: (q, s) => this.listOffers(q, s),
      launch: (r, s) => this.launch(r, s),
      waitForSsh: (id, o) => this.waitForSsh(id, o),
      describe: (id, s) => this.describe(id, s),
      terminate: (id, s) => this.terminate(id, s),
      stop: (id) => this.stop(id),
      listOwned: (s) => this.listOwned(s),
    };
  }

  async terminate(instanceId: string, signal?: AbortSignal): Promise<void> {
    await unlessGone(this.call('POST', '/instance-operations/terminate', { instance_ids: [instanceId] }, signal));
  }

  async stop(_instanceId: string): Promise<void> {
    throw new ProviderError('unsupported', 'Lambda Cloud instances cannot be stopped, only terminated', 'lambda');
  }

  get consistencyWindowMs(): number {
    return this.options.consistencyWindowMs ?? 120_000;
  }

  /** Lambda has no idempotency token: the launch's instance is the one with its name. */
  async findLaunched(request: LaunchRequest, signal?: AbortSignal): Promise<Instance[]> {
    const name = launchNameFor(request);
    return (await this.listOwned(signal)).filter((i) => i.name === name);
  }

  async listOwned(signal?: AbortSignal): Promise<Instance[]> {
    const data = ((await this.call('GET', '/instances', undefined, signal)) as LambdaInstance[] | undefined) ?? [];
    return (
      data
        .filter((i) => (i.name ?? '').startsWith(INSTANCE_NAME_PREFIX))
        // With an owner id, only instances tagged with it: a colleague's rft-… instance on a shared team account is not ours.
        .filter((i) => !this.options.ownerId || (i.tags ?? []).some((t) => t.key === OWNER_TAG && t.value === this.options.ownerId))
        .map((i) => this.toInstance(i))
        .filter((i) => i.state !== 'terminated')
    );
  }
}
