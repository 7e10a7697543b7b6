import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { validateText } from '../../../src/core/config/validate';
import { nodeFiles } from '../../../src/core/config/nodeFiles';
import { LineIndex } from '../../../src/core/config/text';
import type { Fix } from '../../../src/core/config/types';

const planted = resolve(__dirname, '../../fixtures/config/planted');

function check(name: string): Array<[string, number, number, number, number]> {
  const file = join(planted, name);
  const text = readFileSync(file, 'utf8');
  const li = new LineIndex(text);
  return validateText(text, { fileName: file, files: nodeFiles }).diagnostics.map((d) => {
    const s = li.positionAt(d.start);
    const e = li.positionAt(d.end);
    return [d.code, s.line + 1, s.character + 1, e.line + 1, e.character + 1];
  });
}

// Each planted file gives exactly these diagnostics (code, 1-based start line/col, end line/col);
// the VS Code host suite (test/vscode/suite/config.test.ts) checks the same table.
const EXPECTED = JSON.parse(readFileSync(resolve(__dirname, '../../fixtures/config/planted-expected.json'), 'utf8')) as Record<
  string,
  Array<[string, number, number, number, number]>
>;

test('planted errors: every planted file gives exactly the expected codes and ranges', () => {
  const files = readdirSync(planted);
  assert.deepEqual(files.sort(), Object.keys(EXPECTED).sort());
  for (const [name, want] of Object.entries(EXPECTED)) assert.deepEqual(check(name), want, name);
});

function applyFix(text: string, fix: Fix): string {
  const edits = [...fix.edits].sort((a, b) => b.start - a.start);
  let out = text;
  for (const e of edits) out = out.slice(0, e.start) + e.newText + out.slice(e.end);
  return out;
}

test('quick fixes: each fixable planted problem is fixed by its preferred fix and the code goes away', () => {
  for (const name of Object.keys(EXPECTED)) {
    const file = join(planted, name);
    let text = readFileSync(file, 'utf8');
    for (let round = 0; round < 20; round++) {
      const ds = validateText(text, { fileName: file, files: nodeFiles }).diagnostics;
      const d = ds.find((x) => x.fixes?.some((f) => f.preferred));
      if (!d) break;
      const fix = d.fixes!.find((f) => f.preferred)!;
      const before = ds.filter((x) => x.code === d.code).length;
      text = applyFix(text, fix);
      const after = validateText(text, { fileName: file, files: nodeFiles }).diagnostics.filter((x) => x.code === d.code).length;
      assert.ok(after < before, `${name}: '${fix.title}' did not remove ${d.code}\n${text}`);
    }
  }
});

test('quick fix text: bf16 on a T4 becomes fp16; the unknown key is renamed; the env duplicate is removed', () => {
  const file = join(planted, 'finetune.yaml');
  const text = readFileSync(file, 'utf8');
  const ds = validateText(text, { fileName: file, files: nodeFiles }).diagnostics;
  const bf16 = ds.find((d) => d.code === 'RFT801' && text.slice(d.start, d.end) === 'bf16')!;
  assert.match(applyFix(text, bf16.fixes![0]!), /\n {2}precision: fp16\n/);
  const alpah = ds.find((d) => d.code === 'RFT100')!;
  assert.match(alpah.message, /Did you mean 'alpha'\?/);
  assert.match(applyFix(text, alpah.fixes![0]!), /\n {2}alpha: 32\n/);
  const env = join(planted, '.env');
  const et = readFileSync(env, 'utf8');
  const dup = validateText(et, { fileName: env }).diagnostics.find((d) => d.code === 'RFT601')!;
  assert.doesNotMatch(applyFix(et, dup.fixes![0]!), /BATCH_SIZE=0/);
});

test('missing required key points at its parent mapping, never at offset 0', () => {
  const text = '# run spec\nversion: 1\nmodel:\n  id: x/y-7B\nmethod: qlora\ndata:\n  train: a/b\ntarget:\n  provider: ssh\n';
  const ds = validateText(text, { fileName: 'finetune.yaml' }).diagnostics;
  const miss = ds.find((d) => d.code === 'RFT101')!;
  assert.ok(miss, JSON.stringify(ds));
  assert.equal(text.slice(miss.start, miss.end), 'target');
  assert.match(miss.message, /'gpu'/);
  const top = validateText('# c\nmodel:\n  id: a/b\nmethod: qlora\ndata:\n  train: x\ntarget:\n  provider: ssh\n  gpu: T4\n', {
    fileName: 'finetune.yaml',
  }).diagnostics.find((d) => d.message.includes("'version'"))!;
  assert.ok(top.start > 0);
  assert.equal(top.code, 'RFT101');
});

test('a file of no known kind gets no diagnostics; the examples and the seed configs validate clean', () => {
  assert.deepEqual(validateText('foo: [1, 2\n', { fileName: 'random.yaml' }).diagnostics, []);
  assert.deepEqual(validateText('{"name": "pkg"}', { fileName: 'package.json' }).diagnostics, []);
  const ex = resolve(__dirname, '../../../examples');
  const walk = (d: string): string[] =>
    readdirSync(d, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(d, e.name)) : /\.(ya?ml|json)$|^\.env/.test(e.name) ? [join(d, e.name)] : [],
    );
  const files = walk(ex);
  assert.ok(files.length >= 10);
  for (const f of files) {
    const r = validateText(readFileSync(f, 'utf8'), { fileName: f, files: nodeFiles });
    assert.ok(r.kind, `${f}: kind not recognised`);
    assert.deepEqual(
      r.diagnostics.map((d) => `${d.code} ${d.message}`),
      [],
      f,
    );
  }
});

test('hardware rules: FlashAttention-2 on a V100, fp8 on an A10G, QLoRA + 4-bit FA2 without a 16-bit compute dtype', () => {
  const spec = (gpu: string, extra: string): string =>
    `version: 1\nmodel:\n  id: meta-llama/Llama-3.1-8B\n  attn_implementation: flash_attention_2\nmethod: qlora\n${extra}data:\n  train: a/b\ntrainer:\n  gradient_checkpointing: true\n  precision: fp16\ntarget:\n  provider: ssh\n  gpu: ${gpu}\n`;
  const codes = (t: string): string[] => validateText(t, { fileName: 'finetune.yaml' }).diagnostics.map((d) => d.code);
  assert.ok(codes(spec('V100', 'quantization:\n  compute_dtype: float16\n')).includes('RFT811'));
  assert.ok(codes(spec('A100-40GB', '')).includes('RFT802'));
  assert.ok(!codes(spec('A100-40GB', 'quantization:\n  compute_dtype: bfloat16\n')).includes('RFT802'));
  const acc = validateText('distributed_type: MULTI_GPU\nmixed_precision: fp8\nnum_processes: 2\n', {
    fileName: 'accelerate.yaml',
    gpu: { id: 'A10G', name: 'A10G', vramGb: 24, computeCapability: 8.6, bf16: true, flashAttention2: true, fp8: false, pricePerHourUsd: 1 },
  });
  assert.deepEqual(
    acc.diagnostics.map((d) => d.code),
    ['RFT816'],
  );
});
