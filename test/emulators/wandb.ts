// Test double for W&B's GraphQL endpoint (W&B's cloud cannot be reached here): POST /graphql with HTTP
// basic auth "api:<key>", answering the queries the client sends (project.run, sampledHistory, history
// pages, runs with cursors, the viewer's default entity) in the shapes the public API returns, with
// injectable faults: 429 with Retry-After, 5xx, GraphQL errors.
// sampledHistory behaves as the real server does: one list per spec, and a spec matches only rows that hold
// ALL of its keys (wandb/wandb wandb/apis/public/runs.py: Run._sampled_history reads sampledHistory[0] "one
// list per spec"; Run.scan_history(keys=…) "only fetch rows that have all of keys defined", served by the
// same sampledHistory field in SampledHistoryScan). A kinder "any key" match hid a client that asked for
// `loss` and `train/loss` in one spec and so got nothing from a real server.
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';

export interface EmulatedWandbRun {
  readonly name: string;
  readonly displayName: string;
  readonly state: string;
  /** History rows, each with _step. */
  readonly history: ReadonlyArray<Record<string, unknown>>;
}

export type WandbFault =
  { readonly kind: 'status'; readonly status: number; readonly retryAfter?: string } | { readonly kind: 'graphqlError'; readonly message: string };

export class WandbEmulator {
  readonly apiKey: string;
  readonly projects = new Map<string, EmulatedWandbRun[]>();
  readonly faults: WandbFault[] = [];
  /** Operation names in request order ("Run", "SampledHistory", "RunHistoryKeys", "HistoryPage", "Runs", or "unauthorized"). */
  readonly calls: string[] = [];
  /** Arrival times of requests, for backoff assertions. */
  readonly times: number[] = [];
  private server: Server | undefined;
  port = 0;

  /** The API key owner's default entity (query Viewer { viewer { entity } }). */
  viewerEntity = 'acme';
  /** The specs of each SampledHistory request, parsed. */
  readonly specsSeen: Array<Array<{ keys: string[]; samples: number }>> = [];

  constructor(apiKey = 'k'.repeat(40)) {
    this.apiKey = apiKey;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  addRun(entity: string, project: string, run: EmulatedWandbRun): void {
    const key = `${entity}/${project}`;
    this.projects.set(key, [...(this.projects.get(key) ?? []), run]);
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const addr = this.server.address();
    this.port = typeof addr === 'object' && addr ? addr.port : 0;
    return this;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let body = '';
    for await (const c of req) body += String(c);
    this.times.push(Date.now());
    const send = (status: number, payload: unknown, headers: Record<string, string> = {}): void => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(payload));
    };
    if (req.method !== 'POST' || req.url !== '/graphql') return send(404, { errors: [{ message: 'not found' }] });
    const expected = `Basic ${Buffer.from(`api:${this.apiKey}`).toString('base64')}`;
    if (req.headers.authorization !== expected) {
      this.calls.push('unauthorized');
      return send(401, { errors: [{ message: 'user is not logged in' }] });
    }
    let parsed: { query?: unknown; variables?: Record<string, unknown> };
    try {
      parsed = JSON.parse(body) as typeof parsed;
    } catch {
      return send(400, { errors: [{ message: 'invalid JSON body' }] });
    }
    const query = typeof parsed.query === 'string' ? parsed.query : '';
    const op = /^\s*query\s+(\w+)/.exec(query)?.[1] ?? 'anonymous';
    this.calls.push(op);
    const fault = this.faults.shift();
    if (fault?.kind === 'status')
      return send(fault.status, { errors: [{ message: `injected ${fault.status}` }] }, fault.retryAfter ? { 'retry-after': fault.retryAfter } : {});
    if (fault?.kind === 'graphqlError') return send(200, { data: null, errors: [{ message: fault.message }] });
    const v = parsed.variables ?? {};
    if (op === 'Viewer') return send(200, { data: { viewer: { id: 'VXNlcjox', entity: this.viewerEntity } } });
    const runs = this.projects.get(`${String(v.entity)}/${String(v.project)}`);
    if (!runs) return send(200, { data: { project: null } });
    const run = runs.find((r) => r.name === v.name);
    const runFields = (r: EmulatedWandbRun): Record<string, unknown> => ({
      id: Buffer.from(`Run:${r.name}`).toString('base64'),
      name: r.name,
      displayName: r.displayName,
      state: r.state,
      historyLineCount: r.history.length,
    });
    switch (op) {
      case 'Run':
        return send(200, { data: { project: { run: run ? runFields(run) : null } } });
      case 'SampledHistory': {
        if (!run) return send(200, { data: { project: { run: null } } });
        const specs = Array.isArray(v.specs) ? v.specs.map((s) => JSON.parse(String(s)) as { keys: string[]; samples: number }) : [];
        this.specsSeen.push(specs);
        const out = specs.map((spec) => {
          const rows = run.history.filter((h) => spec.keys.every((k) => k in h));
          const stride = Math.max(1, Math.ceil(rows.length / spec.samples));
          return rows.filter((_, i) => i % stride === 0).map((h) => Object.fromEntries(Object.entries(h).filter(([k]) => spec.keys.includes(k))));
        });
        return send(200, { data: { project: { run: { sampledHistory: out } } } });
      }
      case 'RunHistoryKeys': {
        // historyKeys as W&B answers it: lastStep is the highest _step logged, not the number of lines.
        if (!run) return send(200, { data: { project: { run: null } } });
        const steps = run.history.map((h) => Number(h._step)).filter((n) => Number.isFinite(n));
        const keys = Object.fromEntries(
          [...new Set(run.history.flatMap((h) => Object.keys(h)))].map((k) => [k, { typeCounts: [{ type: 'number', count: 1 }] }]),
        );
        return send(200, { data: { project: { run: { historyKeys: steps.length ? { lastStep: Math.max(...steps), keys } : { keys } } } } });
      }
      case 'HistoryPage': {
        if (!run) return send(200, { data: { project: { run: null } } });
        const min = Number(v.minStep);
        const max = Number(v.maxStep);
        const page = run.history
          .filter((h) => Number(h._step) >= min && Number(h._step) < max)
          .slice(0, Number(v.pageSize))
          .map((h) => JSON.stringify(h));
        return send(200, { data: { project: { run: { history: page } } } });
      }
      case 'Runs': {
        const per = Number(v.perPage);
        const start = typeof v.cursor === 'string' ? Number(Buffer.from(v.cursor, 'base64').toString()) : 0;
        const slice = runs.slice(start, start + per);
        const end = start + slice.length;
        return send(200, {
          data: {
            project: {
              runs: {
                edges: slice.map((r, i) => ({ node: runFields(r), cursor: Buffer.from(String(start + i + 1)).toString('base64') })),
                pageInfo: { endCursor: slice.length ? Buffer.from(String(end)).toString('base64') : null, hasNextPage: end < runs.length },
              },
            },
          },
        });
      }
      default:
        return send(200, { errors: [{ message: `Cannot query field in operation ${op}` }] });
    }
  }
}

/** A run with HF-Trainer-style keys: train/loss every step, eval/loss every 10. */
export function trainerHistory(steps: number): Array<Record<string, unknown>> {
  const rows: Array<Record<string, unknown>> = [];
  for (let s = 0; s < steps; s++) {
    const row: Record<string, unknown> = {
      _step: s,
      'train/loss': 2.5 * Math.exp(-s / 200) + 0.3,
      'train/learning_rate': 2e-4 * (1 - s / steps),
      'train/grad_norm': 1 + Math.sin(s / 7) * 0.2,
      'train/global_step': s,
    };
    if (s % 10 === 0) row['eval/loss'] = 2.6 * Math.exp(-s / 220) + 0.35;
    rows.push(row);
  }
  return rows;
}
