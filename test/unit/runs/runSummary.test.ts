// How runs are told apart and how one is shown when it ends (issue 18.3): pure, no VS Code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunRecord } from '../../../src/core/runs/store/runRecord';
import { RunStore } from '../../../src/core/runs/store/runStore';
import { formatDuration } from '../../../src/core/runs/cost/duration';
import {
  endLogLine,
  runDescription,
  runDurationMs,
  runTooltipLines,
  startLabel,
  statusBarState,
  FINISHED_LINGER_MS,
} from '../../../src/core/runs/view/runSummary';
import { RUNS_CONTEXT, runsContextState } from '../../../src/features/runs/runsContextState';

// Local times, so the expected "HH:MM" does not depend on the machine's time zone.
const START = new Date(2026, 10, 25, 16, 41, 5).getTime();
const iso = (t: number): string => new Date(t).toISOString();

function rec(patch: Partial<RunRecord>): RunRecord {
  return {
    id: 'rft-20261125-164105-ab12',
    name: 'demo',
    specPath: '',
    specHash: '',
    createdAt: iso(START),
    updatedAt: iso(START),
    status: 'running',
    provider: 'ssh',
    host: 'demo-host',
    ...patch,
  };
}

test('formatDuration: seconds, minutes with seconds, hours with minutes', () => {
  assert.deepEqual([0, 45_400, 192_000, 3_600_000 + 4 * 60_000 + 59_000].map(formatDuration), ['0s', '45s', '3m 12s', '1h 04m']);
});

test('startLabel: time of day (to the second) today, the date too on another day; nothing for a record without a time', () => {
  assert.equal(startLabel(rec({}), START + 3_600_000), '16:41:05');
  assert.equal(startLabel(rec({}), START + 2 * 86_400_000), 'Nov 25 16:41');
  assert.equal(startLabel(rec({ createdAt: '' }), START), undefined);
});

test('runDurationMs: to now while live, to finishedAt once ended (not to a later update), to updatedAt for old records', () => {
  assert.equal(runDurationMs(rec({}), START + 90_000), 90_000);
  assert.equal(runDurationMs(rec({ status: 'completed', finishedAt: iso(START + 72_000), updatedAt: iso(START + 300_000) }), START + 999_000), 72_000);
  assert.equal(runDurationMs(rec({ status: 'failed', updatedAt: iso(START + 10_000) }), START + 999_000), 10_000);
});

test('three runs of one spec differ in their rows: start time, step, loss, duration and GPU', () => {
  const now = START + 3_600_000;
  const rows = [
    rec({ status: 'completed', lastStep: 30, lastLoss: 0.08333, gpu: 'A100-40GB', finishedAt: iso(START + 72_000) }),
    rec({ createdAt: iso(START + 600_000), status: 'failed', lastStep: 12, lastLoss: 1.5, gpu: 'T4', finishedAt: iso(START + 630_000) }),
    rec({ createdAt: iso(START + 1_200_000), status: 'running', lastStep: 7, lastLoss: 0.5, gpu: 'A100-80GB', costUsd: 0.25 }),
  ].map((r) => runDescription(r, now));
  assert.deepEqual(rows, [
    '16:41:05 · completed · step 30 · loss 0.0833 · 1m 12s · A100-40GB',
    '16:51:05 · failed · step 12 · loss 1.5000 · 30s · T4',
    '17:01:05 · running · step 7 · loss 0.5000 · 40m 00s · A100-80GB · $0.25',
  ]);
  assert.equal(new Set(rows).size, 3);
});

test('the tooltip adds the id, where it ran, the start, the duration and the adapter path', () => {
  const lines = runTooltipLines(
    rec({ status: 'completed', lastStep: 30, lastLoss: 0.1, gpu: 'A100-40GB', finishedAt: iso(START + 72_000), artifactsDir: '/w/outputs/rft-1/adapter' }),
    START + 100_000,
  );
  assert.equal(lines[0], 'demo (rft-20261125-164105-ab12)');
  assert.equal(lines[1], 'ssh · demo-host · A100-40GB');
  assert.match(lines[2]!, /^Started /);
  assert.ok(lines.includes('Duration 1m 12s'), lines.join('\n'));
  assert.ok(lines.includes('completed · step 30 · loss 0.1000'), lines.join('\n'));
  assert.ok(lines.includes('Adapter /w/outputs/rft-1/adapter'), lines.join('\n'));
  const live = runTooltipLines(rec({}), START + 5_000);
  assert.ok(live.includes('Duration 5s so far'), live.join('\n'));
  assert.ok(!live.some((l) => l.startsWith('Adapter')));
  assert.ok(!live.some((l) => l.startsWith('Git')), 'no git line for a run without history');
});

test('the tooltip says where the synced folder stood in git at the start', () => {
  const sha = '3f2a9c1e7b'.padEnd(40, '0');
  assert.ok(
    runTooltipLines(rec({ git: { repo: true, commit: sha, branch: 'main', dirty: true } }), START).includes('Git 3f2a9c1e7b on main (uncommitted changes)'),
  );
  assert.ok(runTooltipLines(rec({ git: { repo: true, commit: sha, dirty: false } }), START).includes('Git 3f2a9c1e7b (clean)'));
  assert.ok(runTooltipLines(rec({ git: { repo: false } }), START).includes('Git: not a repository'));
});

test('a relaunched spot run shows its attempt in the row, and each attempt with its instance and cost in the tooltip', () => {
  const zero = { output_log: 0, events: 0, gpu: 0 };
  const attempts = [
    {
      n: 1,
      instanceId: 'i-1',
      instanceType: 'g5.xlarge',
      region: 'us-east-1',
      zone: 'us-east-1a',
      spot: true,
      startedAt: START,
      endedAt: START + 600_000,
      reason: 'reclaimed' as const,
      costUsd: 0.12,
      mirrorBase: zero,
    },
    {
      n: 2,
      instanceId: 'i-2',
      instanceType: 'g5.xlarge',
      region: 'us-east-1',
      zone: 'us-east-1b',
      spot: true,
      startedAt: START + 660_000,
      resumedFromStep: 40,
      mirrorBase: zero,
    },
  ];
  const r = rec({ provider: 'ec2', instanceId: 'i-2', maxAttempts: 3, attempts, costUsd: 0.2 });
  assert.match(runDescription(r, START + 700_000), /running · attempt 2\/3 · /);
  const lines = runTooltipLines(r, START + 700_000);
  assert.ok(lines.includes('attempt 1/3: i-1 (g5.xlarge, us-east-1a, spot) 16:41–16:51, reclaimed, $0.12'), lines.join('\n'));
  assert.ok(lines.includes('attempt 2/3: i-2 (g5.xlarge, us-east-1b, spot) 16:52–now, resumed at step 40'), lines.join('\n'));
  // A first attempt alone says nothing in the row.
  assert.doesNotMatch(runDescription(rec({ provider: 'ec2', maxAttempts: 3, attempts: attempts.slice(0, 1) }), START), /attempt/);
});

test('the status bar keeps an ended run as finished for a while, then lets it go', () => {
  const done = rec({ status: 'completed', lastStep: 30, lastLoss: 0.08333, finishedAt: iso(START + 72_000), artifactsDir: '/w/a' });
  const soon = statusBarState(done, undefined, START + 80_000);
  assert.equal(soon?.text, '$(pass) demo finished · step 30 · loss 0.083 · 1m 12s');
  assert.match(soon!.tooltip, /Adapter in \/w\/a/);
  assert.equal(statusBarState(done, undefined, START + 72_000 + FINISHED_LINGER_MS - 1)?.text, soon?.text);
  assert.equal(statusBarState(done, undefined, START + 72_000 + FINISHED_LINGER_MS + 1), undefined);
  assert.match(statusBarState(rec({ status: 'failed', finishedAt: iso(START + 1000) }), undefined, START + 2000)!.text, /^\$\(error\) demo failed/);
  assert.match(statusBarState(rec({ lastStep: 3 }), 50, START)!.text, /^\$\(pulse\) demo · step 3 · GPU 50%/);
});

test('the store stamps finishedAt once, when a run reaches its end', () => {
  const s = new RunStore(join(mkdtempSync(join(tmpdir(), 'rft-summary-')), 'runs.json'));
  s.add(rec({ status: 'planned' }));
  for (const st of ['connecting', 'syncing', 'bootstrapping', 'running'] as const)
    assert.equal(s.update('rft-20261125-164105-ab12', { status: st }).finishedAt, undefined, st);
  const ended = s.update('rft-20261125-164105-ab12', { status: 'completed' });
  assert.ok(ended.finishedAt && Date.parse(ended.finishedAt) >= Date.now() - 5_000);
  const later = s.update('rft-20261125-164105-ab12', { artifactsDir: '/w/a' });
  assert.equal(later.finishedAt, ended.finishedAt, 'a later update (download, teardown) keeps the end time');
});

test('context keys: no run, a live run, only ended runs', () => {
  const s = new RunStore(join(mkdtempSync(join(tmpdir(), 'rft-ctx-')), 'runs.json'));
  assert.deepEqual(runsContextState(s), { hasRuns: false, hasLiveRuns: false });
  s.add(rec({ status: 'planned' }));
  assert.deepEqual(runsContextState(s), { hasRuns: true, hasLiveRuns: true });
  s.update('rft-20261125-164105-ab12', { status: 'cancelled' });
  assert.deepEqual(runsContextState(s), { hasRuns: true, hasLiveRuns: false });
});

test('manifest: run commands are hidden from the palette by the context keys the extension sets; the activity bar has its SVG icon', () => {
  const root = join(__dirname, '../../..');
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    contributes: {
      menus: { commandPalette: Array<{ command: string; when?: string }> };
      viewsContainers: { activitybar: Array<{ id: string; title: string; icon: string }> };
    };
  };
  const when = new Map(pkg.contributes.menus.commandPalette.map((m) => [m.command, m.when]));
  assert.equal(when.get('remoteFinetune.stopRun'), RUNS_CONTEXT.hasLiveRuns);
  for (const c of ['remoteFinetune.downloadArtifacts', 'remoteFinetune.terminateRunInstance', 'remoteFinetune.runAgain', 'remoteFinetune.openRunPanels'])
    assert.equal(when.get(c), RUNS_CONTEXT.hasRuns, c);
  // Commands that make a run, or need none, stay in the palette.
  for (const c of ['remoteFinetune.startTraining', 'remoteFinetune.startTrainingA100', 'remoteFinetune.findRunsOnHost'])
    assert.equal(when.get(c), undefined, c);
  const bar = pkg.contributes.viewsContainers.activitybar.find((v) => v.id === 'remoteFinetune');
  assert.equal(bar?.title, 'Fine-Tune');
  assert.ok(bar && /\.svg$/.test(bar.icon) && existsSync(join(root, bar.icon)), bar?.icon);
  assert.match(readFileSync(join(root, bar.icon), 'utf8'), /^<svg [^>]*viewBox="0 0 24 24"[^>]*stroke="currentColor"/);
});

test('the extension log line of an ended run: outcome, step, loss, length and the adapter (or its absence)', () => {
  const done = rec({ status: 'completed', lastStep: 30, lastLoss: 0.08333, finishedAt: iso(START + 72_000), artifactsDir: '/w/outputs/r/adapter' });
  assert.equal(endLogLine({ record: done }), '[rft-20261125-164105-ab12] demo completed (step 30, loss 0.0833, 1m 12s); adapter at /w/outputs/r/adapter');
  assert.match(endLogLine({ record: rec({ status: 'completed', finishedAt: iso(START) }) }), /completed \(0s\); no adapter downloaded$/);
  assert.equal(
    endLogLine({ record: rec({ status: 'failed', lastStep: 12, finishedAt: iso(START + 30_000) }), failure: { message: 'CUDA out of memory' } }),
    '[rft-20261125-164105-ab12] demo failed: CUDA out of memory (step 12, 30s)',
  );
});

test('a run waiting in its host queue says so with its place; the GPUs it was given are in the tooltip', () => {
  const now = START + 5_000;
  assert.match(runDescription(rec({ queuePosition: 1 }), now), / · queued \(next\) · /);
  assert.match(runDescription(rec({ queuePosition: 3 }), now), / · queued \(#3\) · /);
  assert.match(runDescription(rec({ gpuIndices: [1] }), now), / · running · /);
  // A stale position on an ended record is not shown.
  assert.match(runDescription(rec({ status: 'stopped', queuePosition: 2, finishedAt: iso(now) }), now), / · stopped · /);
  assert.ok(runTooltipLines(rec({ gpuIndices: [0, 1] }), now).includes('GPUs 0, 1 of the host (CUDA_VISIBLE_DEVICES)'));
});

test('a run staging its data from a bucket says how far it got', () => {
  const now = START + 5_000;
  assert.match(
    runDescription(rec({ staging: { uri: 's3://b/corpus', bytesDone: 1_200_000_000, bytesTotal: 3_400_000_000 } }), now),
    / · staging data 1\.2 GB of 3\.4 GB · /,
  );
  assert.match(runDescription(rec({ staging: { uri: 's3://b/corpus', bytesDone: 5_000_000 } }), now), / · staging data 5 MB · /);
  assert.match(runDescription(rec({}), now), / · running · /);
});
