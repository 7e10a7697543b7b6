// The runner's overhead on its two training paths: the same tiny model (built locally), data and arguments trained
// (a) by `python -m remote_finetune run` with everything on: events callback, log capture through a pipe, the GPU
//     sampler at its default interval (an nvidia-smi STAND-IN on PATH, test/support/standins/nvidia-smi: no GPU
//     here), the watchdog off (it only polls the disk every 30 s); and
// (b) by the plain script a person would write: a ~30-line Hugging Face Trainer script (bench/lib/plain_trainer.py)
//     against the runner's default path, a ~30-line TRL SFT script (bench/lib/plain_trl.py) against the runner's
//     TRL path (trainer.use_sft_trainer).
// Both sides run on ONE pinned core (taskset) with one thread each (OMP/MKL_NUM_THREADS=1): on a shared 2-core
// machine an unpinned run measures which process got the cores, not the runner. Pairs alternate runner / plain on
// each path (at least 7), each side's spread is printed. The figure is steady-state training steps per second: 1 / the
// interquartile mean interval between consecutive steps' logs (the runner's per-step metrics events; the plain scripts' on_log), so
// a fixed cost of the 60-step loop does not pass for a per-step overhead. Beside it, HF's own train_steps_per_second
// (the whole loop: set-up and the first step included) and the CPU seconds of each
// run's whole process tree (bench/lib/cputime.py), which other processes on the core do not stretch. Real torch/transformers/peft/trl
// from the test:training venv, on CPU. Goal: runner / plain >= 0.95 on both paths (the TRL path is a check).
import { execFileSync, spawnSync } from 'node:child_process';
import { cpus, loadavg, tmpdir } from 'node:os';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { median, printTable, printVerdict, spreadOf } from './lib/pairs';

const ROOT = resolve(__dirname, '..');
const PAIRS = Math.max(7, Number(process.env.RFT_BENCH_PAIRS ?? 7));
const STEPS = Number(process.env.RFT_BENCH_STEPS ?? 60);
const CPU = Number(process.env.RFT_BENCH_CPU ?? cpus().length - 1);
const GOAL = '>= 0.95';

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
  OMP_NUM_THREADS: '1',
  MKL_NUM_THREADS: '1',
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

/** argv under taskset (the process and every child it starts stay on the one core), wrapped by bench/lib/cputime.py,
 * which prints the CPU seconds of the whole process tree: the load-independent figure beside HF's steps/s. */
function pinned(argv: readonly string[]): [string, string[]] {
  return ['python3', [join(__dirname, 'lib/cputime.py'), 'taskset', '-c', String(CPU), ...argv]];
}

function cpuSeconds(stdout: string): number {
  const line = stdout.split('\n').find((l) => l.startsWith('RFT_CPU '));
  if (!line) throw new Error('no RFT_CPU line');
  return (JSON.parse(line.slice('RFT_CPU '.length)) as { cpu_s: number }).cpu_s;
}

interface Run {
  /** Steady-state steps/s from the intervals between consecutive steps' logs (each side logs every step). */
  readonly sps: number;
  /** HF's train_steps_per_second over the whole 60-step loop: fixed costs (callbacks' set-up, the first step) weigh in. */
  readonly hf: number;
  readonly cpu: number;
}

// 1 / the interquartile mean of the step intervals: robust to a preempted step like a median, and not stepped by the
// runner's event timestamps, which are rounded to the millisecond (a median of them moves in 5% steps at ~20 ms a step).
const steady = (intervals: readonly number[]): number => {
  if (intervals.length < 10) throw new Error(`only ${intervals.length} step intervals`);
  const s = [...intervals].sort((x, y) => x - y);
  const mid = s.slice(Math.floor(s.length / 4), Math.ceil((3 * s.length) / 4));
  return mid.length / mid.reduce((x, y) => x + y, 0);
};

type Path = 'trainer' | 'trl';
const PLAIN_SCRIPT: Record<Path, string> = { trainer: 'lib/plain_trainer.py', trl: 'lib/plain_trl.py' };

function plain(path: Path, i: number): Run {
  const [cmd, args] = pinned([
    python,
    join(__dirname, PLAIN_SCRIPT[path]),
    model,
    join(ws, 'data/train.jsonl'),
    join(dir, `plain-${path}-${i}`),
    String(STEPS),
  ]);
  const r = spawnSync(cmd, args, { env, encoding: 'utf8' });
  const line = r.stdout.split('\n').find((l) => l.startsWith('RFT_PLAIN '));
  if (r.status !== 0 || !line) throw new Error(`plain ${path} script failed (${r.status}): ${r.stderr.slice(-2000)}`);
  const m = JSON.parse(line.slice('RFT_PLAIN '.length)) as { train_steps_per_second: number; step_times: number[] };
  return { sps: steady(m.step_times), hf: m.train_steps_per_second, cpu: cpuSeconds(r.stdout) };
}

function ours(path: Path, i: number): Run {
  const runDir = join(dir, 'home/.remote-finetune/runs', `bench-${path}-${i}`);
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
      use_sft_trainer: path === 'trl',
    },
    target: { provider: 'ssh' },
    outputs: { dir: `outputs-${path}-${i}` },
  };
  writeFileSync(join(runDir, 'spec.json'), JSON.stringify(spec));
  const [cmd, args] = pinned([python, '-m', 'remote_finetune', 'run', '--run-dir', runDir, '--workdir', ws, '--no-watchdog']);
  const r = spawnSync(cmd, args, { cwd: runDir, env: { ...env, PYTHONPATH: join(ROOT, 'python-runner'), PYTHONSAFEPATH: '1' }, encoding: 'utf8' });
  const events = readFileSync(join(runDir, 'events.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { type: string; step?: number; ts: number; loss?: number; extra?: Record<string, number> });
  const sps = events.find((e) => e.type === 'metrics' && e.extra?.train_steps_per_second !== undefined)?.extra?.train_steps_per_second;
  if (r.status !== 0 || sps === undefined) throw new Error(`runner failed (${r.status}): ${readFileSync(join(runDir, 'output.log'), 'utf8').slice(-2000)}`);
  const steps = events.filter((e) => e.type === 'metrics' && e.loss !== undefined && e.step !== undefined);
  const intervals = steps.slice(1).flatMap((e, k) => (e.step === steps[k]!.step! + 1 ? [e.ts - steps[k]!.ts] : []));
  return { sps: steady(intervals), hf: sps, cpu: cpuSeconds(r.stdout) };
}

const runs: Record<Path, { ours: number[]; reference: number[] }> = { trainer: { ours: [], reference: [] }, trl: { ours: [], reference: [] } };
const cpu: Record<Path, { ours: number[]; reference: number[] }> = { trainer: { ours: [], reference: [] }, trl: { ours: [], reference: [] } };
const hf: Record<Path, { ours: number[]; reference: number[] }> = { trainer: { ours: [], reference: [] }, trl: { ours: [], reference: [] } };
const loadBefore = loadavg()[0]!;
const fmt = (xs: readonly number[]): string => {
  const s = spreadOf(xs);
  return `${s.median.toFixed(2)} (min ${s.min.toFixed(2)}, max ${s.max.toFixed(2)})`;
};
try {
  for (let i = 0; i < PAIRS; i++) {
    for (const path of ['trainer', 'trl'] as const) {
      const o = ours(path, i);
      const p = plain(path, i);
      runs[path].ours.push(o.sps);
      runs[path].reference.push(p.sps);
      cpu[path].ours.push(o.cpu);
      cpu[path].reference.push(p.cpu);
      hf[path].ours.push(o.hf);
      hf[path].reference.push(p.hf);
      console.log(
        `pair ${i + 1}/${PAIRS} ${path}: runner ${o.sps.toFixed(2)} steps/s (${o.cpu.toFixed(1)} CPU s), plain ${p.sps.toFixed(2)} steps/s (${p.cpu.toFixed(1)} CPU s), ` +
          `load ${loadavg()[0]!.toFixed(2)}`,
      );
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const m = (path: Path, side: 'ours' | 'reference'): number => median(runs[path][side]);
printTable(`trainer-overhead: ${STEPS} steps of a tiny Llama (BF16 LoRA, CPU), core ${CPU} pinned, 1 thread, ${PAIRS} pairs; median (min, max) steps/s`, [
  ['python -m remote_finetune, Trainer path', fmt(runs.trainer.ours)],
  ['plain HF Trainer script', fmt(runs.trainer.reference)],
  ['ratio, Trainer path', m('trainer', 'ours') / m('trainer', 'reference')],
  ['python -m remote_finetune, TRL path (use_sft_trainer)', fmt(runs.trl.ours)],
  ['plain TRL SFT script', fmt(runs.trl.reference)],
  ['ratio, TRL path', m('trl', 'ours') / m('trl', 'reference')],
  ["HF's train_steps_per_second (60-step loop, fixed costs included), runner / plain, Trainer path", median(hf.trainer.ours) / median(hf.trainer.reference)],
  ["HF's train_steps_per_second, runner / plain, TRL path", median(hf.trl.ours) / median(hf.trl.reference)],
  ['CPU seconds per run (whole process tree), runner / plain, Trainer path', median(cpu.trainer.ours) / median(cpu.trainer.reference)],
  ['CPU seconds per run (whole process tree), runner / plain, TRL path', median(cpu.trl.ours) / median(cpu.trl.reference)],
]);
const pass = printVerdict({
  bench: 'trainer-overhead',
  metric:
    'steady-state training steps/s (1 / interquartile mean step interval), runner / plain script (Trainer path; TRL path a check), one pinned core, 1 thread',
  ours: m('trainer', 'ours'),
  reference: m('trainer', 'reference'),
  goal: GOAL,
  checks: [{ name: 'TRL path: runner / plain TRL SFT script', value: m('trl', 'ours') / m('trl', 'reference'), goal: GOAL }],
  samples: runs.trainer,
  covers: ['python-runner/remote_finetune', 'bench/trainer-overhead.ts', 'bench/lib/plain_trainer.py', 'bench/lib/plain_trl.py'],
  referenceCommand: `taskset -c ${CPU} python bench/lib/plain_trainer.py|plain_trl.py <model> <data> <out> ${STEPS} (OMP_NUM_THREADS=1)`,
  extra: {
    pairs: PAIRS,
    steps: STEPS,
    device: 'cpu',
    pinned_cpu: CPU,
    threads: 1,
    load_before: Math.round(loadBefore * 100) / 100,
    load_after: Math.round(loadavg()[0]! * 100) / 100,
    trl_ours: Math.round(m('trl', 'ours') * 10000) / 10000,
    trl_reference: Math.round(m('trl', 'reference') * 10000) / 10000,
    trl_samples: JSON.stringify(runs.trl),
    trl_spread: JSON.stringify({ ours: spreadOf(runs.trl.ours), reference: spreadOf(runs.trl.reference) }),
    cpu_seconds: JSON.stringify(cpu),
    hf_train_steps_per_second: JSON.stringify(hf),
    hf_ratio_trainer: Math.round((median(hf.trainer.ours) / median(hf.trainer.reference)) * 10000) / 10000,
    hf_ratio_trl: Math.round((median(hf.trl.ours) / median(hf.trl.reference)) * 10000) / 10000,
    cpu_ratio_trainer: Math.round((median(cpu.trainer.ours) / median(cpu.trainer.reference)) * 10000) / 10000,
    cpu_ratio_trl: Math.round((median(cpu.trl.ours) / median(cpu.trl.reference)) * 10000) / 10000,
  },
});
process.exit(pass ? 0 : 1);
