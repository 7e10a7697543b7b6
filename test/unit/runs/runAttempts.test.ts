// The relaunch rules of a spot run (runAttempts.ts): only a reclaim is relaunched (never a stop, a crash or a
// finished run), within the spec's max_attempts; the launches tried go same zone, any zone, then on-demand
// after on_demand_after reclaims or capacity refusals; the attempts' costs add up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decideRelaunch, describeAttempt, endedAttemptsCost, launchChoices, relaunchPolicyOf } from '../../../src/core/runs/lifecycle/runAttempts';
import type { RunAttempt } from '../../../src/core/runs/store/runRecord';
import { runSpecSchema } from '../../../src/core/config/schemas/runSpec';
import { typedSpec } from '../../support/typedSpec';
import type { RunSpec } from '../../../src/core/config/runSpecDefaults';

const zero = { output_log: 0, events: 0, gpu: 0 };
function attempt(n: number, over: Partial<RunAttempt> = {}): RunAttempt {
  return { n, instanceId: `i-${n}`, instanceType: 'g5.xlarge', region: 'us-east-1', zone: 'us-east-1a', spot: true, startedAt: 0, mirrorBase: zero, ...over };
}
const spot = (extra: Record<string, unknown> = {}): RunSpec => typedSpec({ target: { provider: 'ec2', gpu: 'A10G', spot: true, ...extra } });

test('policy: only spot instances on a cloud have one; max_attempts defaults to 3; a zone in the spec pins it', () => {
  assert.equal(relaunchPolicyOf(typedSpec({ target: { provider: 'ec2', gpu: 'A10G' } })), undefined, 'on-demand: nothing reclaims it');
  assert.equal(relaunchPolicyOf(typedSpec({ target: { provider: 'ssh', host: 'h', spot: true } })), undefined);
  assert.equal(relaunchPolicyOf(typedSpec()), undefined);
  assert.deepEqual(relaunchPolicyOf(spot()), { maxAttempts: 3, zonePinned: false });
  assert.deepEqual(relaunchPolicyOf(spot({ max_attempts: 5, on_demand_after: 1, zone: 'us-east-1b' })), { maxAttempts: 5, onDemandAfter: 1, zonePinned: true });
});

test('the spec schema knows target.max_attempts and target.on_demand_after, within their ranges', () => {
  const base = { version: 1, name: 'n', command: 'python t.py', target: { provider: 'ec2', gpu: 'A10G', spot: true } };
  assert.ok(runSpecSchema.safeParse({ ...base, target: { ...base.target, max_attempts: 3, on_demand_after: 2 } }).success);
  assert.ok(!runSpecSchema.safeParse({ ...base, target: { ...base.target, max_attempts: 0 } }).success);
  assert.ok(!runSpecSchema.safeParse({ ...base, target: { ...base.target, max_attempts: 11 } }).success);
  assert.ok(!runSpecSchema.safeParse({ ...base, target: { ...base.target, on_demand_after: -1 } }).success);
});

test('reclaim vs stop vs crash: only a reclaim under a spot spec is relaunched, and only while attempts remain', () => {
  const policy = relaunchPolicyOf(spot({ max_attempts: 3 }))!;
  const one = [attempt(1, { reason: 'reclaimed', endedAt: 1 })];
  assert.deepEqual(decideRelaunch('reclaimed', one, policy, false), { relaunch: true, attempt: 2 });
  assert.match((decideRelaunch('reclaimed', one, policy, true) as { why: string }).why, /you stopped/);
  assert.match((decideRelaunch('failed', one, policy, false) as { why: string }).why, /failed on its instance; only a reclaim/);
  assert.match((decideRelaunch('stopped', one, policy, false) as { why: string }).why, /was stopped/);
  assert.match((decideRelaunch('completed', one, policy, false) as { why: string }).why, /was completed/);
  assert.match((decideRelaunch('reclaimed', one, undefined, false) as { why: string }).why, /target\.spot/);
  const three = [attempt(1, { reason: 'reclaimed' }), attempt(2, { reason: 'reclaimed' }), attempt(3, { reason: 'reclaimed' })];
  assert.match((decideRelaunch('reclaimed', three, policy, false) as { why: string }).why, /all 3 attempts .* are used/);
  assert.deepEqual(decideRelaunch('reclaimed', three.slice(0, 2), policy, false), { relaunch: true, attempt: 3 });
  const single = relaunchPolicyOf(spot({ max_attempts: 1 }))!;
  assert.equal(decideRelaunch('reclaimed', one, single, false).relaunch, false, 'max_attempts 1 never relaunches');
});

test('launch order: same zone, any zone, then on-demand after on_demand_after reclaims plus refusals', () => {
  const reclaimed = [attempt(1, { reason: 'reclaimed' })];
  assert.deepEqual(launchChoices(relaunchPolicyOf(spot())!, reclaimed), [{ spot: true, zone: 'us-east-1a' }, { spot: true }], 'no on-demand unless asked for');
  assert.deepEqual(launchChoices(relaunchPolicyOf(spot({ zone: 'us-east-1a' }))!, reclaimed), [{ spot: true, zone: 'us-east-1a' }], 'a pinned zone stays');
  // on_demand_after 2, one reclaim so far: one more spot try (a refusal there makes two), then on-demand.
  assert.deepEqual(launchChoices(relaunchPolicyOf(spot({ on_demand_after: 2 }))!, reclaimed), [
    { spot: true, zone: 'us-east-1a' },
    { spot: false, zone: 'us-east-1a' },
    { spot: false },
  ]);
  // on_demand_after 1 is reached by the reclaim itself: on-demand at once; 0 likewise.
  assert.deepEqual(launchChoices(relaunchPolicyOf(spot({ on_demand_after: 1 }))!, reclaimed), [{ spot: false, zone: 'us-east-1a' }, { spot: false }]);
  assert.deepEqual(launchChoices(relaunchPolicyOf(spot({ on_demand_after: 0 }))!, reclaimed)[0], { spot: false, zone: 'us-east-1a' });
  // An attempt already on-demand (reclaimed is impossible there, but a record may say so) stays on-demand.
  assert.deepEqual(launchChoices(relaunchPolicyOf(spot())!, [attempt(1, { spot: false })]), [{ spot: false, zone: 'us-east-1a' }, { spot: false }]);
  assert.deepEqual(launchChoices(relaunchPolicyOf(spot())!, [attempt(1, { zone: undefined })]), [{ spot: true }]);
});

test('costs: ended attempts add up, the current one is counted apart; the tooltip line says where, why and how much', () => {
  const list = [attempt(1, { endedAt: 10, costUsd: 0.25, reason: 'reclaimed' }), attempt(2, { endedAt: 20, costUsd: 0.5 }), attempt(3, { costUsd: 9 })];
  assert.equal(endedAttemptsCost(list), 0.75);
  assert.equal(endedAttemptsCost(undefined), 0);
  const line = describeAttempt(
    { ...list[0]!, startedAt: new Date(2026, 0, 1, 9, 5).getTime(), endedAt: new Date(2026, 0, 1, 9, 40).getTime(), resumedFromStep: 4 },
    3,
  );
  assert.equal(line, 'attempt 1/3: i-1 (g5.xlarge, us-east-1a, spot) 09:05–09:40, reclaimed, resumed at step 4, $0.25');
});
