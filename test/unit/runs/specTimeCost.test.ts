// Issue 39.3: the editor's CodeLens and hover on `target` give memory · time · cost for the spec's own target, with
// the Start confirmation's own reckoning (runLength.ts × launchCost.ts) at the provider's catalog price, or "own
// host: no charge, ≈ N min".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseConfigText, toValue } from '../../../src/core/config/parse';
import { estimateRunSpec } from '../../../src/core/config/runSpecEstimate';
import { ownHostLine, roughDuration, specTimeCost } from '../../../src/core/runs/cost/specTimeCost';
import { launchCost } from '../../../src/core/runs/cost/launchCost';
import { runLength } from '../../../src/core/runs/cost/runLength';
import { readyWait } from '../../../src/core/providers/readyWait';
import type { RunRecord } from '../../../src/core/runs/store/runRecord';

const ROOT = resolve(__dirname, '../../..');
const T4 = readFileSync(join(ROOT, 'test/fixtures/runspec/qlora_t4.yaml'), 'utf8');

/** The fixture with its target and trainer lines replaced. */
function spec(over: { target?: string; maxSteps?: number; train?: string } = {}) {
  let text = T4;
  if (over.target) text = text.replace(/target:\n(?: {2}.*\n)+/, `target:\n${over.target}`);
  if (over.maxSteps !== undefined) text = text.replace('max_steps: -1', `max_steps: ${over.maxSteps}`);
  if (over.train) text = text.replace('train: data/train.jsonl', `train: ${over.train}`);
  const root = parseConfigText(text, 'yaml').root;
  const estimate = estimateRunSpec(root, '/ws/finetune.yaml', undefined);
  assert.ok(estimate, 'the fixture has an estimate');
  return { spec: toValue(root) as Record<string, unknown>, estimate };
}

const noFiles = (): number | undefined => undefined;

/** The Start confirmation's run length of a fixture spec on one T4 (no local data file to count). */
function t4Length(s: ReturnType<typeof spec>): ReturnType<typeof runLength> {
  return runLength({
    spec: s.spec,
    specDir: '/ws',
    gpu: 'T4',
    gpuCount: 1,
    params: s.estimate.model.params,
    layers: s.estimate.model.layers,
    countExamples: noFiles,
  });
}

test('a GCP spec: time and the money at its own machine type’s catalog price, the same figures as the Start confirmation', () => {
  const s = spec({ maxSteps: 200 });
  const tc = specTimeCost({ ...s, specDir: '/ws', countExamples: noFiles });
  const length = t4Length(s);
  assert.ok(length.known);
  const start = launchCost(
    {
      provider: 'gcp',
      pricePerHour: 0.54,
      spot: false,
      instanceType: 'n1-standard-4',
      priceSource: "gcp's on-demand list price from the project's catalog; Start asks gcp for today's",
    },
    length,
    readyWait('gcp', 1),
  );
  assert.equal(tc.detail, start.text);
  assert.equal(tc.lens, `${roughDuration(length.hours)} · ≈ $${start.estimate!.totalUsd.toFixed(2)} on gcp n1-standard-4`);
  assert.match(tc.detail, /^\$0\.54\/h \(n1-standard-4; .*about \$\d+\.\d\d for this run/);
});

test('a machine type that cannot hold the GPU is priced as the provider’s cheapest machine that can', () => {
  const s = spec({ maxSteps: 200, target: '  provider: gcp\n  gpu: A100-40GB\n  instance_type: n1-standard-4\n' });
  assert.match(specTimeCost({ ...s, specDir: '/ws', countExamples: noFiles }).lens, / on gcp a2-highgpu-1g$/);
  const ec2 = spec({ maxSteps: 200, target: '  provider: ec2\n  gpu: A10G\n' });
  assert.match(specTimeCost({ ...ec2, specDir: '/ws', countExamples: noFiles }).detail, /^\$1\.006\/h \(g5\.xlarge;/);
});

test('an own host costs nothing here and says how long', () => {
  const s = spec({ maxSteps: 200, target: '  provider: ssh\n  host: lab-a100\n  gpu: T4\n' });
  const tc = specTimeCost({ ...s, specDir: '/ws', countExamples: noFiles });
  assert.match(tc.lens, /^own host: no charge, ≈ (\d+ min|\d+h \d\dm)$/);
  assert.match(tc.detail, /^Training ≈ .*: 200 steps \(trainer\.max_steps 200\)/);
});

test('no length to know (a Hub dataset, no max_steps): the price per hour and why there is no total', () => {
  const s = spec({ train: 'hf://acme/corpus' });
  const tc = specTimeCost({ ...s, specDir: '/ws', countExamples: noFiles });
  assert.equal(tc.lens, '$0.54/h on gcp n1-standard-4');
  assert.match(tc.detail, /no total: the size of hf:\/\/acme\/corpus is not known here/);
  const own = spec({ train: 'hf://acme/corpus', target: '  provider: local\n  gpu: T4\n' });
  assert.equal(specTimeCost({ ...own, specDir: '/ws', countExamples: noFiles }).lens, 'own host: no charge');
});

test('epochs over the local training file are counted (the file the spec names, from its folder)', () => {
  const s = spec();
  const seen: string[] = [];
  const tc = specTimeCost({ ...s, specDir: '/ws', countExamples: (p) => (seen.push(p), 1600) });
  assert.deepEqual(seen, ['/ws/data/train.jsonl']);
  // 1600 examples × 3 epochs ÷ (1 × 16 × 1) = 300 steps.
  assert.match(tc.detail, /300 steps \(1600 examples × 3 epochs/);
});

test('the user’s own measured run of this case sets the time (issue 32.4)', () => {
  const s = spec({ maxSteps: 200 });
  const measured = {
    id: 'rft-9',
    name: 'rft-9',
    specPath: '/ws/finetune.yaml',
    specHash: 'h',
    createdAt: '2026-11-20T10:00:00Z',
    updatedAt: '2026-11-20T12:00:00Z',
    finishedAt: '2026-11-20T12:00:00Z',
    status: 'completed',
    provider: 'gcp',
    estimated: { model: 'meta-llama/Llama-3.1-8B', gpu: 'T4', gpuCount: 1, method: 'qlora', seqLen: 1024, batch: 16 },
    measured: { tokensPerSecond: 16384 / 60 },
  } as RunRecord;
  const tc = specTimeCost({ ...s, specDir: '/ws', countExamples: noFiles, history: [measured] });
  // 200 steps × 16,384 tokens at 16,384 tokens a minute: 200 minutes.
  assert.match(tc.lens, /^≈ 3h 20m · /);
  assert.match(tc.detail, /measured on run rft-9/);
});

test('rough durations', () => {
  assert.equal(roughDuration(0.001), '≈ 1 min');
  assert.equal(roughDuration(0.5), '≈ 30 min');
  assert.equal(roughDuration(2.17), '≈ 2h 10m');
});

test('the own-host Start confirmation says how long, from the same run length', () => {
  const s = spec({ maxSteps: 200, target: '  provider: ssh\n  host: lab-t4\n  gpu: T4\n' });
  const length = t4Length(s);
  assert.ok(length.known);
  assert.equal(ownHostLine(length), `Your own host: no cloud charges from this extension. Training ${roughDuration(length.hours)}: ${length.basis}.`);
  assert.equal(
    ownHostLine({ known: false, reason: 'your own command sets its own length' }),
    'Your own host: no cloud charges from this extension. No time estimate: your own command sets its own length.',
  );
  assert.equal(ownHostLine(undefined), 'Your own host: no cloud charges from this extension.');
});
