// Issue 30.7: metric names are the run's own (a script's extra metrics, W&B history keys), so `__proto__`,
// `constructor`, `toString` or `hasOwnProperty` are names like any other on every step from events.jsonl to the
// metrics panel and the Compare Runs view: kept, charted, and never a way into Object.prototype.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunSeries } from '../../../webview/src/metrics/runSeries';
import { eventsToPoints } from '../../../src/features/panels/metricPoints';
import { parseEventLine } from '../../../src/core/telemetry/events';
import type { RunEvent } from '../../../src/core/telemetry/events';
import { historyToPoints } from '../../../src/core/telemetry/wandb';
import { buildComparison } from '../../../src/core/runs/view/runCompare';
import type { RunRecord } from '../../../src/core/runs/store/runRecord';
import type { MetricPoint } from '../../../src/protocol/metrics';

const NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty'];
const info = { key: 'primary', name: 'run', source: 'own' } as unknown as ConstructorParameters<typeof RunSeries>[0];

/** What the webview gets: the points as JSON (postMessage), where `__proto__` is an own key like the rest. */
function delivered(points: unknown): MetricPoint[] {
  return JSON.parse(JSON.stringify(points).replaceAll('"__proto_x"', '"__proto__"')) as MetricPoint[];
}

test('metrics panel: a run logging __proto__, constructor, toString and hasOwnProperty charts each, and pollutes nothing', () => {
  const series = new RunSeries(info, '#fff');
  const points = delivered([
    { step: 1, values: { loss: 1, __proto_x: 7, constructor: 3, toString: 4, hasOwnProperty: 5 } },
    { step: 2, values: { loss: 0.5, __proto_x: 8, constructor: 6, toString: 9, hasOwnProperty: 10 } },
  ]);
  assert.ok(Object.hasOwn(points[0]!.values, '__proto__'), 'the test sends __proto__ as a key');
  series.add(points);
  assert.deepEqual(series.column('constructor'), { xs: [1, 2], ys: [3, 6] });
  assert.deepEqual(series.column('__proto__'), { xs: [1, 2], ys: [7, 8] });
  assert.deepEqual(series.column('toString'), { xs: [1, 2], ys: [4, 9] });
  assert.deepEqual(series.otherKeys().sort(), [...NAMES].sort());
  assert.equal(series.latest.get('hasOwnProperty'), 10);
  assert.deepEqual(series.column('valueOf'), { xs: [], ys: [] }, 'a name never logged has no column');
  const plain: Record<string, unknown> = {};
  assert.equal(plain[0], undefined, 'Object.prototype gained no index properties');
  assert.equal(plain[1], undefined);
});

test('metrics panel: events.jsonl extras named like Object members reach the chart', () => {
  const line = JSON.stringify({ v: 1, ts: 1, type: 'metrics', step: 3, loss: 1, extra: { constructor: 2, toString: 3 } });
  const parsed = parseEventLine(line);
  assert.ok(parsed.ok);
  const points = eventsToPoints([parsed.event]);
  assert.deepEqual({ ...points[0]!.values }, { loss: 1, constructor: 2, toString: 3 });
  const own = eventsToPoints([{ v: 1, ts: 1, type: 'metrics', step: 4, extra: JSON.parse('{"__proto__": 5}') as Record<string, number> } as RunEvent]);
  assert.equal(JSON.stringify(own[0]!.values), '{"__proto__":5}', 'a __proto__ key handed in stays a value');
  const series = new RunSeries(info, '#fff');
  series.add(delivered(points));
  assert.deepEqual(series.column('constructor'), { xs: [3], ys: [2] });
});

test('W&B history: keys named like Object members are metrics like the rest', () => {
  const points = historyToPoints([{ _step: 1, 'train/loss': 2, constructor: 3, toString: 4, hasOwnProperty: 5 }]);
  assert.deepEqual({ ...points[0]!.values }, { loss: 2, constructor: 3, toString: 4, hasOwnProperty: 5 });
});

test('Compare Runs: a metric only one run logged is missing (null) on the others, whatever its name', () => {
  const rec = (id: string, finalMetrics: Record<string, number>): RunRecord => ({
    id,
    name: id,
    specPath: '/w/finetune.yaml',
    specHash: 'h',
    createdAt: '2026-11-25T10:00:00.000Z',
    updatedAt: '2026-11-25T10:05:00.000Z',
    status: 'completed',
    provider: 'ssh',
    finalMetrics,
  });
  const dir = mkdtempSync(join(tmpdir(), 'rft-metric-names-'));
  const m = buildComparison([
    { record: rec('a', { constructor: 1, toString: 2 }), localDir: dir },
    { record: rec('b', { loss: 3 }), localDir: dir },
  ]);
  const by = new Map(m.metrics.map((r) => [r.key, r.values]));
  assert.deepEqual(by.get('constructor'), [1, null]);
  assert.deepEqual(by.get('toString'), [2, null]);
  assert.deepEqual(by.get('loss'), [null, 3]);
  assert.doesNotThrow(() => JSON.stringify(m));
});
