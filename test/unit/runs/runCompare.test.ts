// The Compare Runs model: nested keys flattened to dotted paths, lists of plain values as one setting and lists
// of objects by index, a key missing on one side (or a run without the file) differs, equal values do not;
// the comparison of runs read from their folders (spec.json, training_args.json, events.jsonl, the record).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildComparison, diffConfigs, flattenConfig, httpsUrl, lossCurves, MAX_CURVE_POINTS, wandbPageUrl } from '../../../src/core/runs/view/runCompare';
import type { RunRecord } from '../../../src/core/runs/store/runRecord';

test('runCompare: flattening walks nested objects, keeps plain lists whole and walks lists of objects by index', () => {
  const f = flattenConfig({
    name: 'a',
    lora: { r: 16, target_modules: ['q_proj', 'v_proj'], extra: {} },
    data: { files: [{ path: 'a.jsonl' }, { path: 'b.jsonl', split: 'eval' }] },
    none: null,
    empty: [],
  });
  assert.deepEqual(Object.fromEntries(f), {
    name: '"a"',
    'lora.r': '16',
    'lora.target_modules': '["q_proj","v_proj"]',
    'lora.extra': '{}',
    'data.files[0].path': '"a.jsonl"',
    'data.files[1].path': '"b.jsonl"',
    'data.files[1].split': '"eval"',
    none: 'null',
    empty: '[]',
  });
});

test('runCompare: the diff marks keys that differ, keys missing on one side, a run without a config; "1" and 1 differ', () => {
  const rows = diffConfigs(
    [{ lora: { r: 16, alpha: 32 }, lr: 1, mods: ['q', 'v'] }, { lora: { r: 8, alpha: 32 }, lr: '1', mods: ['q', 'v'], seed: 3 }, undefined],
    'spec',
  );
  const by = Object.fromEntries(rows.map((r) => [r.key, r]));
  assert.deepEqual(
    rows.map((r) => r.key),
    ['lora.r', 'lora.alpha', 'lr', 'mods', 'seed'],
  );
  assert.deepEqual(by['lora.r']!.values, ['16', '8', null]);
  assert.equal(by['lora.r']!.differs, true);
  assert.deepEqual(by['lr']!.values, ['1', '"1"', null]);
  assert.deepEqual(by['seed']!.values, [null, '3', null]);
  assert.equal(by['seed']!.differs, true);
  // Two runs with the same value do not differ.
  const two = diffConfigs(
    [
      { lora: { alpha: 32 }, mods: ['q', 'v'] },
      { lora: { alpha: 32 }, mods: ['q', 'v'] },
    ],
    'trainingArgs',
  );
  assert.deepEqual(
    two.map((r) => [r.key, r.differs, r.section]),
    [
      ['lora.alpha', false, 'trainingArgs'],
      ['mods', false, 'trainingArgs'],
    ],
  );
  // Order matters in a list.
  assert.equal(diffConfigs([{ m: ['q', 'v'] }, { m: ['v', 'q'] }], 'spec')[0]!.differs, true);
});

test('runCompare: only https W&B links without credentials, on W&B or the configured server, are offered', () => {
  assert.equal(httpsUrl('https://wandb.ai/acme/proj/runs/abc'), 'https://wandb.ai/acme/proj/runs/abc');
  assert.equal(httpsUrl('http://wandb.ai/acme/proj/runs/abc'), undefined);
  assert.equal(httpsUrl('javascript:alert(1)'), undefined);
  assert.equal(httpsUrl('file:///etc/passwd'), undefined);
  assert.equal(httpsUrl('https://user:pw@wandb.ai/x'), undefined);
  assert.equal(httpsUrl('not a url'), undefined);
  // The link came from the GPU host: only W&B's site, or the person's W&B Server, is offered.
  assert.equal(wandbPageUrl('https://wandb.ai/acme/proj/runs/abc'), 'https://wandb.ai/acme/proj/runs/abc');
  assert.equal(wandbPageUrl('https://evil.example/acme/proj/runs/abc'), undefined);
  assert.equal(
    wandbPageUrl('https://wandb.corp.example/a/p/runs/x', ['https://wandb.ai', 'https://wandb.corp.example']),
    'https://wandb.corp.example/a/p/runs/x',
  );
});

test('runCompare: loss curves from events.jsonl, thinned to a bounded number of points keeping the last', () => {
  const lines: string[] = [];
  for (let s = 1; s <= 5000; s++) lines.push(JSON.stringify({ v: 1, ts: s, type: 'metrics', step: s, loss: 10 / s }));
  lines.push(JSON.stringify({ v: 1, ts: 1, type: 'eval', step: 5000, eval_loss: 0.5 }));
  lines.push('{broken');
  const c = lossCurves(lines.join('\n'), 'r1');
  assert.equal(c.length, 2);
  assert.equal(c[0]!.steps.length, MAX_CURVE_POINTS);
  assert.equal(c[0]!.steps[0], 1);
  assert.equal(c[0]!.steps.at(-1), 5000);
  assert.equal(c[0]!.values.at(-1), 10 / 5000);
  assert.deepEqual(c[1], { run: 'r1', metric: 'eval_loss', steps: [5000], values: [0.5] });
});

function rec(id: string, patch: Partial<RunRecord>): RunRecord {
  return {
    id,
    name: id,
    specPath: '/w/finetune.yaml',
    specHash: 'h',
    createdAt: '2026-11-25T10:00:00.000Z',
    updatedAt: '2026-11-25T10:05:00.000Z',
    finishedAt: '2026-11-25T10:05:00.000Z',
    status: 'completed',
    provider: 'ssh',
    ...patch,
  };
}

test('runCompare: a comparison of run folders: columns from the records, spec and TrainingArguments diff, metrics, curves', () => {
  const a = mkdtempSync(join(tmpdir(), 'rft-cmp-a-'));
  const b = mkdtempSync(join(tmpdir(), 'rft-cmp-b-'));
  writeFileSync(join(a, 'spec.json'), JSON.stringify({ name: 'a', lora: { r: 16 } }));
  writeFileSync(join(b, 'spec.json'), JSON.stringify({ name: 'b', lora: { r: 8 } }));
  writeFileSync(join(a, 'training_args.json'), JSON.stringify({ learning_rate: 0.0002, seed: 42 }));
  writeFileSync(join(b, 'training_args.json'), 'not json at all');
  writeFileSync(join(a, 'events.jsonl'), `${JSON.stringify({ v: 1, ts: 1, type: 'metrics', step: 1, loss: 2 })}\n`);
  const m = buildComparison(
    [
      {
        record: rec('a', {
          host: 'gpu1',
          gpu: 'A100-80GB',
          costUsd: 1.25,
          finalMetrics: { loss: 2, train_runtime: 30 },
          wandbUrl: 'https://wandb.ai/acme/p/runs/a',
          wandbRunId: 'a',
          git: { repo: true, commit: 'a'.repeat(40), dirty: true, untracked: ['x.py'] },
        }),
        localDir: a,
      },
      { record: rec('b', { finalMetrics: { loss: 1.5, eval_loss: 1.7 }, wandbUrl: 'javascript:alert(1)', git: { repo: false } }), localDir: b },
    ],
    Date.parse('2026-11-25T11:00:00Z'),
  );
  assert.deepEqual(
    m.runs.map((r) => [r.key, r.duration, r.costUsd, r.host, r.gpu, r.hasWandbPage, r.git?.dirty, r.git?.untracked]),
    [
      ['a', '5m 00s', 1.25, 'gpu1', 'A100-80GB', true, true, 1],
      ['b', '5m 00s', undefined, undefined, undefined, false, undefined, 0],
    ],
  );
  assert.deepEqual(m.runs[0]!.files, ['spec.json', 'training_args.json']);
  const spec = m.config.filter((r) => r.section === 'spec');
  assert.deepEqual(
    spec.map((r) => [r.key, r.values, r.differs]),
    [
      ['name', ['"a"', '"b"'], true],
      ['lora.r', ['16', '8'], true],
    ],
  );
  // Run b's TrainingArguments file is no JSON: its side is missing, so every key differs.
  const args = m.config.filter((r) => r.section === 'trainingArgs');
  assert.deepEqual(
    args.map((r) => [r.key, r.values]),
    [
      ['learning_rate', ['0.0002', null]],
      ['seed', ['42', null]],
    ],
  );
  assert.deepEqual(m.metrics, [
    { key: 'loss', values: [2, 1.5] },
    { key: 'train_runtime', values: [30, null] },
    { key: 'eval_loss', values: [null, 1.7] },
  ]);
  assert.deepEqual(m.curves, [{ run: 'a', metric: 'loss', steps: [1], values: [2] }]);
});
