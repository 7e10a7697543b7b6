// The runner's MAC on its own events (issue 30 item 6), checked on the lines python-runner's signer wrote:
// test/fixtures/events/signed_control.jsonl, key bytes 0..31 (python-runner/tests/test_control_events.py checks
// that its signer reproduces them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isControlEvent, mayActOn, newControlKey, runnerSigned } from '../../../src/core/telemetry/eventAuth';
import { parseEventLine } from '../../../src/core/telemetry/events';

const KEY = Buffer.from(Array.from({ length: 32 }, (_, i) => i)).toString('hex');
const LINES = readFileSync(join(__dirname, '../../fixtures/events/signed_control.jsonl'), 'utf8').split('\n').filter(Boolean);

test('the fixture: three runner lines verify; a changed message and an unsigned copy do not', () => {
  assert.deepEqual(
    LINES.map((l) => runnerSigned(l, KEY)),
    [true, true, true, false, false],
  );
  assert.equal(runnerSigned(LINES[0]!, newControlKey()), false, 'another run’s key');
});

test('control events need the MAC when the run has a key; other events and keyless runs do not', () => {
  const events = LINES.map((l) => {
    const p = parseEventLine(l);
    assert.ok(p.ok, l);
    return p.event;
  });
  assert.deepEqual(
    events.map((e) => isControlEvent(e)),
    [true, true, true, true, true],
  );
  assert.deepEqual(
    LINES.map((l, i) => mayActOn(l, events[i]!, KEY)),
    [true, true, true, false, false],
  );
  assert.equal(mayActOn(LINES[4]!, events[4]!, undefined), true);
  const metrics = '{"v":1,"ts":1,"type":"metrics","step":3,"loss":1.5}';
  const p = parseEventLine(metrics);
  assert.ok(p.ok && mayActOn(metrics, p.event, KEY));
  assert.match(newControlKey(), /^[0-9a-f]{64}$/);
});
