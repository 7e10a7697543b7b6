// Run history against real components: a real OpenSSH server on loopback as the host, the real python-runner
// and, for the built-in trainer, the real torch/transformers/peft in the cached training venv (given to the
// host as RFT_PYTHON, as a GPU image's Python) training a tiny Llama-shaped model built here. The synced folder
// is a real git repository with a change and an untracked file. After the run the record holds the spec, the
// git commit/diff state, host, GPU, final metrics, and the host's resolved TrainingArguments and pip freeze
// are in the run's local folder; no secret (the .env's token) is in the record or any file the extension
// wrote. Then an own-script run of the same folder is compared with it (core's Compare Runs model).
// The GPU is an nvidia-smi STAND-IN (test/support/standins/nvidia-smi): no GPU exists here.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { RunStore } from '../../../src/core/runs/store/runStore';
import { allFiles, runFinished, sshStartRequest, testRunManager, trustingConnectOptions } from '../../support/runHosts';
import { buildComparison } from '../../../src/core/runs/view/runCompare';
import { buildTinyModel, trainingPython } from '../../harness/trainingVenv';
import type { ConnectOptions } from '../../../src/core/ssh/session';

const REPO = resolve(__dirname, '../../..');
const SECRET = 'hf_HISTORYsecretValue0123456789abcdefXYZ';
let sshd: Sshd;
let connectOptions: ConnectOptions;
let python: string;

before(async () => {
  python = trainingPython();
  sshd = await startSshd({ pathPrepend: [join(REPO, 'test/support/standins')], env: { RFT_PYTHON: python, HF_HUB_OFFLINE: '1', HF_DATASETS_OFFLINE: '1' } });
  connectOptions = trustingConnectOptions([sshd]);
});
after(async () => {
  await sshd?.stop();
});

/** The built-in LoRA example as a git repository: committed, then a changed file and an untracked one. */
function gitWorkspace(): { ws: string; commit: string } {
  const ws = mkdtempSync(join(tmpdir(), 'rft-hist-ws-'));
  cpSync(join(REPO, 'examples/demo-host-builtin-lora/data'), join(ws, 'data'), { recursive: true });
  cpSync(join(REPO, 'examples/demo-host-own-script/train.py'), join(ws, 'train.py'));
  buildTinyModel(python, join(ws, 'tiny-model'));
  writeFileSync(join(ws, '.gitignore'), 'outputs/\n');
  writeFileSync(join(ws, 'notes.md'), 'first\n');
  writeFileSync(join(ws, '.env'), `HF_TOKEN=${SECRET}\n`);
  const g = (...a: string[]): string => execFileSync('git', a, { cwd: ws, encoding: 'utf8' }).trim();
  g('init', '-q', '-b', 'exp');
  g('-c', 'user.email=t@example.com', '-c', 'user.name=T', 'add', '-A');
  g('-c', 'user.email=t@example.com', '-c', 'user.name=T', 'commit', '-q', '-m', 'base');
  writeFileSync(join(ws, 'notes.md'), `first\nsecond (token ${SECRET} pasted by mistake)\n`);
  mkdirSync(join(ws, 'extra'));
  writeFileSync(join(ws, 'extra', 'more.jsonl'), '{"text": "x"}\n');
  return { ws, commit: g('rev-parse', 'HEAD') };
}

const builtinSpec = {
  version: 1,
  name: 'hist-builtin',
  model: { id: './tiny-model', params_b: 0.00013, attn_implementation: 'sdpa' },
  method: 'lora-bf16',
  data: { train: 'data/train.jsonl', text_field: 'text', max_seq_length: 64 },
  lora: { r: 8, alpha: 16, dropout: 0.0, target_modules: 'all-linear' },
  trainer: {
    max_steps: 8,
    per_device_batch_size: 2,
    gradient_accumulation: 1,
    learning_rate: 5e-3,
    lr_scheduler: 'constant',
    logging_steps: 1,
    save_steps: 100,
    precision: 'bf16',
    optimizer: 'adamw_torch',
    seed: 7,
  },
  target: { provider: 'ssh', host: 'loopback', gpu: 'A100-40GB' },
  outputs: { dir: 'outputs' },
};

test(
  'run history: a built-in trainer run on a real sshd host records spec, git, host, GPU, final metrics, resolved TrainingArguments and lock; no secret',
  { timeout: 480_000 },
  async () => {
    const storage = mkdtempSync(join(tmpdir(), 'rft-hist-storage-'));
    const m = testRunManager(storage, connectOptions);
    const { ws, commit } = gitWorkspace();
    const specText = `# the spec as written\n${JSON.stringify(builtinSpec, null, 2)}\n`;
    const base = sshStartRequest(sshd, ws, 'hist-builtin', 'unused', { env: { HF_TOKEN: SECRET } });
    const rec = await m.start({ ...base, spec: builtinSpec, specText, envFileRel: '.env' });
    const f = await runFinished(m, rec.id, 420_000);
    assert.equal(f.record.status, 'completed', JSON.stringify(f.failure));
    await m.dispose();

    // The record as a reload reads it from the store.
    const r = new RunStore(join(storage, 'runs.json')).get(rec.id)!;
    assert.equal(r.host, `${sshd.user}@127.0.0.1:${sshd.port}`);
    assert.equal(r.gpu, 'A100-40GB');
    assert.equal(r.git?.repo, true);
    assert.equal(r.git?.commit, commit);
    assert.equal(r.git?.branch, 'exp');
    assert.equal(r.git?.dirty, true);
    assert.deepEqual(r.git?.untracked, ['extra/more.jsonl']);
    assert.deepEqual(new Set(r.historyFiles), new Set(['spec-source.yaml', 'spec.json', 'git.diff', 'training_args.json', 'pip-freeze.txt']));
    const fm = r.finalMetrics ?? {};
    assert.equal(fm.step, 8);
    assert.ok(typeof fm.loss === 'number' && typeof fm.train_runtime === 'number' && typeof fm.train_loss === 'number', JSON.stringify(fm));

    const local = m.localDirOf(rec.id);
    assert.equal(readFileSync(join(local, 'spec-source.yaml'), 'utf8'), specText, 'the exact spec text');
    assert.deepEqual(JSON.parse(readFileSync(join(local, 'spec.json'), 'utf8')), builtinSpec);
    const diff = readFileSync(join(local, 'git.diff'), 'utf8');
    assert.match(diff, /^\+second \(token \[redacted HF_TOKEN\] pasted by mistake\)$/m);
    assert.ok(!diff.includes('.env'), 'the .env is never part of the diff');
    // The TrainingArguments as the real transformers used them (the spec's names mapped), and the venv's lock.
    const args = JSON.parse(readFileSync(join(local, 'training_args.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(args.learning_rate, 5e-3);
    assert.equal(args.max_steps, 8);
    assert.equal(args.per_device_train_batch_size, 2);
    assert.equal(args.seed, 7);
    assert.equal(args.lr_scheduler_type, 'constant');
    const lock = readFileSync(join(local, 'pip-freeze.txt'), 'utf8');
    assert.match(lock, /^transformers==\d/m);
    assert.match(lock, /^peft==\d/m);
    assert.match(lock, /^torch==2\.13\.0/m);

    // No secret anywhere the extension wrote (store, history, mirrors).
    for (const p of allFiles(storage)) assert.ok(!readFileSync(p).includes(SECRET), `secret found in ${p}`);

    // Compared with an own-script run of the same folder: its TrainingArguments are missing, so they differ.
    const m2 = testRunManager(storage, connectOptions);
    const rec2 = await m2.start(sshStartRequest(sshd, ws, 'hist-own', 'python3 train.py --steps 4 --sleep 0.05', { env: { HF_TOKEN: SECRET } }));
    const f2 = await runFinished(m2, rec2.id, 120_000);
    assert.equal(f2.record.status, 'completed', JSON.stringify(f2.failure));
    await m2.dispose();
    const store = new RunStore(join(storage, 'runs.json'));
    const model = buildComparison([rec.id, rec2.id].map((id) => ({ record: store.get(id)!, localDir: m.localDirOf(id) })));
    assert.deepEqual(
      // Column names carry the start time after the spec's name (runDisplayName).
      model.runs.map((c) => [c.name.split(' · ')[0], c.status, c.gpu, c.git?.commit, c.git?.dirty]),
      [
        ['hist-builtin', 'completed', 'A100-40GB', commit, true],
        ['hist-own', 'completed', 'A100-40GB', commit, true],
      ],
    );
    const lr = model.config.find((row) => row.section === 'trainingArgs' && row.key === 'learning_rate');
    assert.deepEqual(lr?.values, ['0.005', null]);
    assert.equal(model.config.find((row) => row.section === 'spec' && row.key === 'name')?.differs, true);
    assert.ok(model.curves.some((c) => c.run === rec.id && c.metric === 'loss' && c.steps.length === 8));
    assert.ok(model.curves.some((c) => c.run === rec2.id && c.metric === 'loss'));
    for (const p of allFiles(storage)) assert.ok(!readFileSync(p).includes(SECRET), `secret found in ${p}`);
  },
);
