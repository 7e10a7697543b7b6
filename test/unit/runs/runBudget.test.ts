// The spec.json a run starts with carries the price per hour and the billing start its host needs to enforce
// `budget` alone (issue 32.6); python-runner/remote_finetune/budget.py reads them. The end-to-end check, with
// VS Code closed, is test/integration/runs/budgetStop.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { budgetLine, specWithBudgetBilling } from '../../../src/core/runs/cost/runBudget';
import { typedSpec } from '../../support/typedSpec';

const LAUNCH_MS = 1_800_000_000_000;

test('a budget gets the offer price and the launch time (seconds, to the millisecond: whole seconds moved the stop by up to half a second); a spec without one is untouched', () => {
  const spec = { version: 1, budget: { max_usd: 40 } };
  assert.deepEqual(specWithBudgetBilling(spec, { pricePerHour: 2.49, launchedAtMs: LAUNCH_MS + 400 }), {
    version: 1,
    budget: { max_usd: 40, price_per_hour: 2.49, billed_since: 1_800_000_000.4 },
  });
  assert.deepEqual(spec, { version: 1, budget: { max_usd: 40 } }, 'the request spec itself is not changed');
  const none = { version: 1 };
  assert.equal(specWithBudgetBilling(none, { pricePerHour: 2.49, launchedAtMs: LAUNCH_MS }), none);
});

test("an own SSH host keeps the spec's price; the offer's price wins on a cloud", () => {
  assert.deepEqual(specWithBudgetBilling({ budget: { max_usd: 5, price_per_hour: 1.2 } }, {}), { budget: { max_usd: 5, price_per_hour: 1.2 } });
  assert.equal((specWithBudgetBilling({ budget: { price_per_hour: 1.2 } }, { pricePerHour: 3 }).budget as { price_per_hour: number }).price_per_hour, 3);
});

test("a spot replacement's budget counts what the reclaimed instances cost: the start moves back by that many hours", () => {
  const base = { instanceType: 'g5.xlarge', region: 'us-east-1', spot: true, mirrorBase: { output_log: 0, events: 0, gpu: 0 } };
  const attempts = [
    { ...base, n: 1, startedAt: LAUNCH_MS - 7_200_000, endedAt: LAUNCH_MS - 3_600_000, costUsd: 3, reason: 'reclaimed' as const },
    { ...base, n: 2, startedAt: LAUNCH_MS },
  ];
  const out = specWithBudgetBilling({ budget: { max_usd: 20 } }, { pricePerHour: 6, launchedAtMs: LAUNCH_MS, attempts });
  // $3 already spent at $6/h is half an hour.
  assert.equal((out.budget as { billed_since: number }).billed_since, 1_800_000_000 - 1800);
});

test('the Start confirmation names the budget and says when the estimate is already past it', () => {
  assert.equal(budgetLine(typedSpec(), {}), undefined);
  assert.equal(
    budgetLine(typedSpec({ budget: { max_usd: 40, max_hours: 12 } }), { costUsd: 31.5, hours: 10, pricePerHour: 2.49 }),
    'Budget: $40.00 or 12 h, enforced on the host with VS Code closed (a warning at 80%; at 100% a checkpoint is saved and training stops).',
  );
  assert.match(
    budgetLine(typedSpec({ budget: { max_usd: 40 } }), { costUsd: 52.1, pricePerHour: 2.49 })!,
    /The estimate \(about \$52\.10\) is past it: this run would stop early\.$/,
  );
  assert.match(budgetLine(typedSpec({ budget: { max_usd: 5 } }), {})!, /^Budget: \$5\.00 \(not counted: no price for this host; set budget\.price_per_hour\)/);
});
