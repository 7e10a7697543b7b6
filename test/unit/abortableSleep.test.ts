import { test } from 'node:test';
import assert from 'node:assert/strict';
import { abortableSleep } from '../../src/core/abortableSleep';

test("abortableSleep: waits, rejects with the caller's error on abort (also one already aborted), leaves no listener", async () => {
  const t0 = Date.now();
  await abortableSleep(30, undefined, () => new Error('x'));
  assert.ok(Date.now() - t0 >= 25);
  const ac = new AbortController();
  const p = abortableSleep(10_000, ac.signal, () => new RangeError('cancelled'));
  ac.abort();
  await assert.rejects(p, RangeError);
  await assert.rejects(
    abortableSleep(10, ac.signal, () => new TypeError('early')),
    TypeError,
  );
  const ok = new AbortController();
  await abortableSleep(5, ok.signal, () => new Error('no'));
  ok.abort(); // after the wait: nothing rejects, nothing is left listening
});
