// Issue 18.6: quick fixes propose values people train with, LoRA learning rates above 1e-2 warn,
// messages read as plain text, the per-provider GPU rule, and ignored values warn instead of failing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateText } from '../../../src/core/config/validate';
import type { ConfigDiagnostic, Fix } from '../../../src/core/config/types';

function applyFix(text: string, fix: Fix): string {
  let out = text;
  for (const e of [...fix.edits].sort((a, b) => b.start - a.start)) out = out.slice(0, e.start) + e.newText + out.slice(e.end);
  return out;
}

const spec = (method: string, lr: string, extra = ''): string =>
  `version: 1\nmodel:\n  id: meta-llama/Llama-3.1-8B\nmethod: ${method}\ndata:\n  train: a/b\ntrainer:\n  learning_rate: ${lr}\n  precision: bf16\n  gradient_checkpointing: true\ntarget:\n  provider: ssh\n  gpu: A100-80GB\n${extra}`;
const diags = (text: string, fileName = 'finetune.yaml'): ConfigDiagnostic[] => validateText(text, { fileName }).diagnostics;

test('learning rate out of range: the preferred fix proposes 2e-4 for LoRA/QLoRA and 2e-5 for full, never the bound', () => {
  for (const [method, want] of [['qlora', '2e-4'], ['lora-bf16', '2e-4'], ['full', '2e-5']] as const) {
    for (const lr of ['5', '0']) {
      const text = spec(method, lr);
      const d = diags(text).find((x) => x.code === 'RFT103');
      assert.ok(d, `${method} ${lr}`);
      const fix = d.fixes?.find((f) => f.preferred);
      assert.ok(fix, `${method} ${lr}: a preferred fix`);
      assert.match(fix.title, new RegExp(`^Set to ${want} \\(usual for`));
      const fixed = applyFix(text, fix);
      assert.match(fixed, new RegExp(`\\n {2}learning_rate: ${want}\\n`));
      assert.deepEqual(diags(fixed).filter((x) => x.code === 'RFT103' || x.code === 'RFT818'), [], `${method}: the fixed spec is clean`);
      assert.ok(!d.fixes!.some((f) => /Set to (1|1e-8)$/.test(f.title)), 'no fix to the range bound');
    }
  }
});

test('learning rate: trainer YAML (read by PyYAML) gets 2.0e-4, which YAML 1.1 reads as a float (2e-4 would be a string there)', () => {
  const y = diags('learning_rate: 3\nlora_r: 16\nlora_alpha: 32\n', 'training_args.yaml').find((x) => x.code === 'RFT403')!;
  assert.equal(y.fixes![0]!.edits[0]!.newText, '2.0e-4');
  const a = diags('base_model: x/y\nadapter: qlora\nlearning_rate: 0.5\n', 'axolotl/qlora.yml').find((x) => x.code === 'RFT818')!;
  assert.equal(a.fixes![0]!.edits[0]!.newText, '2.0e-4');
});

test('RFT818: a LoRA/QLoRA learning rate above 1e-2 is a warning with a 2e-4 fix; full fine-tuning and 1e-2 itself are not flagged', () => {
  const d = diags(spec('qlora', '0.05')).filter((x) => x.code === 'RFT818');
  assert.equal(d.length, 1);
  assert.equal(d[0]!.severity, 'warning');
  assert.equal(applyFix(spec('qlora', '0.05'), d[0]!.fixes![0]!), spec('qlora', '2e-4'));
  assert.ok(!diags(spec('qlora', '0.01')).some((x) => x.code === 'RFT818'));
  assert.ok(!diags(spec('full', '0.05')).some((x) => x.code === 'RFT818'));
  assert.ok(!diags(spec('qlora', '5')).some((x) => x.code === 'RFT818'), 'out of range is the schema error alone');
  // Other kinds that train an adapter: LLaMA-Factory (lora by default), Axolotl, a trainer YAML with LoRA keys.
  assert.ok(diags('model_name_or_path: x/y\nstage: sft\nlearning_rate: 0.1\n', 'llama_factory/a_lora_sft.yaml').some((x) => x.code === 'RFT818' && x.severity === 'warning'));
  assert.ok(!diags('model_name_or_path: x/y\nstage: sft\nfinetuning_type: full\nlearning_rate: 0.1\n', 'llama_factory/a_full_sft.yaml').some((x) => x.code === 'RFT818'));
});
