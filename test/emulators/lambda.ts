// Test double for Lambda Cloud's REST API v1 (the cloud cannot exist here). Speaks the documented
// JSON shapes: {data: …} on success, {error: {code, message, suggestion}} on failure (docs.lambda.ai/api/cloud,
// OpenAPI 1.10.0). As the service: launch is limited to one request per `launchWindowMs` (12 s documented;
// tests shrink it) and answers 429 global/rate-limited inside it; instances can be preempted (status
// "preempted") or become "unhealthy"; launch tags are kept and returned; unknown ids are
// global/object-does-not-exist. Slow settings: a new instance missing from GET /instances for listLagSec, and
// active with no address for noIpSec (Lambda hands out the IP minutes after a launch succeeds). Regions in
// noCapacityIn refuse launches with insufficient-capacity.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import { EmulatorBase, send } from './server';
import type { EmulatedInstance, EmulatorOptions, Fault } from './server';

export const LAMBDA_TYPES = [
  {
    name: 'gpu_1x_a10',
    description: '1x A10 (24 GB PCIe)',
    gpu_description: 'A10 (24 GB PCIe)',
    price_cents_per_hour: 75,
    specs: { vcpus: 30, memory_gib: 200, storage_gib: 1400, gpus: 1 },
    regions: ['us-east-1', 'us-west-1'],
  },
  {
    name: 'gpu_1x_a100',
    description: '1x A100 (40 GB PCIe)',
    gpu_description: 'A100 (40 GB PCIe)',
    price_cents_per_hour: 129,
    specs: { vcpus: 30, memory_gib: 200, storage_gib: 512, gpus: 1 },
    regions: ['us-east-1'],
  },
  {
    name: 'gpu_1x_a100_sxm4',
    description: '1x A100 (40 GB SXM4)',
    gpu_description: 'A100 (40 GB SXM4)',
    price_cents_per_hour: 129,
    specs: { vcpus: 30, memory_gib: 200, storage_gib: 512, gpus: 1 },
    regions: ['us-west-2'],
  },
  {
    name: 'gpu_8x_a100',
    description: '8x A100 (40 GB SXM4)',
    gpu_description: 'A100 (40 GB SXM4)',
    price_cents_per_hour: 1032,
    specs: { vcpus: 124, memory_gib: 1800, storage_gib: 6000, gpus: 8 },
    regions: [],
  },
  {
    name: 'gpu_8x_a100_80gb_sxm4',
    description: '8x A100 (80 GB SXM4)',
    gpu_description: 'A100 (80 GB SXM4)',
    price_cents_per_hour: 1432,
    specs: { vcpus: 240, memory_gib: 1800, storage_gib: 19500, gpus: 8 },
    regions: ['us-east-1'],
  },
  {
    name: 'gpu_1x_h100_pcie',
    description: '1x H100 (80 GB PCIe)',
    gpu_description: 'H100 (80 GB PCIe)',
    price_cents_per_hour: 249,
    specs: { vcpus: 26, memory_gib: 200, storage_gib: 1000, gpus: 1 },
    regions: ['us-west-3'],
  },
  {
    name: 'gpu_1x_gh200',
    description: '1x GH200 (96 GB)',
    gpu_description: 'GH200 (96 GB)',
    price_cents_per_hour: 149,
    specs: { vcpus: 64, memory_gib: 432, storage_gib: 4000, gpus: 1 },
    regions: ['us-east-3'],
  },
] as const;

interface LambdaKey {
  id: string;
  name: string;
  public_key: string;
}

export class LambdaEmulator extends EmulatorBase {
  readonly keys: LambdaKey[] = [];
  /** Requests seen without the expected bearer key. */
  unauthorized = 0;
  /** Launch timestamps, to check the client's spacing. */
  readonly launchTimes: number[] = [];

  /** Minimum spacing of launch requests, as Lambda enforces it. */
  launchWindowMs: number;
  /** Launch requests refused with 429 for coming too soon. */
  rateLimited = 0;
  private readonly health = new Map<string, 'unhealthy' | 'preempted'>();
  /** Milliseconds an instance is active before it has an address (slow.noIpSec). */
  noIpMs: number;

  constructor(
    readonly apiKey: string,
    options: EmulatorOptions & { launchWindowMs?: number } = {},
  ) {
    super(options);
    this.launchWindowMs = options.launchWindowMs ?? 12_000;
    this.noIpMs = (options.slow?.noIpSec ?? 0) * 1000;
  }

  /** Lambda takes the instance back. */
  preempt(id: string): void {
    const i = this.instances.get(id);
    if (!i) return;
    i.state = 'terminated';
    i.reclaimed = true;
    this.health.set(id, 'preempted');
  }

  /**
   * Lambda has no stopped state and no stop call: an instance bills until it is terminated through the API. A
   * guest that powered itself off is still an allocated instance, with its address, that nothing answers on.
   */
  override guestPowerOff(id: string): void {
    const i = this.instances.get(id);
    if (i && i.state === 'running') i.ip = '127.0.0.2';
  }

  markUnhealthy(id: string): void {
    this.health.set(id, 'unhealthy');
  }

  protected operationOf(req: IncomingMessage): string {
    const path = (req.url ?? '').replace(/\?.*$/, '').replace(/^\/api\/v1/, '');
    if (path === '/instance-types') return 'list-types';
    if (path === '/instance-operations/launch') return 'launch';
    if (path === '/instance-operations/terminate') return 'terminate';
    if (path === '/instances') return 'list-instances';
    if (path.startsWith('/instances/')) return 'describe';
    if (path === '/ssh-keys') return req.method === 'POST' ? 'add-key' : 'list-keys';
    return `unknown ${req.method} ${path}`;
  }

  protected writeFault(_op: string, fault: Fault, res: ServerResponse): void {
    if (fault.kind === 'capacity') {
      send(
        res,
        400,
        'application/json',
        JSON.stringify({
          error: {
            code: 'instance-operations/launch/insufficient-capacity',
            message: 'Not enough capacity to fulfill launch request.',
            suggestion: 'Choose an instance type with more availability, or try again later.',
          },
        }),
      );
    } else if (fault.kind === 'status') {
      if (fault.status === 429) {
        res.setHeader('retry-after', String(fault.retryAfter ?? 0));
        send(res, 429, 'application/json', JSON.stringify({ error: { code: 'global/rate-limited', message: 'Too many requests' } }));
      } else
        send(
          res,
          fault.status,
          fault.contentType ?? 'application/json',
          fault.body ?? JSON.stringify({ error: { code: 'global/unknown', message: 'Internal server error' } }),
        );
    }
  }

  private view(i: EmulatedInstance): unknown {
    this.refresh(i);
    const t = LAMBDA_TYPES.find((x) => x.name === i.type);
    const status =
      this.health.get(i.id) ??
      { pending: 'booting', running: 'active', stopping: 'active', stopped: 'active', terminating: 'terminating', terminated: 'terminated' }[i.state];
    return {
      id: i.id,
      name: i.name,
      ip: i.state === 'running' && Date.now() - i.launchedAt >= this.bootMs + this.noIpMs ? i.ip : null,
      status,
      ssh_key_names: (i.request as { ssh_key_names?: string[] }).ssh_key_names ?? [],
      file_system_names: [],
      region: { name: i.region, description: i.region },
      instance_type: t
        ? { name: t.name, description: t.description, gpu_description: t.gpu_description, price_cents_per_hour: t.price_cents_per_hour, specs: t.specs }
        : undefined,
      hostname: `${i.ip.replace(/\./g, '-')}.cloud.lambdalabs.com`,
      // Launch tags come back on the instance, as the API's Instance object carries them.
      tags: (i.request as { tags?: Array<{ key: string; value: string }> }).tags ?? [],
    };
  }

  protected route(op: string, req: IncomingMessage, body: string, res: ServerResponse, fault: Fault | undefined): void {
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) {
      this.unauthorized++;
      send(res, 401, 'application/json', JSON.stringify({ error: { code: 'global/invalid-api-key', message: 'API key was invalid, expired, or deleted.' } }));
      return;
    }
    const json = (status: number, data: unknown): void => send(res, status, 'application/json', JSON.stringify(data));
    const input = body ? (JSON.parse(body) as Record<string, unknown>) : {};
    switch (op) {
      case 'list-types': {
        const data: Record<string, unknown> = {};
        for (const t of LAMBDA_TYPES) {
          const { regions, ...instance_type } = t;
          data[t.name] = { instance_type, regions_with_capacity_available: regions.map((r) => ({ name: r, description: r })) };
        }
        json(200, { data });
        return;
      }
      case 'list-keys':
        json(200, { data: this.keys });
        return;
      case 'add-key': {
        const key = { id: randomBytes(8).toString('hex'), name: String(input.name), public_key: String(input.public_key) };
        this.keys.push(key);
        json(200, { data: key });
        return;
      }
      case 'launch': {
        const last = this.launchTimes[this.launchTimes.length - 1];
        this.launchTimes.push(Date.now());
        if (last !== undefined && Date.now() - last < this.launchWindowMs) {
          this.rateLimited++;
          this.launchTimes.pop();
          res.setHeader('retry-after', String(Math.ceil((last + this.launchWindowMs - Date.now()) / 1000)));
          json(429, { error: { code: 'global/rate-limited', message: 'Too many requests: one launch per 12 seconds.' } });
          return;
        }
        const type = LAMBDA_TYPES.find((t) => t.name === input.instance_type_name);
        if (!type) {
          json(400, { error: { code: 'global/invalid-parameters', message: `Unknown instance type ${String(input.instance_type_name)}` } });
          return;
        }
        const keyNames = (input.ssh_key_names as string[] | undefined) ?? [];
        if (keyNames.length !== 1 || !this.keys.some((k) => k.name === keyNames[0])) {
          json(400, { error: { code: 'global/invalid-parameters', message: 'Exactly one existing SSH key name is required' } });
          return;
        }
        if (this.noCapacityIn.has(String(input.region_name)) && this.capacityRefusals.push(String(input.region_name)))
          return this.writeFault(op, { kind: 'capacity' }, res);
        const id = randomBytes(16).toString('hex');
        this.instances.set(id, {
          id,
          name: String(input.name ?? ''),
          type: type.name,
          region: String(input.region_name),
          zone: '',
          state: 'pending',
          ip: this.instanceIp,
          tags: {},
          spot: false,
          launchedAt: Date.now(),
          createdAt: Date.now(),
          request: input,
        });
        if (this.withheld(fault, res)) return;
        json(200, { data: { instance_ids: [id] } });
        return;
      }
      case 'terminate': {
        const ids = (input.instance_ids as string[] | undefined) ?? [];
        const missing = ids.filter((id) => !this.instances.has(id));
        if (missing.length > 0) {
          json(404, { error: { code: 'global/object-does-not-exist', message: `Instance ${missing.join(', ')} not found` } });
          return;
        }
        const terminated = ids.map((id) => {
          const i = this.instances.get(id)!;
          if (i.state !== 'terminated') i.state = 'terminating';
          return this.view(i);
        });
        if (this.withheld(fault, res)) return;
        json(200, { data: { terminated_instances: terminated } });
        return;
      }
      case 'list-instances':
        json(200, { data: [...this.instances.values()].filter((i) => this.refresh(i).state !== 'terminated' && this.listed(i)).map((i) => this.view(i)) });
        return;
      case 'describe': {
        const id = decodeURIComponent((req.url ?? '').split('/').pop() ?? '');
        const i = this.instances.get(id);
        if (!i) json(404, { error: { code: 'global/object-does-not-exist', message: 'Specified instance does not exist.' } });
        else json(200, { data: this.view(i) });
        return;
      }
      default:
        json(404, { error: { code: 'global/object-does-not-exist', message: `no route ${op}` } });
    }
  }
}
