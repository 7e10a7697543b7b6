/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The Compare Runs bundle in real headless Chromium, fed what the host sends: a comparison built by core from
// three run folders (spec.json, training_args.json, an events.jsonl as the runner writes it, records with
// cost, host, GPU, git and W&B). Checked: the summary, the final metrics, the loss curves overlaid, the
// config diff (only differing keys by default, all on request; a key missing on one side), the requests the
// page sends (validated by the host's schema), and remote text (run names, config values) shown as text only.
import { after, before, test } from 'node:test';
import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { SHOTS, XSS_CORPUS, injectedElements, launchBrowser, missingPrerequisite, openPanel } from './harness';
import type { PanelPage } from './harness';
import { buildComparison } from '../../src/core/runs/view/runCompare';
import { runDisplayName } from '../../src/core/runs/view/runDisplayName';
import type { ComparedRunInput } from '../../src/core/runs/view/runCompare';
import type { RunRecord } from '../../src/core/runs/store/runRecord';
import { finalMetricsOf } from '../../src/core/runs/store/runHistory';
import { compareFromWebview, validate } from '../../src/features/panels/messages';

const skip = missingPrerequisite();
if (skip) console.log(`# skipping the compare panel tests: ${skip}`);
let browser: Browser;
const dir = mkdtempSync(join(tmpdir(), 'rft-comparepanel-'));
before(async () => {
  if (skip) return;
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

const ARGS_BASE = { learning_rate: 0.0002, per_device_train_batch_size: 4, gradient_accumulation_steps: 4, seed: 42, bf16: true, report_to: ['wandb'] };

/** A run's events.jsonl as the runner writes it: a loss decaying at `rate` over `steps`, eval every 20 steps. */
function events(rate: number, steps: number): string {
  const lines: object[] = [{ v: 1, ts: 1, type: 'started', model: 'tiny', method: 'qlora' }];
  for (let s = 1; s <= steps; s++) {
    lines.push({
      v: 1,
      ts: 1 + s,
      type: 'metrics',
      step: s,
      loss: Number((0.6 + 2.2 * Math.exp(-rate * s) + 0.04 * Math.sin(s)).toFixed(4)),
      learning_rate: 2e-4,
    });
    if (s % 20 === 0) lines.push({ v: 1, ts: 1 + s, type: 'eval', step: s, eval_loss: Number((0.7 + 2.2 * Math.exp(-rate * s)).toFixed(4)) });
  }
  lines.push({ v: 1, ts: 2 + steps, type: 'metrics', step: steps, extra: { train_runtime: steps * 1.5, train_loss: 1.1 } });
  lines.push({ v: 1, ts: 3 + steps, type: 'finished', status: 'completed', exit_code: 0, runtime_s: steps * 1.6 });
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
}

function runFolder(id: string, spec: object, args: object | undefined, eventsText: string): string {
  const d = mkdtempSync(join(dir, `${id}-`));
  writeFileSync(join(d, 'spec.json'), JSON.stringify(spec));
  if (args) writeFileSync(join(d, 'training_args.json'), JSON.stringify(args));
  writeFileSync(join(d, 'spec-source.yaml'), 'name: x\n');
  writeFileSync(join(d, 'events.jsonl'), eventsText);
  return d;
}

function record(id: string, name: string, localDir: string, patch: Partial<RunRecord>): RunRecord {
  return {
    id,
    name,
    specPath: '/w/finetune.yaml',
    specHash: 'h',
    createdAt: '2026-11-25T10:00:00.000Z',
    updatedAt: '2026-11-25T10:42:00.000Z',
    finishedAt: '2026-11-25T10:42:00.000Z',
    status: 'completed',
    provider: 'ssh',
    localDir,
    finalMetrics: finalMetricsOf(localDir),
    ...patch,
  };
}

function threeRuns(): ComparedRunInput[] {
  const spec = (name: string, r: number, extra: object = {}): object => ({
    version: 1,
    name,
    model: { id: 'meta-llama/Llama-3.1-8B' },
    method: 'qlora',
    lora: { r, alpha: 32, target_modules: ['q_proj', 'v_proj'] },
    ...extra,
  });
  const a = runFolder('a', spec('r16', 16), ARGS_BASE, events(0.05, 100));
  const b = runFolder('b', spec('r8', 8, { data: { eval: 'eval.jsonl' } }), { ...ARGS_BASE, learning_rate: 0.0001 }, events(0.03, 100));
  const c = runFolder('c', spec(XSS_CORPUS[0]!, 8), undefined, events(0.08, 60));
  return [
    {
      record: record('run-a', 'llama-r16', a, {
        host: 'lambda-a100',
        gpu: 'A100-80GB',
        costUsd: 1.43,
        wandbRunId: 'k3x9p2aa',
        wandbUrl: 'https://wandb.ai/acme/qlora/runs/k3x9p2aa',
        git: { repo: true, commit: '3f2a9c1e'.padEnd(40, '0'), branch: 'main', dirty: false, untracked: [] },
      }),
      localDir: a,
    },
    {
      record: record('run-b', 'llama-r8', b, {
        host: 'lambda-a100',
        gpu: 'A100-80GB',
        costUsd: 1.12,
        git: { repo: true, commit: '3f2a9c1e'.padEnd(40, '0'), branch: 'main', dirty: true, untracked: ['notes.md'] },
      }),
      localDir: b,
    },
    {
      record: record('run-c', XSS_CORPUS[2]!, c, { status: 'failed', host: XSS_CORPUS[1]!, wandbUrl: 'javascript:window.__xss=1', git: { repo: false } }),
      localDir: c,
    },
  ];
}

const cells = (p: PanelPage, sel: string): Promise<string[]> =>
  p.page.evaluate((s) => [...document.querySelectorAll(s)].map((n) => (n as HTMLElement).innerText.trim()), sel);

test('compare: summary, final metrics, loss curves overlaid and the config diff of three runs', { skip }, async () => {
  const p = await openPanel(browser, 'compare', { width: 1400, height: 1500 });
  const model = buildComparison(threeRuns(), Date.parse('2026-11-25T12:00:00Z'));
  await p.post({ type: 'compare', model });
  await p.page.waitForSelector('table.summary');
  // Runs are told apart by their start time beside the name (runDisplayName; local time, so computed the same way).
  const names = threeRuns().map((r) => runDisplayName(r.record, Date.parse('2026-11-25T12:00:00Z')));
  assert.deepEqual(
    names.map((n) => n.split(' · ')[0]),
    ['llama-r16', 'llama-r8', XSS_CORPUS[2]!],
  );
  assert.deepEqual(await cells(p, 'table.summary thead th'), ['Run', ...names]);
  assert.deepEqual(await cells(p, 'table.summary tr[data-row="duration"] td'), ['42m 00s', '42m 00s', '42m 00s']);
  assert.deepEqual(await cells(p, 'table.summary tr[data-row="cost"] td'), ['$1.43', '$1.12', '–']);
  assert.deepEqual(await cells(p, 'table.summary tr[data-row="gpu"] td'), ['A100-80GB', 'A100-80GB', '–']);
  const git = await cells(p, 'table.summary tr[data-row="git"] td');
  assert.match(git[0]!, /^3f2a9c1e00 main clean$/);
  assert.match(git[1]!, /^3f2a9c1e00 main dirty · 1 untracked$/);
  assert.equal(git[2], 'not a git repository');
  // Only the https W&B link is a button; the javascript: URL of run c is no link at all.
  assert.deepEqual(await cells(p, 'table.summary tr[data-row="wandb"] button'), ['W&B k3x9p2aa']);
  // Differing summary rows are marked, equal ones are not.
  assert.equal(await p.page.getAttribute('table.summary tr[data-row="cost"]', 'class'), 'differs');
  assert.equal(await p.page.getAttribute('table.summary tr[data-row="duration"]', 'class'), null);

  // Final metrics: the last loss of each fixture run.
  const loss = await cells(p, 'table.metrics tr[data-metric="loss"] td');
  assert.equal(loss.length, 3);
  assert.ok(
    loss.every((v) => /^\d+\.\d{4}$/.test(v)),
    `final losses: ${loss.join(', ')}`,
  );

  // Loss curves: one series per run on one step axis.
  const plotted = await p.page.evaluate(() =>
    (window as unknown as { __comparePanel: { plotted(m: string): { x: number[]; series: Array<{ label: string }> } | undefined } }).__comparePanel.plotted(
      'loss',
    ),
  );
  assert.deepEqual(
    plotted?.series.map((s) => s.label),
    names,
  );
  assert.equal(plotted?.x.length, 100, 'one step axis for all runs');
  const evalPlot = await p.page.evaluate(() =>
    (window as unknown as { __comparePanel: { plotted(m: string): { x: number[] } | undefined } }).__comparePanel.plotted('eval_loss'),
  );
  assert.deepEqual(evalPlot?.x, [20, 40, 60, 80, 100]);

  // Config diff, only differing keys by default: lora.r, name, data.eval (missing on two sides) and learning_rate.
  const specKeys = await cells(p, 'table.diff[data-section="spec"] tbody th');
  assert.deepEqual(specKeys, ['name', 'lora.r', 'data.eval']);
  assert.deepEqual(await cells(p, 'table.diff[data-section="spec"] tr[data-key="data.eval"] td'), ['not set', '"eval.jsonl"', 'not set']);
  assert.deepEqual(await cells(p, 'table.diff[data-section="trainingArgs"] tr[data-key="learning_rate"] td'), ['0.0002', '0.0001', 'not set']);
  assert.match(await p.page.innerText('h3 >> nth=0'), /^Spec: 3 of \d+ keys differ$/);
  // All keys on request; same-valued rows are shown unmarked.
  await p.page.click('#onlyDiffs');
  const all = await cells(p, 'table.diff[data-section="spec"] tbody th');
  assert.ok(all.includes('lora.alpha') && all.includes('lora.target_modules') && all.includes('model.id'), all.join(','));
  assert.equal(await p.page.getAttribute('table.diff[data-section="spec"] tr[data-key="lora.alpha"]', 'class'), 'same');
  assert.deepEqual(await p.state(), { onlyDiffs: false });
  await p.page.click('#onlyDiffs');

  // Requests to the host, each accepted by the host's schema.
  await p.page.click('table.summary tr[data-row="wandb"] button');
  await p.page.click('table.summary td[data-run="run-b"] button[data-file="training_args.json"]');
  await p.waitForSent('openFile');
  const sent = p.sent.filter((m) => (m as { type: string }).type !== 'ready');
  assert.deepEqual(sent, [
    { type: 'openWandb', run: 'run-a' },
    { type: 'openFile', run: 'run-b', file: 'training_args.json' },
  ]);
  for (const m of sent) assert.equal(validate(compareFromWebview, m).ok, true);
  assert.equal(validate(compareFromWebview, { type: 'openFile', run: 'run-b', file: '../../.ssh/id_ed25519' }).ok, false, 'only history file names');

  // Remote text stayed text.
  assert.deepEqual(await injectedElements(p.page), []);
  assert.deepEqual(p.cspViolations, []);
  assert.deepEqual(p.pageErrors, []);
  await p.page.screenshot({ path: join(SHOTS, 'compare-runs.png'), fullPage: true });
  await p.close();
});

test('compare: runs without history (no spec, no TrainingArguments, no events) say so instead of showing empty tables', { skip }, async () => {
  const p = await openPanel(browser, 'compare');
  const e1 = mkdtempSync(join(dir, 'e1-'));
  const e2 = mkdtempSync(join(dir, 'e2-'));
  const model = buildComparison([
    { record: record('e1', 'one', e1, { finalMetrics: {} }), localDir: e1 },
    { record: record('e2', 'two', e2, { finalMetrics: {} }), localDir: e2 },
  ]);
  await p.post({ type: 'compare', model });
  await p.page.waitForSelector('table.summary');
  assert.match(await p.page.innerText('section.final'), /No final metrics yet/);
  assert.match(await p.page.innerText('section.configs'), /No spec recorded/);
  assert.match(await p.page.innerText('section.configs'), /No TrainingArguments recorded/);
  assert.equal(await p.page.isVisible('figure[data-metric="loss"] .placeholder'), true);
  assert.deepEqual(await cells(p, 'table.summary tr[data-row="git"] td'), ['not recorded', 'not recorded']);
  assert.deepEqual(p.pageErrors, []);
  await p.close();
});
