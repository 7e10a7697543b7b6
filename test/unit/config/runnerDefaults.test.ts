// Issue 32.3: one source of defaults. The estimator (VRAM, run length, cost) and the runner must assume the same
// values for what a run spec leaves unset. The runner's side is asked of the runner itself: python3 normalises a bare
// spec with remote_finetune/spec.py and turns it into LoRA, 4-bit and TrainingArguments settings with trainer_plan.py,
// as the host does; the estimator's side is what runSpecEstimate.ts and runLength.ts assume for the same spec.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseConfigText } from '../../../src/core/config/parse';
import { estimateRunSpec } from '../../../src/core/config/runSpecEstimate';
import { RUNNER_DEFAULTS } from '../../../src/core/runs/cost/runLength';

const ROOT = join(__dirname, '../../..');
const BARE = { version: 1, model: { id: 'mistralai/Mistral-7B-v0.1' }, data: { train: 'train.jsonl' }, target: { provider: 'ssh', gpu: 'H200' } };

interface RunnerSide {
  method: string;
  four_bit: boolean;
  double_quant: boolean;
  r: number;
  alpha: number;
  target_modules: string | string[];
  optim: string;
  gradient_checkpointing: boolean;
  batch: number;
  accumulation: number;
  epochs: number;
  bf16: boolean;
  max_seq_length: number;
}

function runnerSide(): RunnerSide {
  const py = `
import json, sys
sys.path.insert(0, "python-runner")
from remote_finetune.spec import normalise, get
from remote_finetune.trainer_plan import lora_kwargs, quantization_kwargs, training_args_kwargs
spec = normalise(json.loads(sys.argv[1]))
fields = ["output_dir", "per_device_train_batch_size", "gradient_accumulation_steps", "num_train_epochs", "optim",
          "gradient_checkpointing", "gradient_checkpointing_kwargs", "bf16", "fp16", "eval_strategy", "report_to"]
kw = training_args_kwargs(spec, "/tmp/o", fields, has_eval=False, report_to=[], bnb_installed=True, warn=lambda *a: None)
lk = lora_kwargs(spec)
q = quantization_kwargs(spec) or {}
print(json.dumps({"method": spec["method"], "four_bit": q.get("load_in_4bit") is True,
                  "double_quant": q.get("bnb_4bit_use_double_quant") is True, "r": lk["r"], "alpha": lk["lora_alpha"],
                  "target_modules": lk["target_modules"], "optim": kw["optim"],
                  "gradient_checkpointing": kw.get("gradient_checkpointing") is True,
                  "batch": kw["per_device_train_batch_size"], "accumulation": kw["gradient_accumulation_steps"],
                  "epochs": kw["num_train_epochs"], "bf16": kw["bf16"], "max_seq_length": get(spec, "data.max_seq_length")}))
`;
  const r = spawnSync('python3', ['-c', py, JSON.stringify(BARE)], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(r.status, 0, `python3 could not ask the runner: ${r.error?.message ?? r.stderr}`);
  return JSON.parse(r.stdout) as RunnerSide;
}

test('defaults: the estimate of a bare spec assumes what the runner trains (method, 4-bit, LoRA r and targets, optimizer, checkpointing, batch, accumulation, sequence, epochs, precision)', () => {
  const runner = runnerSide();
  const e = estimateRunSpec(parseConfigText(JSON.stringify(BARE), 'json').root, 'finetune.json', undefined)!;
  const estimator = {
    method: e.input.method,
    four_bit: e.input.method === 'qlora',
    double_quant: e.input.doubleQuant,
    r: e.input.loraR,
    alpha: RUNNER_DEFAULTS.loraAlpha,
    target_modules: e.input.loraTargets,
    optim: e.input.optimizer,
    gradient_checkpointing: e.input.gradientCheckpointing,
    batch: e.input.batch,
    accumulation: e.accumulation,
    epochs: RUNNER_DEFAULTS.epochs,
    bf16: RUNNER_DEFAULTS.precision === 'bf16',
    max_seq_length: e.input.seqLen,
  };
  assert.deepEqual(estimator, runner);
  // The run length (cost before launch) reads the same table.
  assert.equal(RUNNER_DEFAULTS.perDeviceBatch, runner.batch);
  assert.equal(RUNNER_DEFAULTS.gradientAccumulation, runner.accumulation);
  assert.equal(RUNNER_DEFAULTS.maxSeqLength, runner.max_seq_length);
  assert.equal(RUNNER_DEFAULTS.gradientCheckpointing, runner.gradient_checkpointing);
});

test("defaults: with no lora.target_modules the estimate counts the adapters the runner trained (Mistral-7B: 41,943,040 on the H200, not q/v's 6.8M)", () => {
  // The runner's own count of trainable parameters for Mistral-7B with its default LoRA (r 16, all linear layers),
  // from its `started` event in bench/gpu/vram-nvidia-h200-2026-11-26.json.
  const file = JSON.parse(readFileSync(join(ROOT, 'bench/gpu/vram-nvidia-h200-2026-11-26.json'), 'utf8')) as {
    cases: { model: string; method: string; lora_r: number; lora_targets: string; events: { started: { trainable_params: number } } }[];
  };
  const measured = file.cases.find((c) => c.model === 'mistral-7b' && c.method === 'qlora')!;
  assert.equal(measured.lora_targets, 'all-linear');
  assert.equal(measured.lora_r, 16);
  const e = estimateRunSpec(parseConfigText(JSON.stringify(BARE), 'json').root, 'finetune.json', undefined)!;
  assert.equal(e.estimate.trainableParams, measured.events.started.trainable_params);
});
