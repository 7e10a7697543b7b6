// The validator against the spec's budget (issue 32.6): RFT822 when the estimate (training, time to ready and
// setup) is already past budget.max_usd or budget.max_hours, since the host would stop the run early; RFT823
// when a dollar limit cannot be counted (an own SSH host with no budget.price_per_hour).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateText } from '../../../src/core/config/validate';

// Llama-3-8B QLoRA, 2000 steps of 16 × 2048 tokens on one H100 on Lambda: several hours.
const spec = (budget: string, target = '  provider: lambda\n  gpu: H100'): string =>
  `version: 1\nname: b\nmodel:\n  id: meta-llama/Meta-Llama-3-8B\nmethod: qlora\ndata:\n  train: data/train.jsonl\ntrainer:\n  max_steps: 2000\ntarget:\n${target}\nbudget:\n${budget}\n`;

function diags(text: string, code: string): Array<{ line: number; message: string; severity: string }> {
  return validateText(text, { fileName: '/ws/finetune.yaml' })
    .diagnostics.filter((d) => d.code === code)
    .map((d) => ({ line: text.slice(0, d.start).split('\n').length, message: d.message, severity: d.severity }));
}

test('an estimate above budget.max_usd is a warning at max_usd with the figures', () => {
  const d = diags(spec('  max_usd: 5'), 'RFT822');
  assert.equal(d.length, 1, JSON.stringify(d));
  assert.equal(d[0]!.severity, 'warning');
  assert.equal(d[0]!.line, 14, 'at budget.max_usd');
  assert.match(
    d[0]!.message,
    /^The estimate exceeds the budget: about \$\d+\.\d\d \(\$[\d.]+\/h × [\d.]+ h \([\d.]+ h training \+ 0\.12 h setup\), H100 list price\) is more than budget\.max_usd \$5\.00\. The host stops training at 100%/,
  );
});

test('an estimate above budget.max_hours counts the time to ready (8 GPUs: 20 min)', () => {
  const d = diags(spec('  max_hours: 0.5', '  provider: lambda\n  gpu: H100\n  gpu_count: 8'), 'RFT822');
  assert.equal(d.length, 1, JSON.stringify(d));
  assert.match(d[0]!.message, /h training \+ 0\.38 h to ready and setup\) is more than budget\.max_hours 0\.5/);
});

test('a budget the estimate stays under says nothing', () => {
  assert.deepEqual(diags(spec('  max_usd: 100000\n  max_hours: 500'), 'RFT822'), []);
});

test('a dollar limit on an own SSH host needs a price; with one it is checked like a cloud', () => {
  const own = diags(spec('  max_usd: 5', '  provider: ssh\n  host: gpu-box\n  gpu: H100'), 'RFT823');
  assert.equal(own.length, 1);
  assert.match(own[0]!.message, /^budget\.max_usd cannot be counted on your own SSH host: nothing knows its price\. Add budget\.price_per_hour/);
  const priced = spec('  max_usd: 5\n  price_per_hour: 2', '  provider: ssh\n  host: gpu-box\n  gpu: H100');
  assert.deepEqual(diags(priced, 'RFT823'), []);
  assert.match(diags(priced, 'RFT822')[0]!.message, /\(\$2\.00\/h × [\d.]+ h \([\d.]+ h training \+ 0\.00 h setup\)\) is more than budget\.max_usd \$5\.00/);
});

test('the budget fields are in the schema: a typo is flagged, the fields are not', () => {
  const all = validateText(spec('  max_usd: 5\n  max_hour: 2'), { fileName: '/ws/finetune.yaml' }).diagnostics;
  assert.ok(
    all.some((d) => d.message === "Unknown key 'max_hour' in budget. Did you mean 'max_hours'?"),
    JSON.stringify(all.map((d) => d.message)),
  );
  const ok = validateText(spec('  max_usd: 500\n  max_hours: 20\n  price_per_hour: 3'), { fileName: '/ws/finetune.yaml' }).diagnostics;
  assert.deepEqual(
    ok.filter((d) => d.severity === 'error').map((d) => d.message),
    [],
  );
});
