// Issue 39.4: fixes that fit the provider. A cloud spec's "larger GPU" is that cloud's machine at that cloud's price,
// the fix keeps target.instance_type a machine that holds the new GPU, and RFT824 flags an instance type that cannot.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateText } from '../../../src/core/config/validate';
import type { ConfigDiagnostic, TextEdit } from '../../../src/core/config/types';
import { allCodes } from '../../../src/core/config/codes';
import { GCP_GPU_SHAPES } from '../../../src/core/providers/gcp/catalog';

const spec = (model: string, target: string): string =>
  `version: 1\nname: fit\nmodel:\n  id: ${model}\nmethod: lora-bf16\ndata:\n  train: data/train.jsonl\ntarget:\n${target}\ntrainer:\n  precision: fp16\n`;

function diags(text: string, code: string): ConfigDiagnostic[] {
  return validateText(text, { fileName: '/ws/finetune.yaml' }).diagnostics.filter((d) => d.code === code);
}

function apply(text: string, edits: readonly TextEdit[]): string {
  return [...edits].sort((a, b) => b.start - a.start).reduce((t, e) => t.slice(0, e.start) + e.newText + t.slice(e.end), text);
}

test('GCP T4 spec that needs an A100: the larger-GPU fix quotes GCP’s a2-highgpu-1g price and moves instance_type off N1', () => {
  const text = spec('meta-llama/Llama-2-13b-hf', '  provider: gcp\n  gpu: T4\n  instance_type: n1-standard-4\n  zone: us-central1-a');
  const [d] = diags(text, 'RFT901');
  assert.ok(d, 'the 13B LoRA does not fit a T4');
  const fix = d.fixes?.find((f) => f.title.includes('a larger GPU'));
  assert.ok(fix, `no larger-GPU fix among ${JSON.stringify(d.fixes?.map((f) => f.title))}`);
  const a2 = GCP_GPU_SHAPES.find((s) => s.machineType === 'a2-highgpu-1g')!;
  assert.match(fix.title, new RegExp(`A100-40GB \\(40 GB, ~\\$${a2.onDemandPerHour.toFixed(2)}/h\\)`), fix.title);
  const after = apply(text, fix.edits);
  assert.match(after, /\n {2}gpu: A100-40GB\n {2}instance_type: a2-highgpu-1g\n/);
  assert.deepEqual(diags(after, 'RFT824'), [], 'the fixed spec has a machine that holds its GPU');
  assert.deepEqual(diags(after, 'RFT819'), []);
});

test('EC2 sells no single A100: a one-GPU EC2 spec is not offered one, and its L4/A10G fixes carry EC2 prices', () => {
  const text = spec('meta-llama/Llama-3.1-8B', '  provider: ec2\n  gpu: T4\n  instance_type: g4dn.xlarge');
  const [d] = diags(text, 'RFT901');
  assert.ok(d);
  const titles = (d.fixes ?? []).map((f) => f.title).join(' | ');
  assert.doesNotMatch(titles, /A100/, titles);
  const fix = d.fixes?.find((f) => f.title.includes('a larger GPU'));
  assert.ok(fix, titles);
  assert.match(fix.title, /a larger GPU: L4 \(24 GB, ~\$0\.80\/h\)/);
  assert.match(apply(text, fix.edits), /\n {2}gpu: L4\n {2}instance_type: g6\.xlarge\n/);
});

test('RFT824: GCP N1 cannot take an A100; the fix names the A2 machine and the fixed spec is clean', () => {
  const text = spec('TinyLlama/TinyLlama-1.1B-Chat-v1.0', '  provider: gcp\n  gpu: A100-40GB\n  instance_type: n1-standard-4');
  const found = diags(text, 'RFT824');
  assert.equal(found.length, 1, JSON.stringify(found));
  const d = found[0]!;
  assert.equal(text.slice(d.start, d.end), 'n1-standard-4');
  assert.equal(d.severity, 'error');
  assert.match(d.message, /n1-standard-4 cannot take an A100-40GB: GCP launches it with T4,/);
  assert.equal(d.fixes?.[0]?.title, 'Change to a2-highgpu-1g (1 × A100-40GB on GCP)');
  assert.deepEqual(diags(apply(text, d.fixes![0]!.edits), 'RFT824'), []);
});

test('RFT824: EC2 families (a g4dn size the catalog lacks still holds T4s only), GPU counts, and what is left alone', () => {
  assert.match(
    diags(spec('x/y-1b', '  provider: ec2\n  gpu: A10G\n  instance_type: g4dn.16xlarge'), 'RFT824')[0]?.message ?? '',
    /g4dn\.16xlarge cannot take an A10G: EC2 machines of its family hold T4,/,
  );
  assert.deepEqual(diags(spec('x/y-1b', '  provider: ec2\n  gpu: A10G\n  instance_type: g5.2xlarge'), 'RFT824'), []);
  const count = diags(spec('x/y-1b', '  provider: gcp\n  gpu: A100-40GB\n  gpu_count: 2\n  instance_type: a2-highgpu-1g'), 'RFT824');
  assert.match(count[0]?.message ?? '', /a2-highgpu-1g has 1 × A100-40GB, and target\.gpu_count is 2/);
  assert.equal(count[0]?.fixes?.[0]?.title, 'Change to a2-highgpu-2g (2 × A100-40GB on GCP)');
  // A family the catalogs do not list, and an own host's instance_type, are not ours to judge.
  assert.deepEqual(diags(spec('x/y-1b', '  provider: ec2\n  gpu: A10G\n  instance_type: m5.xlarge'), 'RFT824'), []);
  assert.deepEqual(diags(spec('x/y-1b', '  provider: ssh\n  host: box\n  gpu: A10G\n  instance_type: g4dn.xlarge'), 'RFT824'), []);
  const lambda = diags(spec('x/y-1b', '  provider: lambda\n  gpu: H100\n  instance_type: gpu_1x_a10'), 'RFT824');
  assert.equal(lambda[0]?.severity, 'warning');
  assert.equal(lambda[0]?.fixes?.[0]?.title, 'Change to gpu_1x_h100_pcie (1 × H100 on Lambda)');
  assert.ok(allCodes().some((c) => c.code === 'RFT824'));
});

test('RFT819: changing to a GPU the provider sells also changes an instance_type that cannot hold it', () => {
  const text = spec('x/y-1b', '  provider: gcp\n  gpu: A10G\n  instance_type: n1-standard-4');
  const d = diags(text, 'RFT819')[0];
  assert.ok(d);
  const fix = d.fixes![0]!;
  assert.equal(fix.title, 'Change to L4 (offered on GCP)');
  const after = apply(text, fix.edits);
  assert.match(after, /gpu: L4\n {2}instance_type: g2-standard-8\n/);
  assert.deepEqual([...diags(after, 'RFT819'), ...diags(after, 'RFT824')], []);
});

test('A GPU change with no machine of that count clears instance_type instead of leaving a wrong one', () => {
  // 2 × L4 on EC2 is no machine (g6 comes in 1, 4, 8): a fix to L4 at gpu_count 2 removes the type for the picker to choose.
  const text = spec('x/y-1b', '  provider: ec2\n  gpu: L4\n  gpu_count: 2\n  instance_type: g4dn.12xlarge');
  const d = diags(text, 'RFT824')[0];
  assert.ok(d, 'g4dn holds T4s, not L4s');
  assert.equal(d.fixes?.[0]?.title, 'Remove instance_type (the picker chooses a machine)');
  assert.doesNotMatch(apply(text, d.fixes![0]!.edits), /instance_type/);
});
