// The demo's GPU dashboard without a GPU: a real nvidia-smi capture (one NVIDIA H200 through a whole LoRA run,
// test/fixtures/nvidia-smi/real) replayed at its own 200 ms pace into a gpu.csv in the demo's workspace, in a
// folder whose name says what it is, so a newcomer sees the dashboard as it looks on a GPU host. The lines are
// the capture's own, each after the time it is written, as the runner writes gpu.csv; nothing is made up.
import { mkdirSync, readFileSync, writeFileSync, appendFileSync } from 'node:fs';
import { join } from 'node:path';

/** The folder in the demo workspace; its name is the label the GPU panel shows ("GPUs of <folder>/gpu.csv"). */
export const REPLAY_FOLDER = 'replay of a real H200 capture';
/** Relative to the repository root. */
export const H200_CAPTURE = 'test/fixtures/nvidia-smi/real/h200_580.159.04_lms200_training_noheader-nounits.csv';
/** The capture's own sampling interval (nvidia-smi -lms 200). */
export const CAPTURE_INTERVAL_MS = 200;

const README = `# Replay of a real H200 capture

\`gpu.csv\` here is not this machine's GPU (it has none). \`npm run demo\` replays, at its original 200 ms pace and
in a loop, what nvidia-smi printed on one NVIDIA H200 (143771 MiB, driver 580.159.04, CUDA 13.0) through a whole
BF16 LoRA run of the Llama-3.2-1B shape, captured on 2026-11-26 by the runner's own sampler
(${H200_CAPTURE} in the repository; its provenance is in SOURCES.md there).

Open it in the GPU dashboard: right-click gpu.csv → "Fine-Tune: Show GPU Dashboard", or open the file and use
the same action in the editor's title bar.
`;

export interface GpuReplay {
  readonly gpuCsv: string;
  stop(): void;
}

/** The capture's lines (nvidia-smi's own, without the runner's time prefix). */
export function captureLines(repoRoot: string): string[] {
  return readFileSync(join(repoRoot, H200_CAPTURE), 'utf8')
    .split(/\r?\n/)
    .filter((l) => l.trim() !== '');
}

/**
 * Starts the replay in `workspace/REPLAY_FOLDER`: the whole capture at once as the last minute's history (so the
 * charts are full when the panel opens), then one line per interval, round and round, until stop().
 */
export function startGpuReplay(workspace: string, repoRoot: string, opts: { readonly intervalMs?: number; readonly now?: () => number } = {}): GpuReplay {
  const lines = captureLines(repoRoot);
  const interval = opts.intervalMs ?? CAPTURE_INTERVAL_MS;
  const now = opts.now ?? Date.now;
  const dir = join(workspace, REPLAY_FOLDER);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'README.md'), README);
  const gpuCsv = join(dir, 'gpu.csv');
  const stamp = (ms: number, line: string): string => `${(ms / 1000).toFixed(3)}, ${line.trim()}\n`;
  const start = now() - lines.length * CAPTURE_INTERVAL_MS;
  // A fresh file per demo: the earlier demo's replay is not history of this one.
  writeFileSync(gpuCsv, lines.map((l, i) => stamp(start + i * CAPTURE_INTERVAL_MS, l)).join(''));
  let next = 0;
  const timer = setInterval(() => {
    appendFileSync(gpuCsv, stamp(now(), lines[next]!));
    next = (next + 1) % lines.length;
  }, interval);
  return { gpuCsv, stop: () => clearInterval(timer) };
}
