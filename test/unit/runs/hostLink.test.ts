// The per-run host state: a followed run's link to its host (core/runs/sync/hostLink.ts) and what the panels make of
// it with the run's files (features/panels/linkedHostState.ts), including "no GPU sample for N s".
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { HostLinkTracker, hostLinkText } from '../../../src/core/runs/sync/hostLink';
import type { HostLink } from '../../../src/core/runs/sync/hostLink';
import { NO_SAMPLE_AFTER_MS, hostStateLine, onLinkedHostState, panelHostState } from '../../../src/features/panels/linkedHostState';
import type { HostState } from '../../../src/protocol/gpu';
import { runRowText } from '../../../src/core/runs/view/runRowText';
import type { RunRecord } from '../../../src/core/runs/store/runRecord';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

test('a drop is reconnecting since the drop, unreachable past the threshold, connected when every tail is back', async () => {
  let now = 1_000_000;
  const seen: HostLink[] = [];
  const link = new HostLinkTracker((s) => seen.push(s), { now: () => now, unreachableAfterMs: 40 });
  assert.deepEqual(link.current, { kind: 'connected' });
  link.dropped('output_log', 'the connection dropped');
  now += 5;
  link.dropped('gpu', 'the connection dropped');
  assert.deepEqual(link.current, { kind: 'reconnecting', since: 1_000_000, detail: 'the connection dropped' });
  await sleep(80);
  assert.deepEqual(link.current, { kind: 'unreachable', since: 1_000_000, detail: 'the connection dropped' });
  link.reconnected('output_log');
  assert.equal(link.current.kind, 'unreachable', 'gpu.csv is still not read: the link is not back yet');
  link.reconnected('gpu');
  assert.deepEqual(link.current, { kind: 'connected' });
  assert.deepEqual(
    seen.map((s) => s.kind),
    ['reconnecting', 'unreachable', 'connected'],
  );
});

test('a link back before the threshold is never called unreachable; ended is final', async () => {
  const seen: HostLink[] = [];
  const link = new HostLinkTracker((s) => seen.push(s), { unreachableAfterMs: 30 });
  link.dropped('events', 'x');
  link.reconnected('events');
  await sleep(60);
  assert.deepEqual(
    seen.map((s) => s.kind),
    ['reconnecting', 'connected'],
  );
  link.dropped('events', 'x');
  link.ended();
  link.reconnected('events');
  link.dropped('gpu', 'x');
  await sleep(60);
  assert.deepEqual(
    seen.map((s) => s.kind),
    ['reconnecting', 'connected', 'reconnecting', 'ended'],
  );
  assert.equal(hostLinkText({ kind: 'ended' }), '');
  assert.match(hostLinkText({ kind: 'unreachable', since: Date.now(), detail: 'x' }), /^host unreachable since /);
});

test('the panels: the link wins over the files; a connected live run whose samples stopped says so', () => {
  const local: HostState = { kind: 'connected' };
  const t = 5_000_000;
  assert.deepEqual(panelHostState(local, { kind: 'unreachable', since: 1, detail: 'd' }, t, t), { kind: 'unreachable', since: 1, detail: 'd' });
  assert.deepEqual(panelHostState(local, { kind: 'reconnecting', since: 1, detail: 'd' }, t, t), { kind: 'reconnecting', since: 1, detail: 'd' });
  assert.deepEqual(panelHostState(local, { kind: 'connected' }, t, t + NO_SAMPLE_AFTER_MS), { kind: 'connected' });
  assert.deepEqual(panelHostState(local, { kind: 'connected' }, t, t + NO_SAMPLE_AFTER_MS + 1), { kind: 'noSample', since: t });
  // No link (a copied folder, a run not followed in this session): the files alone, never "no sample".
  assert.deepEqual(panelHostState(local, undefined, t, t + 10 * NO_SAMPLE_AFTER_MS), { kind: 'connected' });
  assert.deepEqual(panelHostState(local, { kind: 'ended' }, t, t + 10 * NO_SAMPLE_AFTER_MS), { kind: 'ended' });
  assert.deepEqual(panelHostState({ kind: 'gpuLost', detail: 'g' }, { kind: 'ended' }, t, t), { kind: 'gpuLost', detail: 'g' });
  assert.match(hostStateLine({ kind: 'unreachable', since: t, detail: 'd' }) ?? '', /^Host unreachable since .*: d;/);
  assert.equal(hostStateLine({ kind: 'noSample', since: t }), '');
  assert.equal(hostStateLine({ kind: 'noGpu', detail: '' }), undefined);
});

test('onLinkedHostState follows the link feed and the clock, and says each change once', async () => {
  let link: HostLink | undefined = { kind: 'connected' };
  const feedListeners = new Set<(l: HostLink) => void>();
  const localListeners = new Set<(s: HostState) => void>();
  const local = {
    lastSampleAt: Date.now() as number | undefined,
    onHostState: (l: (s: HostState) => void) => {
      localListeners.add(l);
      l({ kind: 'connected' });
      return { dispose: () => localListeners.delete(l) };
    },
  };
  const feed = {
    current: () => link,
    onChange: (l: (x: HostLink) => void) => {
      feedListeners.add(l);
      return { dispose: () => feedListeners.delete(l) };
    },
  };
  const seen: string[] = [];
  const sub = onLinkedHostState(local, feed, (s) => seen.push(s.kind), { checkMs: 10, noSampleAfterMs: 40 });
  link = { kind: 'unreachable', since: 1, detail: 'd' };
  for (const l of feedListeners) l(link);
  link = { kind: 'connected' };
  for (const l of feedListeners) l(link);
  await sleep(120);
  local.lastSampleAt = Date.now();
  await sleep(20);
  sub.dispose();
  assert.deepEqual(seen, ['connected', 'unreachable', 'connected', 'noSample', 'connected']);
  assert.equal(feedListeners.size + localListeners.size, 0, 'dispose unsubscribes');
});

test("the Runs view row and tooltip say a live run's lost link, and nothing once the run ended or the link is back", () => {
  const t = new Date(2026, 10, 28, 3, 0, 0).getTime();
  const rec = {
    id: 'r1',
    name: 'qlora',
    createdAt: new Date(t - 60_000).toISOString(),
    updatedAt: new Date(t).toISOString(),
    status: 'running',
    host: 'gpu-box',
    provider: 'ssh',
    specPath: '/ws/finetune.yaml',
    specHash: 'h',
    workspaceDir: '/ws',
    origin: 'here',
    teardownPolicy: 'terminate',
  } as RunRecord;
  const lost: HostLink = { kind: 'unreachable', since: t - 30_000, detail: 'the connection to gpu-box dropped' };
  const since = new Date(t - 30_000).toLocaleTimeString();
  const row = runRowText(rec, lost, undefined, t);
  assert.match(row.description, new RegExp(` · host unreachable since ${since}$`));
  assert.match(row.tooltip, new RegExp(`\\nHost: host unreachable since ${since}$`));
  assert.match(
    runRowText(rec, { ...lost, kind: 'reconnecting' }, 'launch unknown', t).description,
    /host not answering since .*; reconnecting · launch unknown$/,
  );
  assert.doesNotMatch(runRowText(rec, { kind: 'connected' }, undefined, t).description, /host/);
  assert.doesNotMatch(runRowText({ ...rec, status: 'failed' }, lost, undefined, t).tooltip, /Host: /);
});
