// A small client for W&B's public GraphQL API (the endpoint the wandb Python package's Api() uses):
// HTTP basic auth with user "api" and the API key, POST {query, variables} to <base>/graphql.
// The base URL is configurable for self-hosted W&B Server, as WANDB_BASE_URL is for the SDK.
// Failures come back as WandbError with a kind the UI can explain; 429 and 5xx are retried with backoff.

import { abortableSleep } from '../abortableSleep';
import { isLoopbackHostname } from '../loopback';

export const DEFAULT_WANDB_BASE_URL = 'https://api.wandb.ai';

export type WandbErrorKind = 'auth' | 'notFound' | 'rateLimited' | 'http' | 'graphql' | 'network' | 'aborted' | 'badResponse';

export class WandbError extends Error {
  constructor(
    readonly kind: WandbErrorKind,
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'WandbError';
  }
}

/** A W&B run by its path, entity/project/run id (what the SDK's Api().run("e/p/id") takes). */
export interface WandbRunPath {
  readonly entity: string;
  readonly project: string;
  readonly runId: string;
}

export interface WandbRun {
  readonly id: string;
  /** The run id in URLs (what W&B calls `name`). */
  readonly name: string;
  readonly displayName: string;
  readonly state: string;
  readonly historyLineCount: number | null;
}

export type HistoryRow = Readonly<Record<string, unknown>>;

export interface WandbClientOptions {
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly fetchImpl?: typeof fetch;
  /** Retries after a 429 or 5xx before giving up. */
  readonly maxRetries?: number;
  /** Backoff base when the server gives no Retry-After. */
  readonly backoffMs?: number;
  /** Longest single wait, whatever Retry-After says. */
  readonly maxWaitMs?: number;
}

/** The setting wins, then WANDB_BASE_URL, then W&B's cloud. Trailing slashes are dropped. */
export function resolveWandbBaseUrl(setting: string | undefined, env: Readonly<Record<string, string | undefined>> = process.env): string {
  const raw = (setting?.trim() || env.WANDB_BASE_URL?.trim() || DEFAULT_WANDB_BASE_URL).replace(/\/+$/, '');
  return raw;
}

/**
 * Why a W&B base URL must not receive the API key, or undefined when it may. The key goes as Basic auth on
 * every request: only over https, or plain http to this machine (a local W&B Server or a test emulator).
 */
export function wandbBaseUrlProblem(baseUrl: string): string | undefined {
  let u: URL;
  try {
    u = new URL(baseUrl);
  } catch {
    return `W&B base URL ${JSON.stringify(baseUrl)} is not a URL`;
  }
  if (u.username || u.password) return 'W&B base URL must not carry credentials';
  if (u.protocol === 'https:') return undefined;
  if (u.protocol === 'http:' && isLoopbackHostname(u.hostname)) return undefined;
  return `W&B base URL ${u.origin} is not https: the API key is not sent over ${u.protocol.replace(':', '')}`;
}

/** The run's page in the W&B app. The cloud API lives on api.wandb.ai, the app on wandb.ai; W&B Server serves both from one host. */
export function wandbRunUrl(baseUrl: string, ref: WandbRunPath): string {
  let app = baseUrl.replace(/\/+$/, '');
  try {
    const u = new URL(app);
    if (u.hostname === 'api.wandb.ai') app = 'https://wandb.ai';
  } catch {
    // Not a URL: leave as given; the host validates before opening.
  }
  const e = encodeURIComponent;
  return `${app}/${e(ref.entity)}/${e(ref.project)}/runs/${e(ref.runId)}`;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return abortableSleep(ms, signal, () => new WandbError('aborted', 'cancelled'));
}

/** Retry-After is seconds or an HTTP date. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const s = Number(header);
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const d = Date.parse(header);
  return Number.isFinite(d) ? Math.max(0, d - now) : undefined;
}

const RUN_FIELDS = 'id name displayName state historyLineCount';

export class WandbClient {
  private readonly fetchImpl: typeof fetch;
  /** Requests made and retries waited, for tests and the status line. */
  readonly stats = { requests: 0, retries: 0 };

  constructor(private readonly opts: WandbClientOptions) {
    this.fetchImpl = opts.fetchImpl ?? fetch;
  }

  get baseUrl(): string {
    return this.opts.baseUrl.replace(/\/+$/, '');
  }

  async query<T>(query: string, variables: Record<string, unknown>, signal?: AbortSignal): Promise<T> {
    const maxRetries = this.opts.maxRetries ?? 4;
    const auth = Buffer.from(`api:${this.opts.apiKey}`).toString('base64');
    for (let attempt = 0; ; attempt++) {
      if (signal?.aborted) throw new WandbError('aborted', 'cancelled');
      let res: Response;
      try {
        this.stats.requests++;
        res = await this.fetchImpl(`${this.baseUrl}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Basic ${auth}` },
          body: JSON.stringify({ query, variables }),
          ...(signal ? { signal } : {}),
        });
      } catch (e) {
        if (signal?.aborted) throw new WandbError('aborted', 'cancelled');
        if (attempt < maxRetries) {
          await this.backoff(attempt, undefined, signal);
          continue;
        }
        throw new WandbError('network', `cannot reach ${this.baseUrl}: ${e instanceof Error ? e.message : String(e)}`);
      }
      if (res.status === 429 || res.status >= 500) {
        if (attempt < maxRetries) {
          await this.backoff(attempt, retryAfterMs(res.headers.get('retry-after')), signal);
          continue;
        }
        throw res.status === 429
          ? new WandbError('rateLimited', `W&B kept answering 429 (rate limited) after ${maxRetries} retries`, 429)
          : new WandbError('http', `W&B answered HTTP ${res.status} after ${maxRetries} retries`, res.status);
      }
      if (res.status === 401 || res.status === 403) {
        throw new WandbError('auth', `W&B refused the API key (HTTP ${res.status}); set it again with "Fine-Tune: Set W&B API Key"`, res.status);
      }
      let body: unknown;
      try {
        body = await res.json();
      } catch {
        throw new WandbError(res.ok ? 'badResponse' : 'http', `W&B answered HTTP ${res.status} with a body that is not JSON`, res.status);
      }
      const b = body as { data?: unknown; errors?: Array<{ message?: unknown }> };
      if (Array.isArray(b.errors) && b.errors.length > 0) {
        const msg = b.errors.map((e) => String(e.message ?? 'error')).join('; ');
        throw new WandbError(/not found|could not find/i.test(msg) ? 'notFound' : 'graphql', `W&B: ${msg}`, res.status);
      }
      if (!res.ok) throw new WandbError('http', `W&B answered HTTP ${res.status}`, res.status);
      if (typeof b.data !== 'object' || b.data === null) throw new WandbError('badResponse', 'W&B answered without data');
      return b.data as T;
    }
  }

  private async backoff(attempt: number, serverMs: number | undefined, signal?: AbortSignal): Promise<void> {
    this.stats.retries++;
    const base = this.opts.backoffMs ?? 500;
    const ms = Math.min(this.opts.maxWaitMs ?? 30_000, serverMs ?? base * 2 ** attempt * (0.75 + Math.random() * 0.5));
    await sleep(ms, signal);
  }

  async run(ref: WandbRunPath, signal?: AbortSignal): Promise<WandbRun> {
    const data = await this.query<{ project: { run: unknown } | null }>(
      `query Run($entity: String!, $project: String!, $name: String!) { project(name: $project, entityName: $entity) { run(name: $name) { ${RUN_FIELDS} } } }`,
      { entity: ref.entity, project: ref.project, name: ref.runId },
      signal,
    );
    if (!data.project) throw new WandbError('notFound', `W&B project ${ref.entity}/${ref.project} not found`);
    const run = asRun(data.project.run);
    if (!run) throw new WandbError('notFound', `W&B run ${ref.entity}/${ref.project}/${ref.runId} not found`);
    return run;
  }

  /**
   * W&B's server-side sampled history, one spec per key, rows merged by `_step`. The server answers a spec
   * only with rows holding every key of it (wandb/wandb wandb/apis/public/runs.py: scan_history's keys
   * "only fetch rows that have all of keys defined", and _sampled_history sends one spec and reads
   * sampledHistory[0], one list per spec). One spec naming `loss` and `train/loss` together would match no row
   * at all, since a run logs one or the other; one spec per key gets each curve, `samples` points each.
   */
  async sampledHistory(ref: WandbRunPath, keys: readonly string[], samples: number, signal?: AbortSignal): Promise<HistoryRow[]> {
    const wanted = [...new Set(keys.filter((k) => k !== '_step'))];
    if (wanted.length === 0) return [];
    const specs = wanted.map((k) => JSON.stringify({ keys: ['_step', k], samples }));
    const data = await this.query<{ project: { run: { sampledHistory?: unknown } | null } | null }>(
      'query SampledHistory($entity: String!, $project: String!, $name: String!, $specs: [JSONString!]!) { project(name: $project, entityName: $entity) { run(name: $name) { sampledHistory(specs: $specs) } } }',
      { entity: ref.entity, project: ref.project, name: ref.runId, specs },
      signal,
    );
    const sh = data.project?.run?.sampledHistory;
    if (!data.project?.run) throw new WandbError('notFound', `W&B run ${ref.entity}/${ref.project}/${ref.runId} not found`);
    if (!Array.isArray(sh)) throw new WandbError('badResponse', 'sampledHistory is not a list');
    return mergeByStep(sh);
  }

  /** The entity W&B files runs under when none is named (the key owner's default entity, as Api().default_entity). */
  async viewerEntity(signal?: AbortSignal): Promise<string> {
    const data = await this.query<{ viewer: { entity?: unknown } | null }>('query Viewer { viewer { id entity } }', {}, signal);
    const entity = data.viewer?.entity;
    if (typeof entity !== 'string' || !entity) throw new WandbError('auth', 'W&B did not say which entity this API key belongs to');
    return entity;
  }

  /** The full history, page by page over step ranges (what the SDK's scan_history does). */
  async scanHistory(
    ref: WandbRunPath,
    opts: { readonly pageSize?: number; readonly maxRows?: number; readonly minStep?: number } = {},
    signal?: AbortSignal,
  ): Promise<HistoryRow[]> {
    const pageSize = opts.pageSize ?? 1000;
    // Steps, not lines: a run logged with explicit steps (every 10th, or resumed past a gap) has fewer lines
    // than its last step, and bounding by historyLineCount dropped everything after that count. The SDK's
    // scan_history stops at lastHistoryStep + 1.
    const end = (await this.lastHistoryStep(ref, signal)) + 1;
    const rows: HistoryRow[] = [];
    for (let min = opts.minStep ?? 0; min < end && rows.length < (opts.maxRows ?? 100_000); min += pageSize) {
      const data = await this.query<{ project: { run: { history?: unknown } | null } | null }>(
        'query HistoryPage($entity: String!, $project: String!, $name: String!, $minStep: Int64!, $maxStep: Int64!, $pageSize: Int!) { project(name: $project, entityName: $entity) { run(name: $name) { history(minStep: $minStep, maxStep: $maxStep, samples: $pageSize) } } }',
        { entity: ref.entity, project: ref.project, name: ref.runId, minStep: min, maxStep: min + pageSize, pageSize },
        signal,
      );
      const page = data.project?.run?.history;
      if (!Array.isArray(page)) throw new WandbError('badResponse', 'history is not a list');
      for (const line of page) {
        try {
          const row: unknown = typeof line === 'string' ? JSON.parse(line) : line;
          if (typeof row === 'object' && row !== null) rows.push(row as HistoryRow);
        } catch {
          // One undecodable row is skipped, like the SDK does.
        }
      }
    }
    return rows;
  }

  /**
   * The run's last logged step: the SDK's Run.lastHistoryStep, historyKeys.lastStep, or -1 when the run has no
   * history (or the server names no last step).
   */
  async lastHistoryStep(ref: WandbRunPath, signal?: AbortSignal): Promise<number> {
    const data = await this.query<{ project: { run: { historyKeys?: unknown } | null } | null }>(
      'query RunHistoryKeys($entity: String!, $project: String!, $name: String!) { project(name: $project, entityName: $entity) { run(name: $name) { historyKeys } } }',
      { entity: ref.entity, project: ref.project, name: ref.runId },
      signal,
    );
    if (!data.project?.run) throw new WandbError('notFound', `W&B run ${ref.entity}/${ref.project}/${ref.runId} not found`);
    const keys = data.project.run.historyKeys;
    const lastStep = typeof keys === 'object' && keys !== null ? (keys as { lastStep?: unknown }).lastStep : undefined;
    return typeof lastStep === 'number' && Number.isFinite(lastStep) ? lastStep : -1;
  }

  /** Runs of a project, newest first, following the cursor until `maxRuns`. */
  async listRuns(
    entity: string,
    project: string,
    opts: { readonly perPage?: number; readonly maxRuns?: number } = {},
    signal?: AbortSignal,
  ): Promise<WandbRun[]> {
    const out: WandbRun[] = [];
    let cursor: string | null = null;
    const maxRuns = opts.maxRuns ?? 500;
    for (;;) {
      const data: { project: { runs: { edges: Array<{ node: unknown }>; pageInfo: { endCursor: string | null; hasNextPage: boolean } } } | null } =
        await this.query(
          `query Runs($entity: String!, $project: String!, $cursor: String, $perPage: Int!) { project(name: $project, entityName: $entity) { runs(first: $perPage, after: $cursor, order: "-created_at") { edges { node { ${RUN_FIELDS} } cursor } pageInfo { endCursor hasNextPage } } } }`,
          { entity, project, cursor, perPage: opts.perPage ?? 50 },
          signal,
        );
      if (!data.project) throw new WandbError('notFound', `W&B project ${entity}/${project} not found`);
      for (const e of data.project.runs.edges) {
        const r = asRun(e.node);
        if (r) out.push(r);
        if (out.length >= maxRuns) return out;
      }
      if (!data.project.runs.pageInfo.hasNextPage || !data.project.runs.pageInfo.endCursor) return out;
      cursor = data.project.runs.pageInfo.endCursor;
    }
  }
}

/** Per-spec row lists → one row per `_step`, keys of all specs together, in step order. */
export function mergeByStep(perSpec: readonly unknown[]): HistoryRow[] {
  const byStep = new Map<number, Record<string, unknown>>();
  for (const spec of perSpec) {
    if (!Array.isArray(spec)) continue;
    for (const row of spec) {
      if (typeof row !== 'object' || row === null || Array.isArray(row)) continue;
      const step = (row as Record<string, unknown>)._step;
      if (typeof step !== 'number' || !Number.isFinite(step)) continue;
      byStep.set(step, { ...byStep.get(step), ...(row as Record<string, unknown>) });
    }
  }
  return [...byStep.entries()].sort((a, b) => a[0] - b[0]).map(([, r]) => r);
}

/**
 * Where the runner's own W&B run lives, from the `started` event: the URL it wrote names entity and project;
 * without one the project is the spec's (WANDB_PROJECT) or the HF Trainer's default "huggingface"
 * (transformers' WandbCallback: os.getenv("WANDB_PROJECT", "huggingface")) and the entity the key owner's default.
 */
export async function ownWandbRunRef(
  started: { readonly wandb_run_id?: string; readonly wandb_url?: string },
  hints: { readonly entity?: string; readonly project?: string },
  client: Pick<WandbClient, 'viewerEntity'>,
  signal?: AbortSignal,
): Promise<WandbRunPath | undefined> {
  const runId = started.wandb_run_id;
  if (!runId) return undefined;
  if (started.wandb_url) {
    try {
      const parts = new URL(started.wandb_url).pathname.split('/').filter(Boolean).map(decodeURIComponent);
      if (parts.length === 4 && parts[2] === 'runs' && parts[3] === runId) return { entity: parts[0]!, project: parts[1]!, runId };
    } catch {
      // Not a URL: fall back to the hints.
    }
  }
  const entity = hints.entity || (await client.viewerEntity(signal));
  return { entity, project: hints.project || 'huggingface', runId };
}

function asRun(raw: unknown): WandbRun | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const r = raw as Record<string, unknown>;
  if (typeof r.name !== 'string') return undefined;
  return {
    id: typeof r.id === 'string' ? r.id : r.name,
    name: r.name,
    displayName: typeof r.displayName === 'string' ? r.displayName : r.name,
    state: typeof r.state === 'string' ? r.state : 'unknown',
    historyLineCount: typeof r.historyLineCount === 'number' ? r.historyLineCount : null,
  };
}

/** History keys the metrics panel asks for, per curve; the HF Trainer logs the "train/…" and "eval/…" forms. */
export const WANDB_METRIC_KEYS: Readonly<Record<string, readonly string[]>> = {
  loss: ['train/loss', 'loss'],
  eval_loss: ['eval/loss', 'eval_loss'],
  learning_rate: ['train/learning_rate', 'learning_rate', 'lr'],
  grad_norm: ['train/grad_norm', 'grad_norm'],
  tokens_per_second: ['train/tokens_per_second', 'tokens_per_second', 'train/train_tokens_per_second'],
  'rewards/margins': ['train/rewards/margins', 'rewards/margins'],
  'rewards/accuracies': ['train/rewards/accuracies', 'rewards/accuracies'],
};

/** Rows → {step, values} with our curve names; other numeric keys keep their W&B names. */
export function historyToPoints(rows: readonly HistoryRow[]): Array<{ step: number; values: Record<string, number> }> {
  const alias = new Map<string, string>();
  for (const [ours, theirs] of Object.entries(WANDB_METRIC_KEYS)) for (const k of theirs) alias.set(k, ours);
  const out: Array<{ step: number; values: Record<string, number> }> = [];
  for (const row of rows) {
    const step = typeof row._step === 'number' ? row._step : typeof row['train/global_step'] === 'number' ? row['train/global_step'] : undefined;
    if (step === undefined || !Number.isFinite(step)) continue;
    // No prototype: `constructor` or `toString` logged as a metric would otherwise read as already set.
    const values: Record<string, number> = Object.create(null) as Record<string, number>;
    for (const [k, v] of Object.entries(row)) {
      if (k.startsWith('_') || typeof v !== 'number' || !Number.isFinite(v)) continue;
      const name = alias.get(k) ?? k;
      if (values[name] === undefined) values[name] = v;
    }
    out.push({ step, values });
  }
  out.sort((a, b) => a.step - b.step);
  return out;
}
