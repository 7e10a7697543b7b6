// Issue 31.8: method dpo/orpo in the run spec. The validator accepts it with preference rows, and says which
// method a file's rows belong to (RFT850, as the runner stops on them); the VRAM estimate takes the base method
// (preference.base_method) with chosen and rejected in one batch, and the run length counts both sequences and
// DPO's reference pass.
import { looseRunSpec } from '../../../src/core/config/runSpecDefaults';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateText } from '../../../src/core/config/validate';
import { nodeFiles } from '../../../src/core/config/nodeFiles';
import { parseConfigText } from '../../../src/core/config/parse';
import { estimateRunSpec } from '../../../src/core/config/runSpecEstimate';
import { runLength } from '../../../src/core/runs/cost/runLength';

const spec = (method: string, extra = ''): string => `version: 1
model:
  id: meta-llama/Llama-3.1-8B-Instruct
method: ${method}
${extra}data:
  train: data.jsonl
  max_seq_length: 1024
trainer:
  max_steps: 100
  per_device_batch_size: 2
target:
  provider: ssh
  host: gpu-box
  gpu: A100-80GB
`;
const PREF = '{"prompt":"Capital of France?","chosen":"Paris.","rejected":"Rome."}\n';
const CHAT_PREF =
  JSON.stringify({
    chosen: [
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello!' },
    ],
    rejected: [
      { from: 'human', value: 'Hi' },
      { from: 'gpt', value: 'No.' },
    ],
  }) + '\n';
const SFT = '{"prompt":"Capital of France?","completion":"Paris."}\n';

function diagnostics(text: string, data: string): { code: string; severity: string; message: string }[] {
  const dir = mkdtempSync(join(tmpdir(), 'rft-pref-'));
  try {
    writeFileSync(join(dir, 'data.jsonl'), data);
    return validateText(text, { fileName: join(dir, 'finetune.yaml'), files: nodeFiles }).diagnostics.map((d) => ({
      code: d.code,
      severity: d.severity,
      message: d.message,
    }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const errors = (ds: { severity: string }[]): unknown[] => ds.filter((d) => d.severity === 'error');

test('dpo and orpo with plain or conversational preference rows validate without errors', () => {
  for (const method of ['dpo', 'orpo'])
    for (const data of [PREF, CHAT_PREF]) {
      const ds = diagnostics(spec(method, 'preference:\n  base_method: qlora\n  beta: 0.1\n'), data);
      assert.deepEqual(errors(ds), [], `${method}: ${JSON.stringify(ds)}`);
    }
});

test('RFT850: preference rows under an SFT method, and SFT rows under dpo, are what the run would stop on', () => {
  const sft = diagnostics(spec('qlora'), PREF).filter((d) => d.code === 'RFT850');
  assert.equal(sft.length, 1);
  assert.match(sft[0]!.message, /preference rows.*method dpo or orpo/);
  const dpo = diagnostics(spec('dpo'), SFT).filter((d) => d.code === 'RFT850');
  assert.equal(dpo.length, 1);
  assert.match(dpo[0]!.message, /method dpo trains on preference rows/);
});

test('preference.base_method and beta are checked by the schema', () => {
  const bad = (extra: string): string[] =>
    diagnostics(spec('dpo', extra), PREF)
      .filter((d) => d.severity === 'error')
      .map((d) => d.message);
  assert.deepEqual(bad('preference:\n  beta: 0.5\n'), []);
  assert.equal(bad('preference:\n  base_method: full\n').length, 1);
  assert.equal(bad('preference:\n  beta: -1\n').length, 1);
});

test('VRAM estimate: dpo is its base method with two sequences per example (the reference is the adapter-disabled base)', () => {
  const est = (text: string) => estimateRunSpec(parseConfigText(text, 'yaml').root, 'finetune.yaml', undefined)!;
  const dpo = est(spec('dpo', 'preference:\n  base_method: qlora\n'));
  const qlora = est(spec('qlora').replace('per_device_batch_size: 2', 'per_device_batch_size: 4'));
  assert.equal(dpo.input.method, 'qlora');
  assert.equal(dpo.input.batch, 4);
  assert.ok(dpo.estimate.totalGib > 0);
  assert.equal(dpo.estimate.totalGib, qlora.estimate.totalGib, 'no second copy of the weights for the reference');
  assert.equal(est(spec('orpo')).input.method, 'lora-bf16', 'the default base is a 16-bit one, as the runner');
});

test('run length: dpo counts chosen, rejected and the reference pass; orpo both sequences', () => {
  const len = (method: string): number => {
    const r = runLength({
      spec: looseRunSpec({ method, trainer: { max_steps: 100, per_device_batch_size: 2 }, data: { max_seq_length: 1024 } }),
      specDir: '/',
      gpu: 'A100-80GB',
      gpuCount: 1,
      params: 8e9,
      countExamples: () => undefined,
    });
    assert.ok(r.known);
    return r.hours;
  };
  const base = len('lora-bf16');
  assert.ok(Math.abs(len('orpo') / base - 2) < 1e-9);
  assert.ok(Math.abs(len('dpo') / base - 8 / 3) < 1e-9);
});

test('RFT812 under dpo: a 4-bit quantization section asks for preference.base_method qlora, never for another method', () => {
  const ds = diagnostics(spec('dpo', 'quantization:\n  load_in_4bit: true\n'), PREF).filter((d) => d.code === 'RFT812');
  assert.equal(ds.length, 1);
  assert.match(ds[0]!.message, /preference\.base_method/);
  assert.deepEqual(
    diagnostics(spec('dpo', 'preference:\n  base_method: qlora\nquantization:\n  load_in_4bit: true\n'), PREF).filter((d) => d.code === 'RFT812'),
    [],
  );
});
