// Spot instance requests of the EC2 emulator (test double), as AWS documents them: "State changes for a Spot
// request" (spot-instances-request-status-lifecycle) and "Behavior of Spot Instance interruptions".
// RunInstances with InstanceMarketOptions opens a request (one-time or persistent); only a persistent one with
// interruption behaviour stop or hibernate outlives an interruption:
//   interrupted:     status marked-for-stop (state active) while the instance stops, then
//                    instance-stopped-no-capacity (state disabled, instance stopped, StateReason Server.SpotInstanceShutdown)
//   capacity back:   EC2 starts the same instance (same id, same root volume), status fulfilled (state active)
//   stopped by user: instance-stopped-by-user (disabled) — the guest powering off counts as the user
//   cancelled:       state cancelled; the instance is not terminated by it (request-canceled-and-instance-running)
//   terminated while the persistent request lives: the request opens again and EC2 launches a NEW instance
//                    for it (the orphan a teardown that forgets CancelSpotInstanceRequests leaves behind).
import { randomBytes } from 'node:crypto';
import type { EmulatedInstance } from './server';

type Params = Map<string, string>;

export interface SpotRequest {
  readonly id: string;
  readonly type: 'one-time' | 'persistent';
  readonly behavior: 'terminate' | 'stop' | 'hibernate';
  state: 'open' | 'active' | 'disabled' | 'cancelled' | 'closed';
  status: string;
  statusAt: number;
  instanceId?: string;
  readonly tags: Record<string, string>;
  /** Every instance the request has had, in order (a relaunch after a termination adds one). */
  readonly history: string[];
}

const STATUS_MESSAGE: Record<string, string> = {
  fulfilled: 'Your spot request is fulfilled.',
  'marked-for-stop': 'Spot Instance is marked for stop.',
  'instance-stopped-no-capacity': 'Your Spot Instance was stopped because there is no Spot capacity available that matches your request.',
  'instance-stopped-by-user': 'Your Spot Instance was stopped by the user.',
  'request-canceled-and-instance-running': 'Your Spot request is canceled, but your instance is still running.',
  'canceled-before-fulfillment': 'Your Spot request was canceled before it was fulfilled.',
  'instance-terminated-by-user': 'Spot Instance terminated.',
};

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export class Ec2SpotRequests {
  readonly requests = new Map<string, SpotRequest>();
  /** Instances EC2 stopped on an interruption (their StateReason), until started again. */
  private readonly interrupted = new Set<string>();

  constructor(
    private readonly instances: Map<string, EmulatedInstance>,
    /** Brings stopping/terminating instances to their next state, as every describe does. */
    private readonly refresh: (i: EmulatedInstance) => EmulatedInstance,
  ) {}

  /** The request RunInstances opens for a spot launch; the instance fulfils it at once. */
  open(instance: EmulatedInstance, p: Params): SpotRequest {
    const type = p.get('InstanceMarketOptions.SpotOptions.SpotInstanceType') === 'persistent' ? 'persistent' : 'one-time';
    const hibernate = p.get('HibernationOptions.Configured') === 'true';
    const asked = p.get('InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior');
    const behavior = asked === 'stop' || asked === 'hibernate' ? asked : hibernate ? 'hibernate' : 'terminate';
    const tags: Record<string, string> = {};
    for (let n = 1; p.has(`TagSpecification.${n}.ResourceType`); n++) {
      if (p.get(`TagSpecification.${n}.ResourceType`) !== 'spot-instances-request') continue;
      for (let m = 1; p.has(`TagSpecification.${n}.Tag.${m}.Key`); m++)
        tags[p.get(`TagSpecification.${n}.Tag.${m}.Key`)!] = p.get(`TagSpecification.${n}.Tag.${m}.Value`) ?? '';
    }
    const r: SpotRequest = {
      id: `sir-${randomBytes(4).toString('hex')}`,
      type,
      behavior,
      state: 'active',
      status: 'fulfilled',
      statusAt: Date.now(),
      instanceId: instance.id,
      tags,
      history: [instance.id],
    };
    this.requests.set(r.id, r);
    return r;
  }

  /** The RunInstances parameters EC2 refuses for spot, as its API reference states them; undefined when valid. */
  static refusal(p: Params): string | undefined {
    const type = p.get('InstanceMarketOptions.SpotOptions.SpotInstanceType');
    const behavior = p.get('InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior');
    const hibernate = p.get('HibernationOptions.Configured') === 'true';
    if (type === 'persistent' && (behavior === undefined || behavior === 'terminate') && !hibernate)
      return 'For RunInstances, persistent Spot Instance requests are only supported when the instance interruption behavior is either hibernate or stop.';
    if ((behavior === 'stop' || behavior === 'hibernate') && type !== 'persistent')
      return `Spot interruption behavior ${behavior} requires a persistent Spot Instance request.`;
    if (hibernate && behavior && behavior !== 'hibernate') return 'With HibernationOptions.Configured the interruption behavior must be hibernate.';
    return undefined;
  }

  requestOf(instanceId: string): SpotRequest | undefined {
    return [...this.requests.values()].find((r) => r.instanceId === instanceId && r.state !== 'cancelled' && r.state !== 'closed');
  }

  /** The instance's request id, cancelled or not (DescribeInstances names it for the instance's life). */
  idOf(instanceId: string): string | undefined {
    return [...this.requests.values()].find((r) => r.history.includes(instanceId))?.id;
  }

  /** The instance's StateReason code while it is stopped by an interruption. */
  stateReasonOf(instanceId: string): string | undefined {
    return this.interrupted.has(instanceId) ? 'Server.SpotInstanceShutdown' : undefined;
  }

  /** A stop on interruption, not a termination: what the emulator's reclaim does to such an instance. */
  stopsOnInterruption(instanceId: string): boolean {
    const r = this.requestOf(instanceId);
    return !!r && r.type === 'persistent' && r.behavior !== 'terminate';
  }

  private set(r: SpotRequest, state: SpotRequest['state'], status: string): void {
    r.state = state;
    r.status = status;
    r.statusAt = Date.now();
  }

  /** EC2 interrupts the instance: marked-for-stop while it stops, then disabled waiting for capacity. */
  interrupt(instanceId: string): void {
    const r = this.requestOf(instanceId);
    const i = this.instances.get(instanceId);
    if (!r || !i) return;
    this.set(r, 'active', 'marked-for-stop');
    i.state = 'stopping';
    this.interrupted.add(instanceId);
  }

  /** Capacity is back: EC2 starts the same instance (only EC2 can restart an interrupted stopped Spot Instance). */
  capacityReturns(instanceId: string): boolean {
    const r = this.requestOf(instanceId);
    const i = this.instances.get(instanceId);
    if (!r || !i) return false;
    this.sync(r);
    if (r.status !== 'instance-stopped-no-capacity') return false;
    i.state = 'pending';
    i.launchedAt = Date.now();
    this.interrupted.delete(instanceId);
    this.set(r, 'active', 'fulfilled');
    return true;
  }

  /** A stop asked by the user or the guest: the request waits, disabled, until the instance is started. */
  stoppedByUser(instanceId: string): void {
    const r = this.requestOf(instanceId);
    if (r) this.set(r, 'disabled', 'instance-stopped-by-user');
  }

  /**
   * The instance was terminated: a one-time request closes; a persistent one not cancelled opens again and
   * EC2 launches a new instance for it, with the same launch specification and tags.
   */
  terminated(instanceId: string): EmulatedInstance | undefined {
    const r = this.requestOf(instanceId);
    const old = this.instances.get(instanceId);
    if (!r || !old) return undefined;
    if (r.type === 'one-time') {
      this.set(r, 'closed', 'instance-terminated-by-user');
      return undefined;
    }
    const id = `i-${randomBytes(8).toString('hex')}`;
    const now = Date.now();
    const next: EmulatedInstance = { ...old, id, state: 'pending', launchedAt: now, tags: { ...old.tags } };
    // A new instance to the listings too (createdAt, where the emulator tracks their lag).
    Object.assign(next, { createdAt: now });
    delete next.reclaimed;
    this.instances.set(id, next);
    r.instanceId = id;
    r.history.push(id);
    this.set(r, 'active', 'fulfilled');
    return next;
  }

  /** A stopping instance has stopped by the time anyone looks: the request then waits for capacity. */
  private sync(r: SpotRequest): void {
    const i = r.instanceId ? this.instances.get(r.instanceId) : undefined;
    if (i) this.refresh(i);
    if (r.status === 'marked-for-stop' && i?.state === 'stopped') this.set(r, 'disabled', 'instance-stopped-no-capacity');
  }

  private xml(r: SpotRequest, zone: string): string {
    this.sync(r);
    const tags = Object.entries(r.tags)
      .map(([k, v]) => `<item><key>${esc(k)}</key><value>${esc(v)}</value></item>`)
      .join('');
    return (
      `<item><spotInstanceRequestId>${r.id}</spotInstanceRequestId><type>${r.type}</type><state>${r.state}</state>` +
      `<status><code>${r.status}</code><updateTime>${new Date(r.statusAt).toISOString()}</updateTime><message>${esc(STATUS_MESSAGE[r.status] ?? r.status)}</message></status>` +
      (r.instanceId ? `<instanceId>${r.instanceId}</instanceId>` : '') +
      `<instanceInterruptionBehavior>${r.behavior}</instanceInterruptionBehavior><launchedAvailabilityZone>${zone}</launchedAvailabilityZone>` +
      `<productDescription>Linux/UNIX</productDescription><tagSet>${tags}</tagSet></item>`
    );
  }

  /** DescribeSpotInstanceRequests: by id, filtered by state, instance-id, tag-key and tag:K. */
  describe(ids: string[], filters: Map<string, string[]>): { body?: string; error?: { code: string; message: string } } {
    const unknown = ids.find((id) => !this.requests.has(id));
    if (unknown) return { error: { code: 'InvalidSpotInstanceRequestID.NotFound', message: `The spot instance request ID '${unknown}' does not exist` } };
    let all = [...this.requests.values()].filter((r) => !ids.length || ids.includes(r.id));
    for (const r of all) this.sync(r);
    for (const [name, values] of filters) {
      if (name === 'state') all = all.filter((r) => values.includes(r.state));
      else if (name === 'instance-id') all = all.filter((r) => !!r.instanceId && values.includes(r.instanceId));
      else if (name === 'tag-key') all = all.filter((r) => values.some((v) => v in r.tags));
      else if (name.startsWith('tag:')) all = all.filter((r) => values.includes(r.tags[name.slice(4)] ?? '\u0000'));
      else return { error: { code: 'InvalidParameterValue', message: `The filter '${name}' is invalid` } };
    }
    const zoneOf = (r: SpotRequest): string => (r.instanceId ? (this.instances.get(r.instanceId)?.zone ?? '') : '');
    return { body: `<spotInstanceRequestSet>${all.map((r) => this.xml(r, zoneOf(r))).join('')}</spotInstanceRequestSet>` };
  }

  /** CancelSpotInstanceRequests: open, active and disabled requests are cancelled; their instances go on. */
  cancel(ids: string[]): { body?: string; error?: { code: string; message: string } } {
    const unknown = ids.find((id) => !this.requests.has(id));
    if (unknown) return { error: { code: 'InvalidSpotInstanceRequestID.NotFound', message: `The spot instance request ID '${unknown}' does not exist` } };
    const items = ids.map((id) => {
      const r = this.requests.get(id)!;
      if (r.state === 'open' || r.state === 'active' || r.state === 'disabled') {
        const i = r.instanceId ? this.instances.get(r.instanceId) : undefined;
        this.set(r, 'cancelled', i && i.state !== 'terminated' ? 'request-canceled-and-instance-running' : 'canceled-before-fulfillment');
      }
      return `<item><spotInstanceRequestId>${r.id}</spotInstanceRequestId><state>${r.state}</state></item>`;
    });
    return { body: `<spotInstanceRequestSet>${items.join('')}</spotInstanceRequestSet>` };
  }
}
