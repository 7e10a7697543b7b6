// Data named by URI is staged on the host, not through the laptop: a real OpenSSH server on loopback is the GPU
// host (its python3 is the training venv: real torch, transformers, peft, tensorboard), S3 is moto's server
// (PyPI moto[server], AWS's API implemented by others) reached from the host with AWS's own CLI. The built-in
// trainer trains a tiny model on data.train: s3://…/corpus that never was in the workspace, the size is reported
// before the copy, and report_to tensorboard writes event files in the run folder. The GPU is an nvidia-smi STAND-IN.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { startMoto } from '../../support/moto';
import type { Moto } from '../../support/moto';
import { runFinished, testRunManager, trustingConnectOptions } from '../../support/runHosts';
import { buildTinyModel, trainingPython } from '../../harness/trainingVenv';
import type { ConnectOptions } from '../../../src/core/ssh/session';
import { parseEventLine } from '../../../src/core/telemetry/events';
import type { RunEvent } from '../../../src/core/telemetry/events';

const REPO = resolve(__dirname, '../../..');
let sshd: Sshd;
let moto: Moto;
let awsBin: string;
let python: string;
let connectOptions: ConnectOptions;

before(async () => {
  python = trainingPython();
  moto = await startMoto();
  awsBin = join(execFileSync('bash', [join(REPO, 'scripts/ensure-moto.sh')], { encoding: 'utf8' }).trim(), 'bin');
  // The host's python3 is the training venv's; `aws` comes from the moto venv (after it, so python3 stays the venv's).
  sshd = await startSshd({ pathPrepend: [join(REPO, 'test/support/standins'), dirname(python), awsBin] });
  connectOptions = trustingConnectOptions([sshd]);
});
after(async () => {
  await sshd?.stop();
  await moto?.stop();
});

const AWS_ENV = { AWS_ACCESS_KEY_ID: 'testing', AWS_SECRET_ACCESS_KEY: 'testingSECRETkey0123456789', AWS_DEFAULT_REGION: 'us-east-1' };

function aws(...args: string[]): string {
  return execFileSync(join(awsBin, 'aws'), args, { encoding: 'utf8', env: { ...process.env, ...AWS_ENV, AWS_ENDPOINT_URL: moto.url } });
}

test('s3:// training data is staged on the host with its size first, then trained on; the laptop never holds it', { timeout: 420_000 }, async () => {
  const bucket = `corpus-${Date.now().toString(36)}`;
  aws('s3', 'mb', `s3://${bucket}`);
  const data = join(REPO, 'examples/demo-host-builtin-lora/data/train.jsonl');
  aws('s3', 'cp', data, `s3://${bucket}/corpus/train.jsonl`);
  const bytes = statSync(data).size;

  const ws = mkdtempSync(join(tmpdir(), 'rft-ws-'));
  buildTinyModel(python, join(ws, 'tiny-model'));
  cpSync(join(REPO, 'examples/demo-host-builtin-lora/finetune.yaml'), join(ws, 'finetune.yaml'));
  const spec = {
    version: 1,
    name: 'staged-data',
    model: { id: './tiny-model', attn_implementation: 'sdpa' },
    method: 'lora-bf16',
    data: { train: `s3://${bucket}/corpus`, text_field: 'text', max_seq_length: 64 },
    lora: { r: 8, alpha: 16, dropout: 0.0, target_modules: 'all-linear' },
    trainer: { max_steps: 6, per_device_batch_size: 4, learning_rate: 5e-3, logging_steps: 1, save_steps: 100, precision: 'bf16', report_to: ['tensorboard'] },
    target: { provider: 'ssh', host: 'loopback', gpu: 'A100-40GB' },
    outputs: { dir: 'outputs' },
  };
  const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
  const m = testRunManager(storage, connectOptions);
  const rec = await m.start({
    specPath: join(ws, 'finetune.yaml'),
    specText: JSON.stringify(spec),
    spec,
    name: spec.name,
    workspaceDir: ws,
    env: { ...AWS_ENV, AWS_ENDPOINT_URL: moto.url },
    target: { kind: 'ssh', host: `${sshd.user}@127.0.0.1:${sshd.port}`, identityFile: sshd.userKeyPath },
    gpu: 'A100-40GB',
    teardown: { policy: 'terminate' },
  });
  const fin = await runFinished(m, rec.id, 360_000);
  const remoteRun = join(sshd.home, '.remote-finetune', 'runs', rec.id);
  const log = (): string => (existsSync(join(remoteRun, 'output.log')) ? readFileSync(join(remoteRun, 'output.log'), 'utf8').slice(-4000) : '(no log)');
  assert.equal(fin.record.status, 'completed', log());

  const events = readFileSync(join(remoteRun, 'events.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => {
      const p = parseEventLine(l);
      assert.ok(p.ok, `the extension refuses ${l}`);
      return p.event;
    });
  // RFT_WRITE_FIXTURES=1 refreshes the shared events fixture from this real run (test/fixtures/events/README.md).
  if (process.env.RFT_WRITE_FIXTURES === '1')
    writeFileSync(join(REPO, 'test/fixtures/events/staged_data_run.jsonl'), readFileSync(join(remoteRun, 'events.jsonl')));
  const staging = events.filter((e): e is Extract<RunEvent, { type: 'staging' }> => e.type === 'staging');
  assert.ok(staging.length >= 2, log());
  assert.equal(staging[0]!.uri, `s3://${bucket}/corpus`);
  assert.equal(staging[0]!.bytes_total, bytes, 'the size is known before the copy');
  assert.equal(staging[0]!.bytes_done, 0);
  assert.equal(staging.at(-1)!.done, true);
  assert.equal(staging.at(-1)!.bytes_done, bytes);
  assert.ok(events.findIndex((e) => e.type === 'staging') < events.findIndex((e) => e.type === 'started'), 'staged before training started');
  // The person sees it in the run's log as it happens (the log panel tails output.log).
  const outputLog = readFileSync(join(remoteRun, 'output.log'), 'utf8');
  const kb = (bytes / 1000).toFixed(1).replace('.', '\\.');
  assert.match(outputLog, new RegExp(`\\[remote-finetune\\] staging s3://${bucket}/corpus: 1 object, ${kb} KB, into `));
  assert.match(outputLog, new RegExp(`\\[remote-finetune\\] staged s3://${bucket}/corpus: ${kb} KB in `));
  const losses = events.filter((e) => e.type === 'metrics' && 'loss' in e && e.loss !== undefined);
  assert.ok(losses.length >= 5, 'trained on the staged data');

  // The data sits in the host's shared data folder, never in the synced workspace.
  const staged = join(sshd.home, '.remote-finetune', 'data', 's3', bucket, 'corpus', 'train.jsonl');
  assert.equal(readFileSync(staged, 'utf8'), readFileSync(data, 'utf8'));
  assert.deepEqual(JSON.parse(readFileSync(join(remoteRun, 'staged.json'), 'utf8')), { [`s3://${bucket}/corpus`]: dirname(staged) });
  // report_to tensorboard from the built-in trainer: event files in the run's own folder.
  const tb = join(remoteRun, 'tensorboard');
  assert.ok(existsSync(tb) && readdirSync(tb, { recursive: true }).some((f) => String(f).includes('events.out.tfevents')), 'no TensorBoard event files');
  // The secret key reached the host only in the 0600 env file.
  for (const name of ['output.log', 'events.jsonl', 'spec.json'])
    assert.ok(!readFileSync(join(remoteRun, name), 'utf8').includes(AWS_ENV.AWS_SECRET_ACCESS_KEY), name);
  await m.dispose();
});
