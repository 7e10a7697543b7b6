// Issue 39.3: "step N of M, ≈ T left" and the cost so far, from the runner's metrics events (step, max_steps) and
// the measured step rate: no max_steps, step 0, a stall, and a resumed run whose steps start mid-way.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { costSoFarText, liveProgressLine, nextProgress, progressFacts, progressText, stepWords } from '../../../src/core/runs/view/runProgress';
import type { RunProgress } from '../../../src/core/runs/view/runProgress';
import { runDescription, runTooltipLines, statusBarState } from '../../../src/core/runs/view/runSummary';
import { runRecordSchema } from '../../../src/core/runs/store/runRecord';
import type { RunRecord } from '../../../src/core/runs/store/runRecord';

const T0 = Date.parse('2026-11-28T10:00:00Z');
const MIN = 60_000;

/** Logged steps (step, host minute) folded as runFollow.ts does; seen here the moment they were written. */
function follow(steps: readonly (readonly [number, number])[], maxSteps?: number, start?: { progress?: RunProgress; lastStep?: number }) {
  let progress = start?.progress;
  let lastStep = start?.lastStep;
  for (const [step, minute] of steps) {
    progress = nextProgress(progress, lastStep, { step, tsMs: T0 + minute * MIN, maxSteps }, T0 + minute * MIN);
    lastStep = step;
  }
  return { progress, lastStep };
}

test('step of total and time left at the measured rate', () => {
  // 10 steps a minute from step 10 to step 110: 390 steps to go ≈ 39 minutes.
  const r = follow(
    [
      [10, 1],
      [60, 6],
      [110, 11],
    ],
    500,
  );
  const f = progressFacts(r, T0 + 11 * MIN);
  assert.equal(f?.maxSteps, 500);
  assert.equal(Math.round(f!.leftMs! / MIN), 39);
  assert.equal(progressText(f!), 'step 110 of 500, ≈ 39m 00s left');
  // Between logged steps the time left counts down with the clock.
  assert.equal(progressText(progressFacts(r, T0 + 13 * MIN)!), 'step 110 of 500, ≈ 37m 00s left');
});

test('without max_steps (an own script) only the step is said, never a guessed total', () => {
  const r = follow([
    [10, 1],
    [20, 2],
  ]);
  assert.equal(progressText(progressFacts(r, T0 + 2 * MIN)!), 'step 20');
  assert.equal(progressFacts({ lastStep: 7 }, T0)?.step, 7, 'a record from before progress existed still shows its step');
  assert.equal(progressText(progressFacts({ lastStep: 7 }, T0)!), 'step 7');
  assert.equal(progressFacts({}, T0), undefined);
});

test('step 0 and a single logged step: the total, and no time left until a rate exists', () => {
  const r = follow([[0, 0]], 300);
  assert.equal(progressText(progressFacts(r, T0)!), 'step 0 of 300');
  const one = follow([[5, 1]], 300);
  assert.equal(progressText(progressFacts(one, T0 + 90_000)!), 'step 5 of 300');
});

test('a stalled run says how long no step came instead of a time left', () => {
  const r = follow(
    [
      [10, 1],
      [20, 2],
      [30, 3],
    ],
    500,
  );
  // One logged step a minute; 4 minutes quiet is still under the 5-minute floor.
  assert.match(progressText(progressFacts(r, T0 + 7 * MIN)!), /≈ .* left$/);
  assert.equal(progressText(progressFacts(r, T0 + 15 * MIN)!), 'step 30 of 500, no step for 12m 00s');
  assert.equal(liveProgressLine({ ...r, costUsd: 2, pricePerHour: 3 }, T0 + 15 * MIN), 'step 30 of 500, no step for 12m 00s · $2.00 so far');
});

test('a resumed run: steps start mid-way and the time it lay interrupted is not part of its rate', () => {
  // Before the interruption: 10 steps a minute up to step 200 at minute 20.
  const before = follow(
    [
      [100, 10],
      [200, 20],
    ],
    1000,
  );
  // Resumed 3 hours later from checkpoint-150: the steps go back, a new stretch starts there.
  const after = follow(
    [
      [160, 200],
      [260, 210],
    ],
    1000,
    before,
  );
  assert.equal(after.progress?.fromStep, 160);
  assert.equal(Math.round(progressFacts(after, T0 + 210 * MIN)!.leftMs! / MIN), 74);
  // Resumed on the same step count (the host's `resumed` event): restart starts the stretch anew too.
  const p = nextProgress(before.progress, 200, { step: 210, tsMs: T0 + 300 * MIN }, T0 + 300 * MIN, true);
  assert.deepEqual([p.fromStep, p.fromAt, p.maxSteps], [210, T0 + 300 * MIN, 1000]);
  // A resumed run whose first event is already mid-way has no rate until its second.
  const fresh = follow([[700, 0]], 1000);
  assert.equal(progressText(progressFacts(fresh, T0)!), 'step 700 of 1000');
});

test('at the last step it is finishing, not "0s left"', () => {
  const r = follow(
    [
      [490, 1],
      [500, 2],
    ],
    500,
  );
  assert.equal(progressText(progressFacts(r, T0 + 2 * MIN)!), 'step 500 of 500, finishing');
});

test('cost so far, and at the same price what the run will cost in all', () => {
  assert.equal(costSoFarText(undefined, 2, 1000), undefined);
  assert.equal(costSoFarText(1.2, undefined, 3_600_000), '$1.20 so far');
  assert.equal(costSoFarText(1.2, 2, 3_600_000), '$1.20 so far, ≈ $3.20 in all');
});

const rec = (over: Partial<RunRecord>): RunRecord =>
  ({
    id: 'rft-1',
    name: 'demo',
    specPath: '/ws/finetune.yaml',
    specHash: 'h',
    createdAt: new Date(T0).toISOString(),
    updatedAt: new Date(T0).toISOString(),
    status: 'running',
    provider: 'gcp',
    host: '10.0.0.5',
    ...over,
  }) as RunRecord;

test('the Runs row, its tooltip and the status bar say step of total, time left and the cost so far', () => {
  const { progress, lastStep } = follow(
    [
      [10, 1],
      [60, 6],
      [110, 11],
    ],
    500,
  );
  const r = rec({ progress, lastStep, costUsd: 0.6, pricePerHour: 3.67 });
  assert.ok(runRecordSchema.safeParse(r).success, 'the record keeps progress');
  const now = T0 + 11 * MIN;
  assert.match(runDescription(r, now), / · step 110 of 500, ≈ 39m 00s left · /);
  assert.ok(runTooltipLines(r, now).includes('Progress: step 110 of 500, ≈ 39m 00s left · $0.60 so far, ≈ $2.99 in all'), runTooltipLines(r, now).join('\n'));
  const bar = statusBarState(r, 80, now)!;
  assert.match(bar.text, /step 110 of 500, ≈ 39m 00s left · GPU 80% · \$0\.60$/);
  assert.match(bar.tooltip, /\$0\.60 so far, ≈ \$2\.99 in all/);
  // An own host: no money, the time left all the same.
  const own = rec({ provider: 'ssh', progress, lastStep });
  assert.ok(runTooltipLines(own, now).includes('Progress: step 110 of 500, ≈ 39m 00s left'));
  // Finished: the last step, no promise of time left.
  assert.equal(stepWords({ status: 'completed', lastStep: 500, progress }, now), 'step 500');
  assert.ok(
    !runTooltipLines(rec({ status: 'completed', progress, lastStep: 500, finishedAt: new Date(now).toISOString() }), now).some((l) =>
      l.startsWith('Progress:'),
    ),
  );
});
