import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { planRun, fitOn, collectEnv, dropUnneededSecrets, oomAdvice, readEnvFileWithin, outputDestinations } from '../../../src/core/runs/lifecycle/runPlan';
import { nodeFiles } from '../../../src/core/config/nodeFiles';
import { finishedMessage, statusBarText, runDescription } from '../../../src/core/runs/view/runSummary';
import type { RunRecord } from '../../../src/core/runs/store/runRecord';
import { typedSpec } from '../../support/typedSpec';

const REPO = resolve(__dirname, '../../..');

test('runPlan: an example spec plans clean, with its folder, env file and teardown', () => {
  const specPath = join(REPO, 'examples/t4-qlora/finetune.yaml');
  const plan = planRun(specPath, readFileSync(specPath, 'utf8'), nodeFiles);
  assert.deepEqual(plan.errors, []);
  assert.equal(plan.workspaceDir, join(REPO, 'examples/t4-qlora'));
  assert.equal(plan.ownScript, false);
  assert.ok(['terminate', 'stop', 'keep'].includes(plan.teardown.policy));
  assert.equal(typeof plan.spec.version, 'number');
});

test('runPlan: errors block (bf16 on a T4), and fit is given for A100 40 and 80 GB', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-plan-'));
  const spec =
    'version: 1\nname: big\nmodel:\n  id: meta-llama/Llama-2-13b-hf\nmethod: full\ndata:\n  train: data.jsonl\ntrainer:\n  precision: bf16\n  per_device_batch_size: 8\ntarget:\n  provider: ssh\n  host: gpu\n  gpu: T4\n';
  writeFileSync(join(dir, 'finetune.yaml'), spec);
  writeFileSync(join(dir, 'data.jsonl'), '{"text":"x"}\n');
  const plan = planRun(join(dir, 'finetune.yaml'), spec, nodeFiles);
  assert.ok(
    plan.errors.some((d) => /bf16|fp16/i.test(d.message)),
    JSON.stringify(plan.errors),
  );
  const fits = fitOn(plan, ['A100-40GB', 'A100-80GB'], nodeFiles);
  assert.equal(fits.length, 2);
  assert.match(fits[0]!.label, /of 40 GB on A100-40GB/);
  assert.equal(fits[0]!.fits, false, 'a 13B full fine-tune does not fit 40 GB');
  // An OOM on that GPU comes with the estimator's cheapest fixes.
  const advice = oomAdvice(join(dir, 'finetune.yaml'), 'A100-40GB', nodeFiles);
  assert.match(advice ?? '', /Cheapest fixes: .+/);
});

test("runPlan: checked for the GPU the command names, the spec's own T4 rules do not block a run on an A100", () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-plan-a100-'));
  const spec =
    'version: 1\nname: t4spec\nmodel:\n  id: meta-llama/Llama-3.2-1B\nmethod: lora-bf16\ndata:\n  train: data.jsonl\ntrainer:\n  precision: bf16\ntarget:\n  provider: ssh\n  host: gpu\n  gpu: T4\n';
  writeFileSync(join(dir, 'finetune.yaml'), spec);
  writeFileSync(join(dir, 'data.jsonl'), '{"text":"x"}\n');
  const onT4 = planRun(join(dir, 'finetune.yaml'), spec, nodeFiles);
  assert.ok(
    onT4.errors.some((d) => /T4/.test(d.message) && /bf16/i.test(d.message)),
    JSON.stringify(onT4.errors),
  );
  const onA100 = planRun(join(dir, 'finetune.yaml'), spec, nodeFiles, { gpu: 'A100-40GB' });
  assert.deepEqual(
    onA100.errors.filter((d) => /bf16|T4/i.test(d.message)),
    [],
  );
});

test('collectEnv: the env file first, secrets from the store win; an empty secret is not written', () => {
  const env = collectEnv('HF_TOKEN=from-file\nBATCH_SIZE=4\n# c\n', { HF_TOKEN: 'from-store', WANDB_API_KEY: undefined });
  assert.deepEqual(env, { HF_TOKEN: 'from-store', BATCH_SIZE: '4' });
});

function rec(patch: Partial<RunRecord>): RunRecord {
  return {
    id: 'r',
    name: 'demo',
    specPath: '',
    specHash: '',
    createdAt: '',
    updatedAt: '',
    status: 'running',
    provider: 'lambda',
    ...patch,
  };
}

test('runSummary: status bar, view description and the end-of-run sentence', () => {
  assert.equal(statusBarText(rec({ lastStep: 120, lastLoss: 1.23456, costUsd: 0.5 }), 87.4), '$(pulse) demo · step 120 · loss 1.235 · GPU 87% · $0.50');
  assert.equal(runDescription(rec({ origin: 'found' })), 'running · started elsewhere');
  const ok = finishedMessage({ record: rec({ status: 'completed', artifactsDir: '/w/outputs/r/adapter', costUsd: 1.2, finishedAction: 'terminated' }) });
  assert.deepEqual(ok, { text: 'demo completed; adapter downloaded to /w/outputs/r/adapter. Cost $1.20. Instance terminated.', error: false });
  const bad = finishedMessage(
    { record: rec({ status: 'failed' }), failure: { signature: 'cuda-oom', message: 'CUDA out of memory', hint: 'Lower the batch.' } },
    'Cheapest fixes: QLoRA.',
  );
  assert.equal(bad.error, true);
  assert.match(bad.text, /demo failed\. CUDA out of memory Fix: Lower the batch\. Cheapest fixes: QLoRA\./);
});

test('env_file: only a file really inside the workspace folder is read (../, absolute paths and symlinks out are refused)', () => {
  const plan = planRun;
  const home = mkdtempSync(join(tmpdir(), 'rft-envfile-'));
  mkdirSync(join(home, '.aws'));
  writeFileSync(join(home, '.aws', 'credentials'), 'AWS_SECRET_ACCESS_KEY=not-for-the-host\n');
  const ws = join(home, 'projects', 'ft');
  mkdirSync(ws, { recursive: true });
  writeFileSync(join(ws, '.env'), 'HF_TOKEN=hf_ok\n');
  symlinkSync(join(home, '.aws', 'credentials'), join(ws, 'linked.env'));
  for (const ref of ['../../.aws/credentials', join(home, '.aws', 'credentials'), 'linked.env']) {
    const p = plan(join(ws, 'finetune.yaml'), `version: 1\nname: t\nenv_file: ${ref}\ncommand: python train.py\ntarget:\n  provider: ssh\n`, {
      read: () => ({ missing: true }),
      exists: () => false,
    });
    assert.ok(p.envFile, 'the spec names the file (the attack: before, its text was read and sent)');
    const r = readEnvFileWithin(p.envFile!, ws);
    assert.ok('error' in r && /outside the workspace folder/.test(r.error), `${ref}: ${JSON.stringify(r)}`);
  }
  const ok = readEnvFileWithin(join(ws, '.env'), ws);
  assert.ok('text' in ok && ok.text.includes('HF_TOKEN'));
  assert.ok('error' in readEnvFileWithin(join(ws, 'missing.env'), ws));
});

test('secrets go only where the run uses them: no W&B key with wandb.enabled false, no HF token without the Hub', () => {
  const env = { WANDB_API_KEY: 'w'.repeat(40), HF_TOKEN: 'hf_x', HUGGINGFACE_TOKEN: 'hf_y', OTHER: '1' };
  const local = typedSpec({ method: 'lora-bf16', model: { id: '/models/llama' }, data: { train: 'data/train.jsonl' }, wandb: { enabled: false } });
  assert.deepEqual(dropUnneededSecrets(env, local), { env: { OTHER: '1' }, dropped: ['WANDB_API_KEY', 'HF_TOKEN', 'HUGGINGFACE_TOKEN'] });
  const hubModel = typedSpec({ model: { id: 'meta-llama/Llama-3.1-8B' }, data: { train: 'data/train.jsonl' } });
  assert.deepEqual(Object.keys(dropUnneededSecrets(env, hubModel).env).sort(), ['HF_TOKEN', 'HUGGINGFACE_TOKEN', 'OTHER', 'WANDB_API_KEY']);
  assert.ok('HF_TOKEN' in dropUnneededSecrets(env, typedSpec({ model: { id: './m' }, data: { train: 'tatsu-lab/alpaca' } })).env, 'a hub dataset');
  assert.ok('HF_TOKEN' in dropUnneededSecrets(env, typedSpec({ model: { id: './m' }, outputs: { upload: 'hf://me/adapter' } })).env, 'a hub upload');
  assert.ok('HF_TOKEN' in dropUnneededSecrets(env, typedSpec({ command: 'python train.py' })).env, 'an own script may download anything');
});

test('the start confirmation names where the host sends outputs: the upload and the checkpoint copies', () => {
  assert.deepEqual(outputDestinations(typedSpec({ outputs: { dir: 'out' } })), []);
  assert.deepEqual(outputDestinations(typedSpec({ outputs: { upload: 'hf://me/adapter', checkpoints: 's3://b/ckpt' } })), [
    'The adapter is uploaded to hf://me/adapter from the host.',
    'Checkpoints are copied to s3://b/ckpt from the host while it trains.',
  ]);
});
