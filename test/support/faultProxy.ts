// A fault-injecting HTTP proxy in front of an EC2 Query API (moto's server): requests go through to the real
// implementation, and the proxy makes its answers as unreliable as AWS's can be. It drops an answer after the
// action happened (lost answer), holds one back (a Stop pressed while RunInstances is in flight), and adds the
// eventual consistency moto lacks: for `listLagMs` after RunInstances the new instance is missing from filtered
// DescribeInstances and NotFound to calls naming it, as AWS documents
// (docs.aws.amazon.com/ec2/latest/devguide/eventual-consistency.html).
import { createServer, request as httpRequest } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import { listenLoopback } from '../emulators/server';

export type ProxyFault =
  /** Forwarded, then the connection is cut without an answer: the client cannot know the action happened. */
  | { readonly kind: 'drop-after' }
  /** Forwarded, and the answer held back this long (the client's abort or timeout comes first). */
  | { readonly kind: 'hold-answer'; readonly ms: number };

interface Upstream {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** The top-level `<item>…</item>` elements between from and to (nested items counted, not split). */
function topLevelItems(xml: string, from: number, to: number): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  const tag = /<(\/?)item>/g;
  tag.lastIndex = from;
  let depth = 0;
  let start = -1;
  for (let m = tag.exec(xml); m && m.index < to; m = tag.exec(xml)) {
    if (!m[1]) {
      if (depth === 0) start = m.index;
      depth++;
    } else if (--depth === 0) out.push([start, m.index + m[0].length]);
  }
  return out;
}

function notFound(id: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>InvalidInstanceID.NotFound</Code><Message>The instance ID '${id}' does not exist</Message></Error></Errors><RequestID>proxy-lag</RequestID></Response>`;
}

export class FaultProxy {
  /** Actions seen, in order. */
  readonly calls: string[] = [];
  private readonly faults: Array<{ action: string; fault: ProxyFault; times: number }> = [];
  /** Instance ids RunInstances made, with when: inside listLagMs they are hidden. */
  private readonly madeAt = new Map<string, number>();
  private server?: Server;
  private readonly held = new Set<ServerResponse>();
  /** Called after an action was answered by the upstream (before the client gets it, if it does). */
  onUpstreamAnswer?: (action: string) => void;
  port = 0;

  constructor(
    private readonly target: string,
    public listLagMs = 0,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  inject(action: string, fault: ProxyFault, times = 1): void {
    this.faults.push({ action, fault, times });
  }

  /** Instances whose listing lag is not over. */
  private lagging(): Set<string> {
    const now = Date.now();
    return new Set([...this.madeAt].filter(([, at]) => now - at < this.listLagMs).map(([id]) => id));
  }

  private forward(req: IncomingMessage, body: Buffer): Promise<Upstream> {
    const u = new URL(this.target);
    return new Promise((resolve, reject) => {
      const up = httpRequest({ host: u.hostname, port: u.port, method: req.method, path: req.url, headers: { ...req.headers, host: u.host } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      up.on('error', reject);
      up.end(body);
    });
  }

  private answer(res: ServerResponse, status: number, headers: IncomingHttpHeaders, body: string): void {
    const h: Record<string, string> = {};
    for (const [k, v] of Object.entries(headers)) if (typeof v === 'string' && !['content-length', 'transfer-encoding', 'connection'].includes(k)) h[k] = v;
    res.writeHead(status, { ...h, 'content-length': String(Buffer.byteLength(body)) });
    res.end(body);
  }

  private async handle(req: IncomingMessage, body: Buffer, res: ServerResponse): Promise<void> {
    const params = new URLSearchParams(body.toString('utf8'));
    const action = params.get('Action') ?? (String(req.headers['x-amz-target'] ?? '') || 'unknown');
    this.calls.push(action);
    const lag = this.lagging();
    const named = [...params.entries()].filter(([k]) => /^InstanceId\.\d+$/.test(k)).map(([, v]) => v);
    const hidden = named.find((id) => lag.has(id));
    if (hidden && (action === 'DescribeInstances' || action === 'TerminateInstances' || action === 'StopInstances'))
      return this.answer(res, 400, { 'content-type': 'text/xml;charset=UTF-8' }, notFound(hidden));
    const planned = this.faults.find((f) => f.action === action && f.times > 0);
    if (planned) planned.times--;
    const up = await this.forward(req, body);
    let text = up.body;
    if (action === 'RunInstances' && up.status === 200)
      for (const m of text.matchAll(/<instanceId>(i-[0-9a-f]+)<\/instanceId>/g)) if (!this.madeAt.has(m[1]!)) this.madeAt.set(m[1]!, Date.now());
    if (action === 'DescribeInstances' && up.status === 200 && named.length === 0 && lag.size > 0) {
      // A filtered listing: reservations holding an instance still inside its lag are not there yet.
      const open = text.indexOf('<reservationSet>');
      const close = text.lastIndexOf('</reservationSet>');
      if (open >= 0 && close > open) {
        const keep = topLevelItems(text, open, close).filter(([a, b]) => ![...lag].some((id) => text.slice(a, b).includes(`<instanceId>${id}</instanceId>`)));
        text = `${text.slice(0, open)}<reservationSet>${keep.map(([a, b]) => text.slice(a, b)).join('')}${text.slice(close)}`;
      }
    }
    this.onUpstreamAnswer?.(action);
    if (planned?.fault.kind === 'drop-after') {
      res.socket?.destroy();
      return;
    }
    if (planned?.fault.kind === 'hold-answer') {
      this.held.add(res);
      await new Promise((r) => setTimeout(r, planned.fault.kind === 'hold-answer' ? planned.fault.ms : 0));
      this.held.delete(res);
      if (res.destroyed || res.socket?.destroyed) return;
    }
    this.answer(res, up.status, up.headers, text);
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.handle(req, Buffer.concat(chunks), res).catch((err: unknown) => {
          if (!res.headersSent) this.answer(res, 502, { 'content-type': 'text/plain' }, `proxy: ${String(err)}`);
        });
      });
    });
    this.port = await listenLoopback(this.server);
    return this;
  }

  async stop(): Promise<void> {
    for (const r of this.held) r.socket?.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}
