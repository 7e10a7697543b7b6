// Issue 31.5/31.6: settings the built-in trainer cannot carry out as written are reported while editing.
// RFT840: a schedule transformers cannot build (its lr_scheduler_kwargs missing, or reduce_lr_on_plateau with
// nothing to evaluate); RFT841: sdpa asked of a model family whose class refuses it. An unknown trainer key is
// said to be passed through when the trainer's TrainingArguments has it, not "ignored".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateText } from '../../../src/core/config/validate';

const spec = (model: string, trainer: string, data = '  train: data/train.jsonl'): string =>
  `version: 1\nmethod: lora-bf16\nmodel:\n${model}\ndata:\n${data}\ntrainer:\n${trainer}\ntarget:\n  provider: ssh\n  host: box\n  gpu: A100-80GB\n`;
const llama = '  id: meta-llama/Llama-3.1-8B';

function codes(text: string, code: string): Array<{ message: string; fix?: string; text: string }> {
  return validateText(text, { fileName: '/ws/finetune.yaml' })
    .diagnostics.filter((d) => d.code === code)
    .map((d) => ({ message: d.message, fix: d.fixes?.[0]?.title, text: text.slice(d.start, d.end) }));
}

test('schedules that need arguments are errors without them and pass with them', () => {
  const min = codes(spec(llama, '  lr_scheduler: cosine_with_min_lr'), 'RFT840');
  assert.equal(min.length, 1);
  assert.match(min[0]!.message, /lr_scheduler_kwargs\.min_lr or min_lr_rate/);
  assert.equal(min[0]!.text, 'cosine_with_min_lr');
  assert.equal(min[0]!.fix, 'Use the cosine schedule');
  assert.match(codes(spec(llama, '  lr_scheduler: warmup_stable_decay'), 'RFT840')[0]!.message, /num_decay_steps/);
  const ok = spec(llama, '  lr_scheduler: cosine_with_min_lr\n  lr_scheduler_kwargs:\n    min_lr_rate: 0.1');
  assert.deepEqual(codes(ok, 'RFT840'), []);
  assert.deepEqual(
    validateText(ok, { fileName: '/ws/finetune.yaml' }).diagnostics.filter((d) => d.severity === 'error'),
    [],
    'lr_scheduler_kwargs is a schema field',
  );
  assert.deepEqual(codes(spec(llama, '  lr_scheduler: warmup_stable_decay\n  lr_scheduler_kwargs: {num_decay_steps: 10}'), 'RFT840'), []);
});

test('reduce_lr_on_plateau needs an eval set and an eval strategy', () => {
  assert.match(codes(spec(llama, '  lr_scheduler: reduce_lr_on_plateau'), 'RFT840')[0]!.message, /needs data\.eval and an eval_strategy/);
  const withEval = '  train: data/train.jsonl\n  eval: data/eval.jsonl';
  assert.match(codes(spec(llama, '  lr_scheduler: reduce_lr_on_plateau\n  eval_strategy: "no"', withEval), 'RFT840')[0]!.message, /Set trainer\.eval_strategy/);
  assert.deepEqual(codes(spec(llama, '  lr_scheduler: reduce_lr_on_plateau', withEval), 'RFT840'), [], 'data.eval alone evaluates by steps');
  assert.deepEqual(codes(spec(llama, '  lr_scheduler: reduce_lr_on_plateau\n  eval_strategy: epoch', withEval), 'RFT840'), []);
});

test('sdpa on gpt-oss or Gemma-2 is a warning whose fix is auto', () => {
  for (const id of ['openai/gpt-oss-20b', 'google/gemma-2-9b-it']) {
    const got = codes(spec(`  id: ${id}\n  attn_implementation: sdpa`, '  max_steps: 10'), 'RFT841');
    assert.equal(got.length, 1, id);
    assert.equal(got[0]!.text, 'sdpa');
    assert.equal(got[0]!.fix, 'Set attn_implementation to auto');
  }
  assert.deepEqual(codes(spec('  id: google/gemma-2-9b-it\n  attn_implementation: auto', '  max_steps: 10'), 'RFT841'), []);
  assert.deepEqual(codes(spec('  id: google/gemma-3-4b-it\n  attn_implementation: sdpa', '  max_steps: 10'), 'RFT841'), []);
  assert.deepEqual(codes(spec(`${llama}\n  attn_implementation: sdpa`, '  max_steps: 10'), 'RFT841'), []);
});

test('an unknown trainer key is said to be passed through, not ignored', () => {
  const d = validateText(spec(llama, '  use_liger_kernel: true'), { fileName: '/ws/finetune.yaml' }).diagnostics.find((x) => x.code === 'RFT100');
  assert.ok(d, 'unknown key reported');
  assert.doesNotMatch(d.message, /ignored/);
  assert.match(d.message, /passes it to TrainingArguments/);
  const top = validateText(spec(llama, '  max_steps: 3') + 'colour: blue\n', { fileName: '/ws/finetune.yaml' }).diagnostics.find((x) => x.code === 'RFT100');
  assert.match(top!.message, /it is ignored/, 'elsewhere an unknown key is ignored, and says so');
});
