import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { gpuFromWebview, logFromWebview, metricsFromWebview, validate } from '../../../src/features/panels/messages';

test('valid messages from each webview pass', () => {
  assert.equal(validate(logFromWebview, { type: 'ready' }).ok, true);
  assert.equal(validate(logFromWebview, { type: 'ack', seq: 3 }).ok, true);
  assert.equal(validate(logFromWebview, { type: 'openFullLog', line: 12 }).ok, true);
  assert.equal(validate(logFromWebview, { type: 'copy', text: 'abc' }).ok, true);
  assert.equal(validate(gpuFromWebview, { type: 'action', id: 'openLocalFile' }).ok, true);
  assert.equal(validate(metricsFromWebview, { type: 'loadWandb', run: { entity: 'acme', project: 'p-1', runId: 'x_y.z' } }).ok, true);
  assert.equal(validate(metricsFromWebview, { type: 'compareRun' }).ok, true);
  assert.equal(validate(metricsFromWebview, { type: 'dropRun', key: 'wandb:acme/p-1/x_y.z' }).ok, true);
});

test('malformed, unknown, extra-field and oversized messages are refused without throwing', () => {
  const bad: unknown[] = [
    null,
    42,
    'ready',
    {},
    { type: 'nope' },
    { type: 'ack', seq: -1 },
    { type: 'ack', seq: 1.5 },
    { type: 'ack', seq: '1' },
    { type: 'ready', extra: true },
    { type: 'copy', text: 'x'.repeat(9 * 1024 * 1024) },
    { type: 'openFullLog', line: 0 },
    { type: 'action', id: 'rm -rf' },
    { type: '__proto__' },
  ];
  for (const m of bad) assert.equal(validate(logFromWebview, m).ok, false, JSON.stringify(m)?.slice(0, 60));
  assert.equal(validate(gpuFromWebview, { type: 'ack', seq: 1 }).ok, false);
  const r = validate(metricsFromWebview, { type: 'loadWandb', run: { entity: 'a/b', project: '', runId: '<img>' } });
  assert.equal(r.ok, false);
  if (!r.ok) assert.match(r.error, /entity|project|runId/);
  assert.equal(validate(metricsFromWebview, { type: 'openRunPage', key: 'primary', url: 'javascript:alert(1)' }).ok, false);
  assert.equal(validate(metricsFromWebview, { type: 'dropRun', key: '' }).ok, false);
  assert.equal(validate(metricsFromWebview, { type: 'dropRun', key: 'k'.repeat(401) }).ok, false);
});
