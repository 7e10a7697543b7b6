/// <reference lib="dom" />
// Issue 39.3 in the metrics panel's real bundle (headless Chromium): the host's progress message shows the
// followed run's "step N of M, ≈ T left" and cost so far above the charts, the finished run's estimate against
// actual, nothing when there is nothing to say, and host text stays text.
import { after, before, test } from 'node:test';
import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { ROOT, SHOTS, XSS_CORPUS, injectedElements, launchBrowser, missingPrerequisite, openPanel } from './harness';
import { eventsToPoints } from '../../src/features/panels/metricPoints';
import { nextProgress, runProgressLines } from '../../src/core/runs/view/runProgress';
import type { RunRecord } from '../../src/core/runs/store/runRecord';
import type { RunEvent } from '../../src/core/telemetry/events';

const skip = missingPrerequisite();
if (skip) console.log(`# skipping the metrics progress tests: ${skip}`);
let browser: Browser;
before(async () => {
  if (!skip) browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

const progressText = (p: { page: Page }): Promise<string | null> =>
  p.page.evaluate(() => {
    const e = document.getElementById('runProgress');
    return e && !e.hidden ? e.innerText : null;
  });

test('the followed run: step of total, time left and the cost so far from the host, as text; ended: estimated vs actual', { skip }, async () => {
  const events = readFileSync(join(ROOT, 'test/fixtures/events/qlora_run.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as RunEvent);
  // What runFollow.ts folds into the record from the fixture's metrics events (step 10 and 20 of 250).
  let progress;
  let lastStep: number | undefined;
  for (const e of events)
    if (e.type === 'metrics') {
      progress = nextProgress(progress, lastStep, { step: e.step, tsMs: e.ts * 1000, maxSteps: e.max_steps }, e.ts * 1000);
      lastStep = e.step;
    }
  const now = events.find((e) => e.type === 'metrics' && e.step === 20)!.ts * 1000;
  const record = {
    id: 'rft-1',
    name: 'qlora_run',
    status: 'running',
    provider: 'gcp',
    lastStep,
    progress,
    costUsd: 0.42,
    pricePerHour: 3.67,
  } as unknown as RunRecord;
  const lines = runProgressLines(record, now);
  // 10 steps in 10.4 s: 230 steps to go ≈ 3m 59s; $3.67/h for that long on top of $0.42.
  assert.deepEqual(lines, ['step 20 of 250, ≈ 3m 59s left · $0.42 so far, ≈ $0.66 in all']);

  const p = await openPanel(browser, 'metrics');
  await p.post({ type: 'run', info: { key: 'primary', source: 'events', name: 'qlora_run', state: 'running' }, reset: true, points: eventsToPoints(events) });
  await p.page.waitForSelector('figure[data-metric="loss"]');
  assert.equal(await progressText(p), null, 'no progress line before the host says one');
  await p.post({ type: 'progress', lines });
  await p.page.waitForFunction(() => !document.getElementById('runProgress')?.hidden);
  assert.equal(await progressText(p), lines[0]);
  await p.page.screenshot({ path: join(SHOTS, 'metrics-progress.png') });

  const ended = runProgressLines(
    {
      ...record,
      status: 'completed',
      estimated: { model: 'm', gpu: 'A100-40GB', gpuCount: 1, method: 'qlora', seqLen: 2048, batch: 16, hours: 0.5, costUsd: 2 },
      measured: { runtimeS: 2400, firstStepS: 60 },
      costUsd: 2.5,
    } as RunRecord,
    now,
  );
  assert.deepEqual(ended, [
    'Training time: estimated 30m 00s, actual 39m 00s (+30%)',
    'Cost: estimated $2.00, actual $2.50 (+25%)',
    'Measured: first step after 1m 00s',
  ]);
  await p.post({ type: 'progress', lines: ended });
  await p.page.waitForFunction(() => /Training time: estimated/.test(document.getElementById('runProgress')?.innerText ?? ''));
  assert.equal(await progressText(p), ended.join('\n'));

  await p.post({ type: 'progress', lines: [] });
  await p.page.waitForFunction(() => document.getElementById('runProgress')?.hidden === true);

  await p.post({ type: 'progress', lines: [...XSS_CORPUS] });
  await p.page.waitForFunction(() => !document.getElementById('runProgress')?.hidden);
  assert.deepEqual(await injectedElements(p.page), []);
  assert.deepEqual(p.pageErrors, []);
  assert.deepEqual(p.cspViolations, []);
  await p.page.close();
});
