// The metrics panel's smoothing (pure code, run here in Node): TensorBoard's debiased EMA.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { clampSmoothing, smooth } from '../../../webview/src/metrics/smoothing';

test('weight 0 is the raw series; a constant series stays constant at any weight (debiased)', () => {
  assert.deepEqual(smooth([3, 1, 2], 0), [3, 1, 2]);
  for (const v of smooth([5, 5, 5, 5], 0.95)) assert.ok(Math.abs((v ?? 0) - 5) < 1e-12);
});

test('gaps pass through without moving the average; weights are clamped to 0–0.99', () => {
  const s = smooth([1, null, 3], 0.5);
  assert.equal(s[1], null);
  // After 1 and 3: last = 0.5·(0.5·1) + 0.5·3 = 1.75, debiased by 1 − 0.5² → 7/3.
  assert.ok(Math.abs((s[2] ?? 0) - 7 / 3) < 1e-12);
  assert.equal(clampSmoothing(1), 0.99);
  assert.equal(clampSmoothing(-1), 0);
  assert.equal(clampSmoothing(Number.NaN), 0);
});
