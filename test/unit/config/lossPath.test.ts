// Whether the estimate counts the full logits follows the runner's loss path: Liger's fused cross-entropy under
// speed: auto for the families liger-kernel patches, Unsloth's backend, else transformers' fp32 logits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseConfigText } from '../../../src/core/config/parse';
import { LIGER_FAMILIES, fusedLoss } from '../../../src/core/config/lossPath';
import { estimateRunSpec } from '../../../src/core/config/runSpecEstimate';

const REPO = join(__dirname, '../../..');
const base = (model: string, extra = '', trainer = ''): string =>
  `version: 1\n${extra}model:\n  id: ${model}\nmethod: qlora\ndata:\n  train: a.jsonl\n  max_seq_length: 2048\ntrainer:\n  per_device_batch_size: 2\n  gradient_checkpointing: true\n${trainer}target:\n  provider: ssh\n  host: box\n  gpu: H100\n`;
const root = (text: string) => parseConfigText(text, 'yaml').root;

test("lossPath: LIGER_FAMILIES is the runner's list (speed.py)", () => {
  const py = readFileSync(join(REPO, 'python-runner/remote_finetune/speed.py'), 'utf8');
  const block = /LIGER_FAMILIES = frozenset\(\{([^}]*)\}\)/.exec(py);
  assert.ok(block, 'speed.py has no LIGER_FAMILIES set literal');
  const runner = [...block[1]!.matchAll(/"([^"]+)"/g)].map((m) => m[1]!).sort();
  assert.deepEqual([...LIGER_FAMILIES].sort(), runner);
});

test('lossPath: fused where Liger or Unsloth computes the loss, the full logits elsewhere', () => {
  const cases: Array<[string, boolean, RegExp]> = [
    [base('meta-llama/Llama-3.1-8B'), true, /Liger's fused linear cross-entropy \(llama\)/],
    [base('Qwen/Qwen3-8B'), true, /\(qwen3\)/],
    [base('meta-llama/Llama-3.1-8B', 'speed: off\n'), false, /speed is off/],
    [base('meta-llama/Llama-3.1-8B', 'speed: off\n', '  liger: true\n'), true, /Liger/],
    [base('meta-llama/Llama-3.1-8B', '', '  liger: false\n'), false, /trainer.liger is false/],
    [base('openai-community/gpt2'), false, /does not patch model type unknown/],
    [base('openai-community/gpt2', '', '  backend: unsloth\n'), true, /Unsloth/],
  ];
  for (const [text, fused, why] of cases) {
    const r = fusedLoss(root(text), 'finetune.yaml', undefined);
    assert.equal(r.fused, fused, `${text.split('\n')[1]} ${r.why}`);
    assert.match(r.why, why);
  }
  // model.config_path's model_type wins over the id.
  const files = { read: (p: string) => (p.endsWith('config.json') ? { text: '{"model_type": "gpt_neox"}' } : { missing: true }), exists: () => true };
  const withConfig = base('my-org/llama-named-neox').replace('  id: my-org/llama-named-neox\n', '  id: my-org/llama-named-neox\n  config_path: config.json\n');
  assert.deepEqual(fusedLoss(root(withConfig), '/ws/finetune.yaml', files as never), { fused: false, why: 'liger-kernel does not patch model type gpt_neox' });
});

test('lossPath: the estimate drops the logits term (batch 2 x 2048 x 128,256 vocabulary x 12 B = 5.9 GiB) only on the fused path', () => {
  const fused = estimateRunSpec(root(base('meta-llama/Llama-3.1-8B')), 'finetune.yaml', undefined)!;
  const full = estimateRunSpec(root(base('meta-llama/Llama-3.1-8B', 'speed: off\n')), 'finetune.yaml', undefined)!;
  const logits = (p: typeof fused) => p.estimate.parts.find((x) => /logits|log-probabilities/.test(x.name))!;
  assert.match(logits(fused).name, /tiled log-probabilities/);
  assert.equal(logits(fused).gib, 0);
  assert.ok(Math.abs(logits(full).gib - (2 * 2048 * 128256 * 12) / 2 ** 30) < 0.05, String(logits(full).gib));
  assert.ok(full.estimate.totalGib - fused.estimate.totalGib > 5.9, `${full.estimate.totalGib} vs ${fused.estimate.totalGib}`);
});
