// The runner's overhead: the same tiny model (built locally), data and TrainingArguments trained
// (a) by a plain ~30-line Hugging Face Trainer script (bench/lib/plain_trainer.py) and
// (b) by `python -m remote_finetune run` with everything on: events callback, log capture through a pipe,
//     the GPU sampler at its default interval (an nvidia-smi STAND-IN on PATH, test/support/standins/nvidia-smi:
//     no GPU here),
//     the watchdog off (it only polls the disk every 30 s).
// Both use the real torch/transformers/peft from the test:training venv, on CPU. The figure is training
// steps per second as HF Trainer measures it itself (train_steps_per_second: model loading excluded),
// A B alternating, median of the pairs. Goal: ours / plain >= 0.95.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { median, printTable, printVerdict } from './lib/pairs';

const ROOT = resolve(__dirname, '..');
const PAIRS = Number(process.env.RFT_BENCH_PAIRS ?? 5);
const STEPS = Number(process.env.RFT_BENCH_STEPS ?? 60);

const venv = execFileSync('bash', [join(ROOT, 'scripts/ensure-training-venv.sh'), 'hf5-torch2.6plus'], {
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'inherit'],
}).trim();
const python = join(venv, 'bin', 'python');
const dir = mkdtempSync(join(tmpdir(), 'rft-bench-trainer-'));
const env = {
  ...process.env,
  HF_HUB_OFFLINE: '1',
  HF_DATASETS_OFFLINE: '1',
  TOKENIZERS_PARALLELISM: 'false',
  HF_HOME: join(dir, 'hf'),
  PATH: `${join(ROOT, 'test/support/standins')}:${process.env.PATH ?? ''}`,
};
const model = join(dir, 'model');
const ws = join(dir, 'ws');
mkdirSync(join(ws, 'data'), { recursive: true });
execFileSync(
  python,
  [
    '-c',
    [
      'import sys; from tests_training import tiny',
      `tok = tiny.build_tokenizer(${JSON.stringify(join(dir, 'tok'))})`,
      `tiny.build_model(${JSON.stringify(model)}, "llama", tok)`,
      `tiny.write_data(${JSON.stringify(join(ws, 'data/train.jsonl'))}, "text-jsonl", 256)`,
    ].join('\n'),
  ],
  { cwd: join(ROOT, 'python-runner'), env: { ...env, PYTHONPATH: join(ROOT, 'python-runner') }, stdio: ['ignore', 'ignore', 'inherit'] },
);

function plain(i: number): number {
  const r = spawnSync(python, [join(__dirname, 'lib/plain_trainer.py'), model, join(ws, 'data/train.jsonl'), join(dir, `plain-${i}`), String(STEPS)], {
    env,
    encoding: 'utf8',
  });
  const line = r.stdout.split('\n').find((l) => l.startsWith('RFT_PLAIN '));
  if (r.status !== 0 || !line) throw new Error(`plain trainer failed (${r.status}): ${r.stderr.slice(-2000)}`);
  return (JSON.parse(line.slice('RFT_PLAIN '.length)) as { train_steps_per_second: number }).train_steps_per_second;
}

function ours(i: number): number {
  const runDir = join(dir, 'home/.remote-finetune/runs', `bench-${i}`);
  mkdirSync(runDir, { recursive: true });
  const spec = {
    version: 1,
    name: 'bench',
    method: 'lora-bf16',
    model: { id: model, attn_implementation: 'sdpa' },
    data: { train: 'data/train.jsonl', max_seq_length: 64 },
    lora: { r: 8, alpha: 16, dropout: 0.0, target_modules: 'all-linear' },
    trainer: {
      max_steps: STEPS,
      per_device_batch_size: 4,
      gradient_accumulation: 1,
      learning_rate: 5e-3,
      lr_scheduler: 'constant',
      logging_steps: 1,
      save_steps: 100000,
      precision: 'bf16',
      optimizer: 'adamw_torch',
      gradient_checkpointing: false,
      seed: 7,
    },
    target: { provider: 'ssh' },
    outputs: { dir: `outputs-${i}` },
  };
  writeFileSync(join(runDir, 'spec.json'), JSON.stringify(spec));
  const r = spawnSync(python, ['-m', 'remote_finetune', 'run', '--run-dir', runDir, '--workdir', ws, '--no-watchdog'], {
    cwd: runDir,
    env: { ...env, PYTHONPATH: join(ROOT, 'python-runner'), PYTHONSAFEPATH: '1' },
    encoding: 'utf8',
  });
  const events = readFileSync(join(runDir, 'events.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { type: string; extra?: Record<string, number> });
  const sps = events.find((e) => e.type === 'metrics' && e.extra?.train_steps_per_second !== undefined)?.extra?.train_steps_per_second;
  if (r.status !== 0 || sps === undefined) throw new Error(`runner failed (${r.status}): ${readFileSync(join(runDir, 'output.log'), 'utf8').slice(-2000)}`);
  return sps;
}

const a: number[] = [];
const b: number[] = [];
try {
  for (let i = 0; i < PAIRS; i++) {
    a.push(ours(i));
    b.push(plain(i));
    console.log(`pair ${i + 1}/${PAIRS}: runner ${a[i]!.toFixed(2)} steps/s, plain Trainer ${b[i]!.toFixed(2)} steps/s`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const mo = median(a);
const mr = median(b);
printTable(`trainer-overhead: ${STEPS} steps of a tiny Llama (BF16 LoRA, CPU), ${PAIRS} pairs, medians`, [
  ['python -m remote_finetune (steps/s)', mo],
  ['plain HF Trainer script (steps/s)', mr],
  ['ratio', mo / mr],
]);
const pass = printVerdict({
  bench: 'trainer-overhead',
  metric: 'training steps/s, runner / plain Trainer',
  ours: mo,
  reference: mr,
  goal: '>= 0.95',
  extra: { pairs: PAIRS, steps: STEPS, device: 'cpu' },
});
process.exit(pass ? 0 : 1);
