// Shared plumbing of the cloud API emulators (test doubles for clouds that cannot exist here):
// a loopback HTTP server, a fault plan consumed per operation, and the instance bookkeeping the
// matrix test reads to count what was left running.
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/** What one injected fault does to one request of an operation. */
export type Fault =
  | { readonly kind: 'status'; readonly status: number; readonly body?: string; readonly contentType?: string; readonly retryAfter?: number }
  /** Never answers (the client's timeout fires). */
  | { readonly kind: 'hang' }
  /** Performs the operation, then drops the connection before answering: the client cannot know it happened. */
  | { readonly kind: 'drop-after' }
  /** Performs the operation (the instance exists and bills), then never answers: the client's timeout fires. */
  | { readonly kind: 'hang-after' }
  /** Emulator-specific: a capacity refusal in the API's own words. */
  | { readonly kind: 'capacity' };

export interface PlannedFault {
  readonly op: string;
  readonly fault: Fault;
  /** How many matching requests it hits (default 1). */
  times?: number;
}

export type EmulatedState = 'pending' | 'running' | 'stopping' | 'stopped' | 'terminating' | 'terminated';

export interface EmulatedInstance {
  id: string;
  name: string;
  type: string;
  region: string;
  zone: string;
  state: EmulatedState;
  ip: string;
  tags: Record<string, string>;
  spot: boolean;
  launchedAt: number;
  /** When the launch request made it (launchedAt may be later: GCP's VM starts when its operation does). */
  createdAt: number;
  /** Set by a reclaim: the cloud ended it (spot interruption / preemption). */
  reclaimed?: boolean;
  /** The raw launch request, for assertions on what the client asked for. */
  request: unknown;
}

/**
 * The awkward side of the real services, in seconds (absent or 0: off), so a suite can run every fault as
 * slowly as the clouds behave while staying within seconds.
 */
export interface SlowSettings {
  /** Listings (EC2: also calls naming the id) omit a new instance this long: eventual consistency. */
  readonly listLagSec?: number;
  /** GCP: operations stay RUNNING this long. */
  readonly operationSec?: number;
  /** GCP: a deleted VM lingers, STOPPING then TERMINATED, this long after its delete operation started. */
  readonly deleteLingerSec?: number;
  /** Lambda: an instance is active with no IP address this long after it booted. */
  readonly noIpSec?: number;
}

export interface EmulatorOptions {
  /** Milliseconds from launch to running. */
  readonly bootMs?: number;
  /** Address reported for new instances; 127.0.0.1 reaches the loopback sshd, 127.0.0.2 nothing. */
  readonly instanceIp?: string;
  readonly slow?: SlowSettings;
}

export type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => Promise<void> | void;

export abstract class EmulatorBase {
  readonly faults: PlannedFault[] = [];
  readonly instances = new Map<string, EmulatedInstance>();
  readonly calls: string[] = [];
  instanceIp: string;
  bootMs: number;
  /** Milliseconds a new instance is missing from listings. */
  listLagMs: number;
  /**
   * Zones (Lambda: regions) with no capacity for any launch: a refusal scoped to one zone, as the clouds give
   * it, while the region's other zones launch.
   */
  readonly noCapacityIn = new Set<string>();
  /** The zones (regions) whose refusal a launch got, in order. */
  readonly capacityRefusals: string[] = [];
  private server?: Server;
  private hanging = new Set<ServerResponse>();
  port = 0;

  constructor(options: EmulatorOptions = {}) {
    this.instanceIp = options.instanceIp ?? '127.0.0.1';
    this.bootMs = options.bootMs ?? 30;
    this.listLagMs = (options.slow?.listLagSec ?? 0) * 1000;
  }

  /** Whether a listing shows the instance yet (listLagMs after it was made). */
  protected listed(i: EmulatedInstance): boolean {
    return Date.now() - i.createdAt >= this.listLagMs;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  inject(op: string, fault: Fault, times = 1): void {
    this.faults.push({ op, fault, times });
  }

  /** Takes the next planned fault for op, if any. */
  protected takeFault(op: string): Fault | undefined {
    const i = this.faults.findIndex((f) => f.op === op && (f.times ?? 1) > 0);
    if (i < 0) return undefined;
    const planned = this.faults[i]!;
    planned.times = (planned.times ?? 1) - 1;
    return planned.fault;
  }

  /**
   * Instances still billing: running ones (compute) and stopped ones, whose disks bill until deleted. Only
   * terminated (or terminating) instances cost nothing.
   */
  billing(): EmulatedInstance[] {
    return [...this.instances.values()].map((i) => this.refresh(i)).filter((i) => i.state !== 'terminated' && i.state !== 'terminating');
  }

  protected refresh(i: EmulatedInstance): EmulatedInstance {
    if (i.state === 'pending' && Date.now() - i.launchedAt >= this.bootMs) i.state = 'running';
    if (i.state === 'terminating') i.state = 'terminated';
    if (i.state === 'stopping') i.state = 'stopped';
    return i;
  }

  /**
   * The guest powers itself off (`shutdown -h now`, as the on-host watchdog does on an idle instance): by
   * default the instance is then stopped (Compute Engine: TERMINATED), its disk still billing. Emulators
   * whose cloud does otherwise override it.
   */
  guestPowerOff(id: string): void {
    const i = this.instances.get(id);
    if (i && i.state !== 'terminated') i.state = 'stopped';
  }

  /** The cloud takes the instance back (spot interruption, preemption). */
  reclaim(id: string): void {
    const i = this.instances.get(id);
    if (i) {
      i.state = 'terminated';
      i.reclaimed = true;
    }
  }

  protected abstract route(op: string, req: IncomingMessage, body: string, res: ServerResponse, fault: Fault | undefined): Promise<void> | void;
  /** Names the operation of a request, for fault matching and the call log. */
  protected abstract operationOf(req: IncomingMessage, body: string): string;
  protected abstract writeFault(op: string, fault: Fault, res: ServerResponse): void;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const op = this.operationOf(req, body);
        this.calls.push(op);
        const fault = this.takeFault(op);
        if (fault?.kind === 'hang') {
          this.hanging.add(res);
          return;
        }
        if (fault && fault.kind !== 'drop-after' && fault.kind !== 'hang-after' && !(fault.kind === 'capacity' && this.handlesCapacityInRoute())) {
          this.writeFault(op, fault, res);
          return;
        }
        Promise.resolve(this.route(op, req, body, res, fault)).catch((err: unknown) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(String(err));
        });
      });
    });
    this.port = await listenLoopback(this.server);
    return this;
  }

  /** Capacity faults that must know the request (GCP reports them in the operation) return true. */
  protected handlesCapacityInRoute(): boolean {
    return false;
  }

  /**
   * After the operation happened: 'drop-after' cuts the connection without an answer, 'hang-after' keeps it
   * open and silent (until the emulator stops). True when the answer is withheld.
   */
  protected withheld(fault: Fault | undefined, res: ServerResponse): boolean {
    if (fault?.kind === 'drop-after') {
      res.socket?.destroy();
      return true;
    }
    if (fault?.kind === 'hang-after') {
      this.hanging.add(res);
      return true;
    }
    return false;
  }

  async stop(): Promise<void> {
    for (const r of this.hanging) r.socket?.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

export function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** Listens on a free loopback port and returns it; keep-alive sockets would otherwise hold close() open until they time out. */
export async function listenLoopback(server: Server): Promise<number> {
  server.keepAliveTimeout = 1;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  return typeof addr === 'object' && addr ? addr.port : 0;
}
