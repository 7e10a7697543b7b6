import { test } from 'node:test';
import assert from 'node:assert/strict';
import { billedSeconds, BILLING, costFor, estimateRunCost, finalCost, formatUsd, runningCost, trainingHoursFromSteps } from '../../../src/core/providers/cost';

test('cost: EC2/GCP bill per second with a 60 s minimum, Lambda per started minute', () => {
  assert.equal(billedSeconds(10, BILLING.ec2), 60);
  assert.equal(billedSeconds(61.2, BILLING.ec2), 62);
  assert.equal(billedSeconds(61, BILLING.lambda), 120);
  assert.equal(billedSeconds(0, BILLING.lambda), 0);
  assert.equal(billedSeconds(-5, BILLING.gcp), 0);
  assert.equal(billedSeconds(Number.NaN, BILLING.gcp), 0);
});

test('cost: an hour of g4dn.xlarge is its hourly price; cents are rounded half up', () => {
  assert.equal(costFor(0.526, 3600, 'ec2'), 0.53);
  assert.equal(costFor(1.29, 90, 'lambda'), 0.04); // 2 minutes billed: 1.29 × 120 / 3600 = 0.043
  assert.equal(costFor(32.7726, 1800, 'ec2'), 16.39);
});

test('cost: the estimate before launch adds setup time to training time and names its basis', () => {
  const e = estimateRunCost({ provider: 'lambda', pricePerHour: 1.29, spot: false }, 3);
  assert.equal(e.overheadHours, 0.1);
  assert.equal(e.totalUsd, 4); // 186 minutes at $1.29/h = $3.999
  assert.match(e.basis, /\$1\.29\/h × 3\.10 h \(3\.00 h training \+ 0\.10 h setup\)/);
  const spot = estimateRunCost({ provider: 'ec2', pricePerHour: 0.2, spot: true }, 1, 0);
  assert.equal(spot.totalUsd, 0.2);
  assert.match(spot.basis, /spot price can change/);
  assert.equal(estimateRunCost({ provider: 'ec2', pricePerHour: 5, spot: false }, -3, -1).totalUsd, 0);
});

test('cost: training hours from steps; running and final cost from timestamps', () => {
  assert.equal(trainingHoursFromSteps(1200, 3), 1);
  assert.equal(trainingHoursFromSteps(0, 3), 0);
  assert.equal(trainingHoursFromSteps(10, Number.NaN), 0);
  const t0 = Date.UTC(2026, 10, 21, 12, 0, 0);
  assert.equal(runningCost(2.49, t0, t0 + 30 * 60_000, 'lambda'), 1.25);
  const f = finalCost('gcp', 'a2-highgpu-1g', 3.67, t0, t0 + 2 * 3600_000 + 500);
  assert.deepEqual(f, {
    provider: 'gcp',
    instanceType: 'a2-highgpu-1g',
    pricePerHour: 3.67,
    launchedAt: '2026-11-21T12:00:00.000Z',
    endedAt: '2026-11-21T14:00:00.500Z',
    billedSeconds: 7201,
    usd: 7.34,
  });
});

test('cost: USD formatting keeps three decimals under $10 (sub-cent hourly prices matter), two above', () => {
  assert.equal(formatUsd(0.526), '$0.526');
  assert.equal(formatUsd(1.1), '$1.10');
  assert.equal(formatUsd(55.04), '$55.04');
  assert.equal(formatUsd(0.8048), '$0.805');
});
