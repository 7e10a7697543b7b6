// Test double for GCP Compute Engine REST v1 and Google's OAuth token endpoint (the cloud cannot exist
// here). The token endpoint verifies the service account's RS256 JWT against its public key; compute
// calls need the issued bearer token; inserts and deletes return zone operations that finish later.
// Slow settings (server.ts SlowSettings): operations RUNNING for seconds, a deleted VM lingering STOPPING then
// TERMINATED until its delete operation is done, new VMs missing from the aggregated listing for a while.
// Zones in noCapacityIn answer every insert with ZONE_RESOURCE_POOL_EXHAUSTED in the operation.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { EmulatorBase, send } from './server';
import { GCE_IMAGES, imageFromFamily, imageJson, resolveSourceImage } from './gcpImages';
import type { GceImage } from './gcpImages';
import { GoogleTokens } from './gcpOauth';
import { OsLogin } from './gcpOsLogin';
import type { EmulatedInstance, EmulatorOptions, Fault } from './server';

interface Operation {
  name: string;
  zone: string;
  operationType: string;
  targetLink: string;
  doneAt: number;
  error?: { code: string; message: string };
}

export const GCP_ZONE_ACCELERATORS = ['nvidia-tesla-t4', 'nvidia-l4', 'nvidia-tesla-a100', 'nvidia-a100-80gb'];

export class GcpEmulator extends EmulatorBase {
  readonly project = 'rft-test-project';
  readonly clientEmail = 'trainer@rft-test-project.iam.gserviceaccount.com';
  readonly privateKeyPem: string;
  /** Google's token services (OAuth, STS, IAM credentials) and the principal behind each token. */
  readonly oauth: GoogleTokens;
  /** The x-goog-user-project header of each API call (undefined: none), by operation. */
  readonly userProjects: Array<[string, string | undefined]> = [];
  /** OS Login profiles, and who may log in with them. */
  readonly osLogin = new OsLogin();
  /** The project's commonInstanceMetadata items (enable-oslogin, enable-oslogin-2fa, …). */
  projectMetadata: Array<{ key: string; value: string }> = [];
  /** Who made each API call (service account or user email, principal:// for a federated identity), by operation. */
  readonly callers: Array<[string, string]> = [];
  readonly operations: Operation[] = [];
  /**
   * What the guest agent of every instance publishes under hostkeys/ ("type base64" lines); empty: the agent
   * has not published (Compute Engine then answers 404 notFound).
   */
  guestHostKeys: string[] = [];
  /** An instance's VPC address (networkIP) by its external one (natIP); absent: the same address. */
  readonly privateIps = new Map<string, string>();
  /** Firewall rules by name, as inserted (compute#firewall bodies). */
  readonly firewalls = new Map<string, Record<string, unknown>>();
  private readonly requestIds = new Map<string, string>();
  /** Zones whose acceleratorTypes list the catalog's GPUs (the aggregated listing's scopes). */
  acceleratorZones = ['us-central1-a', 'us-central1-b', 'us-central1-c', 'us-east1-c', 'us-east1-d', 'europe-west4-a'];
  /** Every insert as asked (zone, name, requestId), refused ones included. */
  readonly inserts: Array<{ zone: string; name: string; requestId: string }> = [];
  /** Public images (the Deep Learning VM project's families), as images.getFromFamily sees them. */
  readonly images: GceImage[] = [...GCE_IMAGES];
  /** Milliseconds an operation stays RUNNING. */
  opMs = 20;
  /** Milliseconds a deleted VM is still there (STOPPING, then TERMINATED); 0: gone at once. */
  deleteLingerMs = 0;
  /** Deletes under way: STOPPING until stoppedAt, TERMINATED until goneAt, then gone. */
  private readonly deleting = new Map<string, { stoppedAt: number; goneAt: number }>();
  /** Token requests refused because the JWT did not verify. */
  get badAssertions(): number {
    return this.oauth.badAssertions;
  }

  constructor(options: EmulatorOptions = {}) {
    super(options);
    if (options.slow?.operationSec) this.opMs = options.slow.operationSec * 1000;
    if (options.slow?.deleteLingerSec) this.deleteLingerMs = options.slow.deleteLingerSec * 1000;
    const { privateKey, publicKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });
    this.privateKeyPem = privateKey;
    this.oauth = new GoogleTokens(() => `${this.url}/token`, { email: this.clientEmail, publicKeyPem: publicKey });
  }

  /** A service-account key file as the IAM console downloads it, pointing at this emulator's token endpoint. */
  serviceAccountJson(): string {
    return JSON.stringify({
      type: 'service_account',
      project_id: this.project,
      private_key_id: 'k1',
      private_key: this.privateKeyPem,
      client_email: this.clientEmail,
      client_id: '1',
      token_uri: `${this.url}/token`,
    });
  }

  protected override handlesCapacityInRoute(): boolean {
    return true;
  }

  protected operationOf(req: IncomingMessage): string {
    const path = (req.url ?? '').replace(/\?.*$/, '');
    if (path === '/token') return 'token';
    if (/^\/oslogin\/v1\/users\/[^/]+:importSshPublicKey$/.test(path)) return 'oslogin-import';
    if (/^\/oslogin\/v1\/users\/[^/]+\/loginProfile$/.test(path)) return 'oslogin-profile';
    if (path === '/sts/v1/token') return 'sts';
    if (path === '/tokeninfo') return 'tokeninfo';
    if (/^\/iamcredentials\/v1\/projects\/-\/serviceAccounts\/[^/]+:generateAccessToken$/.test(path)) return 'generate-access-token';
    const rest = path.replace(/^\/compute\/v1\/projects\/[^/]+/, '');
    if (rest === '') return 'project-get';
    if (/^\/zones\/[^/]+\/acceleratorTypes$/.test(rest)) return 'accelerators';
    if (rest === '/aggregated/acceleratorTypes') return 'aggregated-accelerators';
    if (/^\/zones\/[^/]+\/instances\/[^/]+\/testIamPermissions$/.test(rest)) return 'instance-test-permissions';
    if (/^\/zones\/[^/]+\/instances$/.test(rest)) return req.method === 'POST' ? 'insert' : 'list';
    if (/^\/zones\/[^/]+\/instances\/[^/]+\/stop$/.test(rest)) return 'stop';
    if (/^\/zones\/[^/]+\/instances\/[^/]+$/.test(rest)) return req.method === 'DELETE' ? 'delete' : 'get';
    if (/^\/zones\/[^/]+\/operations\/[^/]+$/.test(rest)) return 'operation';
    if (/^\/zones\/[^/]+\/operations$/.test(rest)) return 'operations';
    if (rest === '/aggregated/instances') return 'aggregated';
    if (rest === '/global/firewalls') return req.method === 'POST' ? 'firewall-insert' : 'firewall-list';
    if (/^\/global\/firewalls\/[^/]+$/.test(rest)) return req.method === 'DELETE' ? 'firewall-delete' : 'firewall-get';
    if (/^\/global\/operations\/[^/]+$/.test(rest)) return 'global-operation';
    if (/^\/global\/images\/family\/[^/]+$/.test(rest)) return 'image-from-family';
    if (/^\/zones\/[^/]+\/instances\/[^/]+\/getGuestAttributes$/.test(rest)) return 'guest-attributes';
    return `unknown ${req.method} ${rest}`;
  }

  private err(res: ServerResponse, status: number, reason: string, message: string): void {
    send(res, status, 'application/json', JSON.stringify({ error: { code: status, message, errors: [{ message, domain: 'global', reason }] } }));
  }

  /**
   * Compute Engine answers its limits with 403 and a reason (cloud.google.com/compute/docs/api/errors):
   * quotaExceeded for a project/region quota, rateLimitExceeded for too many API requests.
   */
  static readonly QUOTA_EXCEEDED: Fault = {
    kind: 'status',
    status: 403,
    body: JSON.stringify({
      error: {
        code: 403,
        message: "Quota 'NVIDIA_L4_GPUS' exceeded.  Limit: 0.0 in region us-central1.",
        errors: [{ message: "Quota 'NVIDIA_L4_GPUS' exceeded.  Limit: 0.0 in region us-central1.", domain: 'usageLimits', reason: 'quotaExceeded' }],
      },
    }),
  };
  static readonly RATE_LIMITED_403: Fault = {
    kind: 'status',
    status: 403,
    body: JSON.stringify({
      error: { code: 403, message: 'Rate Limit Exceeded', errors: [{ message: 'Rate Limit Exceeded', domain: 'usageLimits', reason: 'rateLimitExceeded' }] },
    }),
  };

  protected writeFault(_op: string, fault: Fault, res: ServerResponse): void {
    if (fault.kind === 'status' && fault.body) send(res, fault.status, fault.contentType ?? 'application/json', fault.body);
    else if (fault.kind === 'status') {
      if (fault.status === 429) this.err(res, 429, 'rateLimitExceeded', 'Rate Limit Exceeded');
      else this.err(res, fault.status, 'backendError', 'Internal error. Please try again.');
    }
  }

  private opJson(o: Operation): unknown {
    const done = Date.now() >= o.doneAt;
    return {
      kind: 'compute#operation',
      id: o.name,
      name: o.name,
      zone: `${this.url}/compute/v1/projects/${this.project}/zones/${o.zone}`,
      operationType: o.operationType,
      targetLink: o.targetLink,
      status: done ? 'DONE' : 'RUNNING',
      progress: done ? 100 : 0,
      ...(done && o.error ? { error: { errors: [o.error] }, httpErrorStatusCode: 503, httpErrorMessage: 'SERVICE UNAVAILABLE' } : {}),
    };
  }

  private newOp(zone: string, type: string, name: string, error?: Operation['error']): Operation {
    const o = {
      name: `operation-${Date.now()}-${randomBytes(6).toString('hex')}`,
      zone,
      operationType: type,
      targetLink: `${this.url}/compute/v1/projects/${this.project}/zones/${zone}/instances/${name}`,
      doneAt: Date.now() + this.opMs,
      error,
    };
    this.operations.push(o);
    return o;
  }

  /** Lingering deletes move on with the clock; the ones whose time is up are gone. */
  private settleDeletes(): void {
    const now = Date.now();
    for (const [id, d] of this.deleting) {
      const i = this.instances.get(id);
      if (i && now < d.goneAt) {
        i.state = now < d.stoppedAt ? 'stopping' : 'stopped';
        continue;
      }
      this.deleting.delete(id);
      if (!i) continue;
      i.state = 'terminated';
      this.instances.delete(id);
      this.gone.push(i);
    }
  }

  protected override refresh(i: EmulatedInstance): EmulatedInstance {
    this.settleDeletes();
    return this.deleting.has(i.id) ? i : super.refresh(i);
  }

  override billing(): EmulatedInstance[] {
    this.settleDeletes();
    return super.billing();
  }

  private instanceJson(i: EmulatedInstance): unknown {
    this.refresh(i);
    const body = i.request as { machineType: string; guestAccelerators?: unknown[]; scheduling?: unknown; labels?: Record<string, string>; metadata?: unknown };
    const status = { pending: 'STAGING', running: 'RUNNING', stopping: 'STOPPING', stopped: 'TERMINATED', terminating: 'STOPPING', terminated: 'TERMINATED' }[
      i.state
    ];
    return {
      kind: 'compute#instance',
      id: i.id,
      name: i.name,
      zone: `${this.url}/compute/v1/projects/${this.project}/zones/${i.zone}`,
      status,
      machineType: `${this.url}/compute/v1/projects/${this.project}/zones/${i.zone}/machineTypes/${body.machineType.split('/').pop() ?? ''}`,
      guestAccelerators: body.guestAccelerators ?? [],
      scheduling: body.scheduling,
      labels: body.labels ?? {},
      metadata: body.metadata,
      creationTimestamp: new Date(i.launchedAt).toISOString(),
      networkInterfaces: [
        {
          network: 'global/networks/default',
          // The VPC address, where its peers reach it (privateIps); by default the one external address.
          ...(i.state === 'running' ? { networkIP: this.privateIps.get(i.ip) ?? i.ip } : {}),
          accessConfigs: i.state === 'running' ? [{ type: 'ONE_TO_ONE_NAT', natIP: i.ip }] : [{ type: 'ONE_TO_ONE_NAT' }],
        },
      ],
    };
  }

  /** Preemption of a SPOT VM with instanceTerminationAction DELETE: the VM goes away and an operation records why. */
  override reclaim(id: string): void {
    const i = this.instances.get(id);
    if (!i) return;
    i.state = 'terminated';
    i.reclaimed = true;
    const o = this.newOp(i.zone, 'compute.instances.preempted', i.name);
    o.doneAt = Date.now();
    this.instances.delete(id);
    this.gone.push(i);
  }

  /**
   * The keys the guest's sshd accepts for `user` on this instance, as the guest agent decides them: under OS
   * Login (enable-oslogin TRUE in the instance's metadata, else the project's) the OS Login profile's; else the
   * `user:key` lines of the ssh-keys metadata.
   */
  authorizedKeys(instanceId: string, user: string): string[] {
    const [zone, name] = instanceId.split('/');
    const i = [...this.instances.values()].find((x) => x.zone === zone && x.name === name);
    if (!i) return [];
    const items = (i.request as { metadata?: { items?: Array<{ key: string; value: string }> } }).metadata?.items ?? [];
    const flag = (list: Array<{ key: string; value: string }>): boolean | undefined => {
      const v = list.find((m) => m.key === 'enable-oslogin')?.value;
      return v === undefined ? undefined : v.toLowerCase() === 'true';
    };
    if (flag(items) ?? flag(this.projectMetadata) ?? false) return this.osLogin.authorizedKeys(user, this.project);
    return (items.find((m) => m.key === 'ssh-keys')?.value ?? '')
      .split('\n')
      .filter((l) => l.startsWith(`${user}:`))
      .map((l) => l.slice(user.length + 1).trim());
  }

  /** Deleted instances, kept for the tests' accounting. */
  readonly gone: EmulatedInstance[] = [];

  protected route(op: string, req: IncomingMessage, body: string, res: ServerResponse, fault: Fault | undefined): void {
    this.settleDeletes();
    const json = (status: number, data: unknown): void => send(res, status, 'application/json', JSON.stringify(data));
    const userProject = req.headers['x-goog-user-project'] === undefined ? undefined : String(req.headers['x-goog-user-project']);
    const answer = (a: { status: number; body: unknown }): void => json(a.status, a.body);
    if (op === 'token') return answer(this.oauth.token(new URLSearchParams(body), userProject));
    if (op === 'sts') return answer(this.oauth.sts(new URLSearchParams(body), userProject));
    if (op === 'tokeninfo') {
      // oauth2.googleapis.com/tokeninfo: the token's account (email) when it was granted userinfo.email.
      const who = this.oauth.principalOf(`Bearer ${new URL(req.url ?? '/', this.url).searchParams.get('access_token') ?? ''}`);
      if (!who) return json(400, { error: 'invalid_token', error_description: 'Invalid Value' });
      return json(200, {
        azp: 'client',
        aud: 'client',
        scope: 'https://www.googleapis.com/auth/userinfo.email https://www.googleapis.com/auth/cloud-platform openid',
        expires_in: '3500',
        access_type: 'offline',
        ...(who.kind !== 'federated' ? { email: who.email, email_verified: 'true' } : {}),
      });
    }
    if (op === 'generate-access-token') {
      if (userProject) this.oauth.quotaHeaderOnTokenCalls++;
      const email = decodeURIComponent(/serviceAccounts\/([^/:]+):/.exec(req.url ?? '')?.[1] ?? '');
      return answer(this.oauth.generateAccessToken(email, req.headers.authorization, body));
    }
    const principal = this.oauth.principalOf(req.headers.authorization);
    if (!principal) return this.err(res, 401, 'authError', 'Request had invalid authentication credentials.');
    this.userProjects.push([op, userProject]);
    this.callers.push([op, GoogleTokens.key(principal)]);
    const denied = userProject ? this.oauth.userProjectDenied(principal, userProject) : undefined;
    if (denied) return answer(denied);
    const url = new URL(req.url ?? '/', this.url);
    const parts = url.pathname.split('/');
    const zone = parts[6] ?? '';
    const byName = (name: string): EmulatedInstance | undefined => [...this.instances.values()].find((i) => i.name === name && i.zone === zone);
    switch (op) {
      case 'oslogin-import':
      case 'oslogin-profile': {
        const user = decodeURIComponent(/\/users\/([^/:]+)/.exec(url.pathname)?.[1] ?? '');
        return answer(
          op === 'oslogin-import'
            ? this.osLogin.importKey(principal, user, url.searchParams.get('projectId'), body)
            : this.osLogin.loginProfile(principal, user, url.searchParams.get('projectId')),
        );
      }
      case 'project-get':
        if (decodeURIComponent(parts[4] ?? '') !== this.project)
          return this.err(res, 404, 'notFound', `The resource 'projects/${parts[4] ?? ''}' was not found`);
        json(200, {
          kind: 'compute#project',
          name: this.project,
          id: '123456789012',
          commonInstanceMetadata: { kind: 'compute#metadata', fingerprint: 'f1', items: this.projectMetadata },
        });
        return;
      case 'instance-test-permissions': {
        if (!byName(decodeURIComponent(parts[8] ?? '')))
          return this.err(res, 404, 'notFound', `The resource 'projects/${this.project}/zones/${zone}/instances/${parts[8] ?? ''}' was not found`);
        const asked = (JSON.parse(body || '{}') as { permissions?: string[] }).permissions ?? [];
        const mayLogin = principal.kind !== 'federated' && this.osLogin.loginRole.has(principal.email);
        json(200, { permissions: asked.filter((x) => !/^compute\.instances\.os(Admin)?Login$/.test(x) || mayLogin) });
        return;
      }
      case 'aggregated-accelerators': {
        // Keyed by zone as Compute Engine answers it; the filter is `name = "<accelerator>"`.
        const wanted = /name\s*=\s*"?([a-z0-9-]+)"?/.exec(url.searchParams.get('filter') ?? '')?.[1];
        const items: Record<string, unknown> = {};
        for (const z of this.acceleratorZones) {
          const names = GCP_ZONE_ACCELERATORS.filter((n) => !wanted || n === wanted);
          items[`zones/${z}`] = names.length
            ? {
                acceleratorTypes: names.map((name) => ({
                  kind: 'compute#acceleratorType',
                  name,
                  zone: `${this.url}/compute/v1/projects/${this.project}/zones/${z}`,
                })),
              }
            : { warning: { code: 'NO_RESULTS_ON_PAGE', message: 'There are no results for scope' } };
        }
        json(200, { kind: 'compute#acceleratorTypeAggregatedList', items });
        return;
      }
      case 'accelerators':
        json(200, { kind: 'compute#acceleratorTypeList', items: GCP_ZONE_ACCELERATORS.map((name) => ({ kind: 'compute#acceleratorType', name, zone })) });
        return;
      case 'insert': {
        const input = JSON.parse(body) as {
          name: string;
          machineType?: string;
          scheduling?: { provisioningModel?: string; onHostMaintenance?: string };
          labels?: Record<string, string>;
          disks?: Array<{ initializeParams?: { sourceImage?: string; diskSizeGb?: string } }>;
        };
        const requestId = url.searchParams.get('requestId');
        this.inserts.push({ zone, name: input.name, requestId: requestId ?? '' });
        const prior = requestId ? this.requestIds.get(requestId) : undefined;
        if (prior) return this.withheld(fault, res) ? undefined : json(200, this.opJson(this.operations.find((o) => o.name === prior)!));
        if (!/^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/.test(input.name))
          return this.err(res, 400, 'invalid', `Invalid value for field 'resource.name': '${input.name}'.`);
        if (input.scheduling?.onHostMaintenance !== 'TERMINATE')
          return this.err(res, 400, 'invalid', 'Instances with guest accelerators do not support live migration.');
        // The boot disk's image is resolved at insert: a retired family or image fails the insert itself.
        const boot = input.disks?.[0]?.initializeParams;
        const image = boot?.sourceImage ? resolveSourceImage(this.images, boot.sourceImage) : undefined;
        if (boot?.sourceImage && !image)
          return this.err(res, 404, 'notFound', `The resource '${boot.sourceImage.replace(/^https:\/\/[^/]+\/compute\/v1\//, '')}' was not found`);
        if (image && boot?.diskSizeGb && Number(boot.diskSizeGb) < image.diskSizeGb)
          return this.err(
            res,
            400,
            'invalid',
            `Invalid value for field 'resource.disks[0].initializeParams.diskSizeGb': '${boot.diskSizeGb}'. Requested disk size cannot be smaller than the image size (${image.diskSizeGb} GB)`,
          );
        if ([...this.instances.values()].some((i) => i.name === input.name && i.zone === zone))
          return this.err(res, 409, 'alreadyExists', `The resource 'projects/${this.project}/zones/${zone}/instances/${input.name}' already exists`);
        if (fault?.kind === 'capacity' || (this.noCapacityIn.has(zone) && this.capacityRefusals.push(zone))) {
          const o = this.newOp(zone, 'insert', input.name, {
            code: 'ZONE_RESOURCE_POOL_EXHAUSTED',
            message: `The zone '${zone}' does not have enough resources available to fulfill the request.`,
          });
          if (requestId) this.requestIds.set(requestId, o.name);
          return json(200, this.opJson(o));
        }
        const id = String(BigInt(`0x${randomBytes(7).toString('hex')}`));
        this.instances.set(id, {
          id,
          name: input.name,
          type: input.machineType ?? '',
          region: zone.replace(/-[a-z]$/, ''),
          zone,
          state: 'pending',
          ip: this.instanceIp,
          tags: input.labels ?? {},
          spot: input.scheduling?.provisioningModel === 'SPOT',
          launchedAt: Date.now() + this.opMs,
          createdAt: Date.now(),
          request: input,
        });
        const o = this.newOp(zone, 'insert', input.name);
        if (requestId) this.requestIds.set(requestId, o.name);
        if (this.withheld(fault, res)) return;
        json(200, this.opJson(o));
        return;
      }
      case 'get': {
        const i = byName(decodeURIComponent(parts[8] ?? ''));
        if (!i) return this.err(res, 404, 'notFound', `The resource 'projects/${this.project}/zones/${zone}/instances/${parts[8] ?? ''}' was not found`);
        json(200, this.instanceJson(i));
        return;
      }
      case 'delete':
      case 'stop': {
        const i = byName(decodeURIComponent(parts[8] ?? ''));
        if (!i) return this.err(res, 404, 'notFound', `The resource 'projects/${this.project}/zones/${zone}/instances/${parts[8] ?? ''}' was not found`);
        const o = this.newOp(zone, op, i.name);
        if (op === 'delete' && this.deleteLingerMs > 0) {
          // The VM stays listed, STOPPING then TERMINATED, and its delete operation runs until it is gone.
          const d = this.deleting.get(i.id) ?? { stoppedAt: Date.now() + this.opMs, goneAt: Date.now() + this.opMs + this.deleteLingerMs };
          this.deleting.set(i.id, d);
          o.doneAt = d.goneAt;
          this.settleDeletes();
        } else if (op === 'delete') {
          i.state = 'terminating';
          this.instances.delete(i.id);
          this.gone.push(i);
        } else i.state = 'stopping';
        if (this.withheld(fault, res)) return;
        json(200, this.opJson(o));
        return;
      }
      // Firewalls are global resources: insert answers with a global operation (polled under /global/operations),
      // a second insert of the same name is 409 alreadyExists, get of a missing one 404 notFound, as Compute Engine.
      case 'firewall-insert': {
        const b = JSON.parse(body || '{}') as Record<string, unknown>;
        const name = String(b.name ?? '');
        if (this.firewalls.has(name))
          return this.err(res, 409, 'alreadyExists', `The resource 'projects/${this.project}/global/firewalls/${name}' already exists`);
        this.firewalls.set(name, { kind: 'compute#firewall', ...b, selfLink: `${this.url}/compute/v1/projects/${this.project}/global/firewalls/${name}` });
        const o = this.newOp('', 'insert', name);
        json(200, this.opJson(o));
        return;
      }
      case 'firewall-delete': {
        const name = decodeURIComponent(parts[7] ?? '');
        if (!this.firewalls.delete(name))
          return this.err(res, 404, 'notFound', `The resource 'projects/${this.project}/global/firewalls/${name}' was not found`);
        json(200, this.opJson(this.newOp('', 'delete', name)));
        return;
      }
      case 'firewall-get': {
        const name = decodeURIComponent(parts[7] ?? '');
        const f = this.firewalls.get(name);
        if (!f) return this.err(res, 404, 'notFound', `The resource 'projects/${this.project}/global/firewalls/${name}' was not found`);
        json(200, f);
        return;
      }
      case 'guest-attributes': {
        const i = byName(decodeURIComponent(parts[8] ?? ''));
        const enabled = ((i?.request as { metadata?: { items?: Array<{ key: string; value: string }> } } | undefined)?.metadata?.items ?? []).some(
          (m) => m.key === 'enable-guest-attributes' && m.value.toUpperCase() === 'TRUE',
        );
        if (!i || !enabled || this.guestHostKeys.length === 0)
          return this.err(
            res,
            404,
            'notFound',
            `The resource 'projects/${this.project}/zones/${zone}/instances/${parts[8] ?? ''}/guestAttributes/hostkeys/' was not found`,
          );
        json(200, {
          kind: 'compute#guestAttributes',
          queryPath: 'hostkeys/',
          queryValue: { items: this.guestHostKeys.map((l) => ({ namespace: 'hostkeys', key: l.split(' ')[0], value: l.split(' ')[1] })) },
        });
        return;
      }
      case 'image-from-family': {
        const project = decodeURIComponent(parts[4] ?? '');
        const family = decodeURIComponent(parts[8] ?? '');
        const img = imageFromFamily(this.images, project, family);
        if (!img) return this.err(res, 404, 'notFound', `The resource 'projects/${project}/global/images/family/${family}' was not found`);
        json(200, imageJson(this.url, img));
        return;
      }
      case 'global-operation': {
        const o = this.operations.find((x) => x.name === decodeURIComponent(parts[7] ?? '') && x.zone === '');
        if (!o) return this.err(res, 404, 'notFound', 'operation not found');
        json(200, this.opJson(o));
        return;
      }
      case 'operation': {
        const o = this.operations.find((x) => x.name === decodeURIComponent(parts[8] ?? ''));
        if (!o) return this.err(res, 404, 'notFound', 'operation not found');
        json(200, this.opJson(o));
        return;
      }
      case 'operations': {
        const filter = url.searchParams.get('filter') ?? '';
        const type = /operationType="([^"]+)"/.exec(filter)?.[1];
        json(200, { items: this.operations.filter((o) => o.zone === zone && (!type || o.operationType === type)).map((o) => this.opJson(o)) });
        return;
      }
      case 'aggregated': {
        const filter = url.searchParams.get('filter') ?? '';
        const m = /^labels\.([a-z0-9_-]+)=(\S+)$/.exec(filter);
        const items: Record<string, { instances: unknown[] }> = {};
        for (const i of this.instances.values()) {
          if (m && i.tags[m[1]!] !== m[2]) continue;
          if (!this.listed(i)) continue;
          (items[`zones/${i.zone}`] ??= { instances: [] }).instances.push(this.instanceJson(i));
        }
        json(200, { kind: 'compute#instanceAggregatedList', items });
        return;
      }
      default:
        this.err(res, 404, 'notFound', `no route ${op}`);
    }
  }
}
