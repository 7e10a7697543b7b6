// CPU and memory lines of the runner's gpu.csv, written on a host without an NVIDIA GPU so the GPU panel has
// something true to show there: `<epoch s>, cpu, <busy %>, <cpus>, <used MiB>, <total MiB>`. The writer is
// python-runner/remote_finetune/host_sample.py (which mirrors this reader); both are tested on
// test/fixtures/host-samples. An nvidia-smi line has a GPU index where this has the word `cpu`.

export interface HostCsvSample {
  /** Seconds since the epoch. */
  readonly ts: number;
  /** Busy share of all CPUs over the last interval; null on the first sample (one read says nothing). */
  readonly cpuPct: number | null;
  readonly cpus: number;
  readonly memoryUsedMiB: number | null;
  readonly memoryTotalMiB: number | null;
}

const NUMBER = /^\d+(?:\.\d+)?$/;
/** Far longer than any line the runner writes; refused before splitting. */
const MAX_LINE = 200;

/** One CPU line of gpu.csv, or undefined when it is not one. Never throws. */
export function parseHostCsvLine(line: string): HostCsvSample | undefined {
  if (line.length > MAX_LINE) return undefined;
  const parts = line
    .trim()
    .split(',')
    .map((p) => p.trim());
  if (parts.length !== 6 || parts[1] !== 'cpu' || !NUMBER.test(parts[0]!) || !/^\d+$/.test(parts[3]!)) return undefined;
  const num = (s: string): number | null => (NUMBER.test(s) ? Number(s) : null);
  return { ts: Number(parts[0]), cpuPct: num(parts[2]!), cpus: Number(parts[3]), memoryUsedMiB: num(parts[4]!), memoryTotalMiB: num(parts[5]!) };
}
