// The W&B client (the real HTTP/GraphQL code) against the local emulator of W&B's GraphQL endpoint
// (test/emulators/wandb.ts: a test double, since W&B's cloud cannot be reached here).
import { after, before, beforeEach, test } from 'node:test';
import * as assert from 'node:assert/strict';
import { WandbEmulator, trainerHistory } from '../../emulators/wandb';
import {
  historyToPoints,
  ownWandbRunRef,
  resolveWandbBaseUrl,
  WANDB_METRIC_KEYS,
  WandbClient,
  WandbError,
  wandbRunUrl,
  retryAfterMs,
} from '../../../src/core/telemetry/wandb';

const ref = { entity: 'acme', project: 'qlora', runId: 'abc123' };
let emu: WandbEmulator;

before(async () => {
  emu = await new WandbEmulator().start();
  emu.addRun('acme', 'qlora', { name: 'abc123', displayName: 'llama-qlora-r16', state: 'running', history: trainerHistory(2500) });
  // A user's own loop logging the short names (no "train/" prefix), eval every 25 steps.
  emu.addRun('acme', 'qlora', {
    name: 'own1',
    displayName: 'own-loop',
    state: 'finished',
    history: Array.from({ length: 300 }, (_, s) => ({ _step: s, loss: 3 - s / 200, lr: 1e-4, ...(s % 25 === 0 ? { eval_loss: 3.1 - s / 210 } : {}) })),
  });
  for (let i = 0; i < 120; i++) emu.addRun('acme', 'sweep', { name: `r${i}`, displayName: `sweep-${i}`, state: 'finished', history: [] });
});
after(async () => emu.stop());
beforeEach(() => {
  emu.faults.length = 0;
  emu.calls.length = 0;
  emu.times.length = 0;
  emu.specsSeen.length = 0;
});

const client = (over: Partial<ConstructorParameters<typeof WandbClient>[0]> = {}): WandbClient =>
  new WandbClient({ baseUrl: emu.baseUrl, apiKey: emu.apiKey, backoffMs: 20, ...over });

test('reads a run and its sampled history with the HF Trainer keys mapped to the panel curves', async () => {
  const c = client();
  const run = await c.run(ref);
  assert.equal(run.displayName, 'llama-qlora-r16');
  assert.equal(run.state, 'running');
  const rows = await c.sampledHistory(ref, Object.values(WANDB_METRIC_KEYS).flat(), 500);
  assert.ok(rows.length > 0 && rows.length <= 500, `${rows.length} rows`);
  const points = historyToPoints(rows);
  assert.ok(points.some((p) => p.values.loss !== undefined));
  assert.ok(points.some((p) => p.values.eval_loss !== undefined));
  assert.ok(points.every((p, i) => i === 0 || p.step >= points[i - 1]!.step));
  assert.deepEqual(emu.calls, ['Run', 'SampledHistory']);
});

test('the emulator answers a spec only with rows holding all its keys, as W&B does: loss + train/loss together match nothing', async () => {
  // The request the client used to send: one spec with every candidate key. Against the real server's
  // all-keys semantics this is empty, because a run logs "loss" or "train/loss", never both.
  const data = await client().query<{ project: { run: { sampledHistory: unknown[][] } } }>(
    'query SampledHistory($entity: String!, $project: String!, $name: String!, $specs: [JSONString!]!) { project(name: $project, entityName: $entity) { run(name: $name) { sampledHistory(specs: $specs) } } }',
    {
      ...{ entity: ref.entity, project: ref.project, name: ref.runId },
      specs: [JSON.stringify({ keys: ['_step', ...Object.values(WANDB_METRIC_KEYS).flat()], samples: 500 })],
    },
  );
  assert.equal(data.project.run.sampledHistory.length, 1, 'one list per spec');
  assert.equal(data.project.run.sampledHistory[0]!.length, 0);
  // train/loss with eval/loss: only the eval steps hold both.
  const both = await client().query<{ project: { run: { sampledHistory: Array<Array<Record<string, unknown>>> } } }>(
    'query SampledHistory($entity: String!, $project: String!, $name: String!, $specs: [JSONString!]!) { project(name: $project, entityName: $entity) { run(name: $name) { sampledHistory(specs: $specs) } } }',
    { entity: ref.entity, project: ref.project, name: ref.runId, specs: [JSON.stringify({ keys: ['_step', 'train/loss', 'eval/loss'], samples: 10_000 })] },
  );
  assert.equal(both.project.run.sampledHistory[0]!.length, 250);
  assert.ok(both.project.run.sampledHistory[0]!.every((r) => Number(r._step) % 10 === 0));
});

test('sampledHistory sends one spec per key and merges the rows by _step: every curve arrives, eval steps carry both losses', async () => {
  const keys = Object.values(WANDB_METRIC_KEYS).flat();
  const rows = await client().sampledHistory(ref, keys, 1000);
  const specs = emu.specsSeen[0]!;
  assert.equal(specs.length, keys.length, 'one spec per key');
  assert.ok(specs.every((s) => s.keys.length === 2 && s.keys[0] === '_step' && s.samples === 1000));
  const points = historyToPoints(rows);
  assert.ok(points.filter((p) => p.values.loss !== undefined).length >= 800, 'train/loss sampled on its own (stride 3 of 2500)');
  assert.equal(points.filter((p) => p.values.eval_loss !== undefined).length, 250, 'eval/loss every 10 steps');
  assert.ok(points.some((p) => p.values.learning_rate !== undefined && p.values.grad_norm !== undefined));
  const at300 = points.find((p) => p.step === 300); // in both samplings: train/loss every 3rd row, eval/loss every row
  assert.ok(at300 && at300.values.loss !== undefined && at300.values.eval_loss !== undefined, 'rows of the same _step merged into one point');
  assert.equal(new Set(points.map((p) => p.step)).size, points.length, 'one point per step');
  // A run logging the short names gets its curves too.
  const own = historyToPoints(await client().sampledHistory({ ...ref, runId: 'own1' }, keys, 1000));
  assert.equal(own.filter((p) => p.values.loss !== undefined).length, 300);
  assert.equal(own.filter((p) => p.values.eval_loss !== undefined).length, 12);
  assert.ok(own.every((p) => p.values.learning_rate === 1e-4));
});

test("our own run is found from the started event: the URL the runner wrote, else the key owner's entity and the HF default project", async () => {
  const c = client();
  assert.deepEqual(await ownWandbRunRef({ wandb_run_id: 'abc123', wandb_url: 'https://wandb.ai/acme/qlora/runs/abc123' }, {}, c), ref);
  assert.deepEqual(emu.calls, [], 'the URL is enough');
  emu.viewerEntity = 'acme-team';
  assert.deepEqual(await ownWandbRunRef({ wandb_run_id: 'x1' }, {}, c), { entity: 'acme-team', project: 'huggingface', runId: 'x1' });
  assert.deepEqual(emu.calls, ['Viewer']);
  assert.deepEqual(await ownWandbRunRef({ wandb_run_id: 'x1' }, { entity: 'e', project: 'p' }, c), { entity: 'e', project: 'p', runId: 'x1' });
  assert.equal(await ownWandbRunRef({}, {}, c), undefined);
  emu.viewerEntity = 'acme';
});

test('a wrong API key is an auth error, not retried', async () => {
  await assert.rejects(client({ apiKey: 'wrong' }).run(ref), (e: unknown) => e instanceof WandbError && e.kind === 'auth' && e.status === 401);
  assert.deepEqual(emu.calls, ['unauthorized']);
});

test('pages through runs with the cursor', async () => {
  const runs = await client().listRuns('acme', 'sweep', { perPage: 50 });
  assert.equal(runs.length, 120);
  assert.deepEqual(emu.calls, ['Runs', 'Runs', 'Runs']);
  assert.equal(new Set(runs.map((r) => r.name)).size, 120);
});

test('scans the full history page by page over step ranges', async () => {
  const rows = await client().scanHistory(ref, { pageSize: 1000 });
  assert.equal(rows.length, 2500);
  assert.deepEqual(emu.calls, ['RunHistoryKeys', 'HistoryPage', 'HistoryPage', 'HistoryPage']);
});

test('scanHistory is bounded by the last logged step + 1, as the SDK does, not by the number of history lines', async () => {
  // Logged every 10th step: 300 lines whose steps run to 2990. Bounding by historyLineCount (300) read 30 rows.
  emu.addRun('acme', 'qlora', {
    name: 'sparse1',
    displayName: 'sparse',
    state: 'finished',
    history: Array.from({ length: 300 }, (_, i) => ({ _step: i * 10, loss: 3 - i / 200 })),
  });
  const rows = await client().scanHistory({ ...ref, runId: 'sparse1' }, { pageSize: 1000 });
  assert.equal(rows.length, 300, `read ${rows.length} of 300 rows`);
  assert.equal(rows.at(-1)?._step, 2990);
  assert.deepEqual(emu.calls, ['RunHistoryKeys', 'HistoryPage', 'HistoryPage', 'HistoryPage']);
  emu.calls.length = 0;
  assert.deepEqual(await client().scanHistory({ entity: 'acme', project: 'sweep', runId: 'r0' }), []);
  assert.deepEqual(emu.calls, ['RunHistoryKeys']);
});

test('429 with Retry-After waits that long, then succeeds', async () => {
  emu.faults.push({ kind: 'status', status: 429, retryAfter: '1' }, { kind: 'status', status: 429, retryAfter: '0' });
  const c = client();
  const t0 = Date.now();
  const run = await c.run(ref);
  assert.equal(run.name, 'abc123');
  assert.equal(c.stats.retries, 2);
  assert.ok(Date.now() - t0 >= 950, `waited only ${Date.now() - t0} ms`);
  assert.ok(emu.times[1]! - emu.times[0]! >= 950);
});

test('persistent 429 ends as a rateLimited error after maxRetries', async () => {
  for (let i = 0; i < 5; i++) emu.faults.push({ kind: 'status', status: 429 });
  const c = client({ maxRetries: 3 });
  await assert.rejects(c.run(ref), (e: unknown) => e instanceof WandbError && e.kind === 'rateLimited');
  assert.equal(emu.calls.length, 4);
  // Exponential backoff: each wait at least as long as ~0.75 × the doubled base.
  const gaps = emu.times.slice(1).map((t, i) => t - emu.times[i]!);
  assert.ok(gaps[2]! >= 50, `gaps ${gaps.join(',')}`);
});

test('a 503 is retried; GraphQL errors and unknown runs are reported by kind', async () => {
  emu.faults.push({ kind: 'status', status: 503 });
  assert.equal((await client().run(ref)).name, 'abc123');
  emu.faults.push({ kind: 'graphqlError', message: 'Internal: query too complex' });
  await assert.rejects(client().run(ref), (e: unknown) => e instanceof WandbError && e.kind === 'graphql' && /too complex/.test(e.message));
  await assert.rejects(client().run({ ...ref, runId: 'nope' }), (e: unknown) => e instanceof WandbError && e.kind === 'notFound');
  await assert.rejects(client().run({ ...ref, project: 'nope' }), (e: unknown) => e instanceof WandbError && e.kind === 'notFound');
});

test('an aborted request stops waiting at once', async () => {
  emu.faults.push({ kind: 'status', status: 429, retryAfter: '30' });
  const ac = new AbortController();
  const t0 = Date.now();
  setTimeout(() => ac.abort(), 100);
  await assert.rejects(client().run(ref, ac.signal), (e: unknown) => e instanceof WandbError && e.kind === 'aborted');
  assert.ok(Date.now() - t0 < 2000);
});

test('an unreachable server is a network error', async () => {
  await assert.rejects(
    new WandbClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'x', maxRetries: 1, backoffMs: 1 }).run(ref),
    (e: unknown) => e instanceof WandbError && e.kind === 'network',
  );
});

test('base URL: setting, then WANDB_BASE_URL, then the cloud; the run page link', () => {
  assert.equal(resolveWandbBaseUrl('https://wandb.corp.example/', {}), 'https://wandb.corp.example');
  assert.equal(resolveWandbBaseUrl('', { WANDB_BASE_URL: 'http://10.0.0.5:8080' }), 'http://10.0.0.5:8080');
  assert.equal(resolveWandbBaseUrl(undefined, {}), 'https://api.wandb.ai');
  assert.equal(wandbRunUrl('https://api.wandb.ai', ref), 'https://wandb.ai/acme/qlora/runs/abc123');
  assert.equal(wandbRunUrl('https://wandb.corp.example', { ...ref, runId: 'a b' }), 'https://wandb.corp.example/acme/qlora/runs/a%20b');
  assert.equal(retryAfterMs('2'), 2000);
  assert.equal(retryAfterMs(new Date(Date.now() + 5000).toUTCString())! > 3000, true);
});
