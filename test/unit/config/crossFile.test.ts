import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { validateText } from '../../../src/core/config/validate';
import { nodeFiles } from '../../../src/core/config/nodeFiles';

function workspace(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'rft-config-'));
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(dir, rel, '..'), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  return dir;
}

const spec = (extra: string): string => `version: 1
model:
  id: meta-llama/Llama-3.1-8B
method: qlora
quantization:
  load_in_4bit: true
  compute_dtype: bfloat16
data:
  train: data/train.jsonl
trainer:
  per_device_batch_size: 2
  gradient_accumulation: 4
  precision: fp16
  gradient_checkpointing: true
${extra}target:
  provider: ec2
  gpu: A100-40GB
  gpu_count: 8
`;

const codes = (dir: string, rel: string, text: string): string[] =>
  validateText(text, { fileName: join(dir, rel), files: nodeFiles }).diagnostics.map((d) => d.code);

test('run spec + the files it names: process counts, mixed precision, ZeRO-3 with QLoRA, DeepSpeed batch, missing files', () => {
  const acc = 'distributed_type: DEEPSPEED\nmixed_precision: bf16\nnum_processes: 2\ndeepspeed_config:\n  zero_stage: 3\n';
  const ds = '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4, "zero_optimization": {"stage": 2}}';
  const dir = workspace({ 'data/train.jsonl': '{"text": "x"}\n', 'accelerate/zero3.yaml': acc, 'ds.json': ds });
  try {
    const launcher = 'launcher:\n  type: accelerate\n  config_file: accelerate/zero3.yaml\n  deepspeed: ds.json\n  num_processes: 2\n';
    const got = codes(dir, 'finetune.yaml', spec(launcher));
    for (const c of ['RFT805', 'RFT809', 'RFT803', 'RFT806']) assert.ok(got.includes(c), `${c} missing from ${got.join(' ')}`);
    assert.equal(got.filter((c) => c === 'RFT805').length, 2, 'launcher.num_processes and the accelerate config both disagree with 8 GPUs');
    const missing = codes(dir, 'finetune.yaml', spec('launcher:\n  type: accelerate\n  config_file: nope.yaml\n  num_processes: 8\nenv_file: .env\n'));
    assert.deepEqual(missing.filter((c) => c === 'RFT813').length, 2);
    const ok = codes(dir, 'finetune.yaml', spec('launcher:\n  type: accelerate\n  num_processes: 8\n'));
    assert.deepEqual(ok, []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an accelerate config takes the GPU from the finetune.yaml beside it; a VRAM overflow is an error with fixes', () => {
  const dir = workspace({ 'finetune.yaml': spec('').replace('A100-40GB', 'T4').replace('gpu_count: 8', 'gpu_count: 1').replace('qlora', 'lora-bf16') });
  try {
    const accCodes = codes(dir, 'accelerate_configs/single.yaml', "distributed_type: 'NO'\nmixed_precision: bf16\nnum_processes: 1\n");
    assert.deepEqual(accCodes, ['RFT801']);
    const r = validateText(
      spec('')
        .replace('A100-40GB', 'T4')
        .replace('gpu_count: 8', 'gpu_count: 1')
        .replace('method: qlora', 'method: full')
        .replace('provider: ec2', 'provider: gcp'),
      {
        fileName: join(dir, 'finetune.yaml'),
        files: nodeFiles,
      },
    );
    const vram = r.diagnostics.find((d) => d.code === 'RFT901');
    assert.ok(vram, r.diagnostics.map((d) => d.code).join(' '));
    assert.match(vram.message, /does not fit the 16 GB of T4/);
    // On GCP (EC2 sells no one-GPU machine above 24 GB, providerFixes.test.ts) a single A100-80GB is the larger GPU.
    assert.ok((vram.fixes ?? []).length > 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('.env: real-looking tokens in a file git tracks give RFT607; untracked or placeholders do not', () => {
  const dir = workspace({ '.env': 'HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123456789\n', 'other/.env': 'HF_TOKEN=hf_your_token_here\n' });
  try {
    execFileSync('git', ['init', '-q'], { cwd: dir });
    assert.deepEqual(codes(dir, '.env', 'HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123456789\n'), []);
    execFileSync('git', ['add', '.env', 'other/.env'], { cwd: dir });
    assert.deepEqual(codes(dir, '.env', 'HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123456789\n'), ['RFT607']);
    // A placeholder is no token to leak (no RFT607), but it is a token never filled in (RFT611, issue 39.8).
    assert.deepEqual(codes(dir, 'other/.env', 'HF_TOKEN=hf_your_token_here\n'), ['RFT611']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('accelerate: a bare NO is a YAML 1.1 boolean to PyYAML; the quick fix quotes it', () => {
  const text = 'distributed_type: NO\nmixed_precision: bf16\n';
  const d = validateText(text, { fileName: 'accelerate_config.yaml' }).diagnostics;
  assert.deepEqual(
    d.map((x) => x.code),
    ['RFT817'],
  );
  assert.equal(d[0]!.fixes![0]!.edits[0]!.newText, "'NO'");
});

test("the seeds' own configs (accelerate, sweep, .env, hyperparameters, LoRA, bitsandbytes) validate clean", () => {
  const dir = resolve(__dirname, '../../fixtures/config/seeds');
  for (const rel of [
    'accelerate_configs/single_gpu.yaml',
    'accelerate_configs/multi_gpu.yaml',
    'accelerate_configs/deepspeed_zero3.yaml',
    'wandb_sweep.yaml',
    '.env',
    'training_args.yaml',
  ]) {
    const r = validateText(readFileSync(join(dir, rel), 'utf8'), { fileName: join(dir, rel), files: nodeFiles });
    assert.ok(r.kind, rel);
    // The seed's .env is its README's example as copied (hf_your_token_here): its two tokens are warned (RFT611).
    assert.deepEqual(
      r.diagnostics.map((d) => `${d.code} ${d.message.split(' ')[0]}`),
      rel === '.env' ? ['RFT611 HUGGINGFACE_TOKEN', 'RFT611 WANDB_API_KEY'] : [],
      rel,
    );
  }
});

test('target.volume: fine on EC2, RFT820 on a provider without persistent volumes; bucket data needs no local file', () => {
  const dir = workspace({ 'data/train.jsonl': '{"text": "x"}\n' });
  try {
    const launcher = 'launcher:\n  type: accelerate\n  num_processes: 8\n';
    const onEc2 = spec(launcher).replace('  gpu_count: 8\n', '  gpu_count: 8\n  volume:\n    name: seed004\n    size_gb: 200\n');
    assert.deepEqual(codes(dir, 'finetune.yaml', onEc2), []);
    const onGcp = onEc2.replace('provider: ec2', 'provider: gcp');
    const d = validateText(onGcp, { fileName: join(dir, 'finetune.yaml'), files: nodeFiles }).diagnostics.filter((x) => x.code === 'RFT820');
    assert.equal(d.length, 1);
    assert.equal(d[0]!.severity, 'error');
    assert.match(d[0]!.message, /EC2 only .* not on gcp/);
    const fromBucket = spec(launcher).replace('train: data/train.jsonl', 'train: s3://corpus/train.jsonl');
    assert.deepEqual(codes(dir, 'finetune.yaml', fromBucket), [], 'an s3:// URI is not a missing local file');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("launcher.config_file naming one of the runner's own accelerate profiles is no missing file; the same name with .yaml is a path", () => {
  const ws = workspace({});
  const withFile = (v: string): string[] =>
    validateText(
      `version: 1\nmodel:\n  id: org/m-7B\nmethod: qlora\ndata:\n  train: org/d\nlauncher:\n  type: accelerate\n  config_file: ${v}\n  num_processes: 2\ntarget:\n  provider: ssh\n  gpu: A100-80GB\n  gpu_count: 2\n`,
      { fileName: join(ws, 'finetune.yaml'), files: nodeFiles },
    ).diagnostics.map((d) => d.code);
  for (const p of ['single_gpu', 'multi_gpu', 'deepspeed_zero2', 'deepspeed_zero3']) assert.ok(!withFile(p).includes('RFT813'), p);
  assert.ok(withFile('deepspeed_zero3.yaml').includes('RFT813'));
  rmSync(ws, { recursive: true, force: true });
});
