// Whole-text readers of nvidia-smi output for the tests: they drive the product's row and line parsers
// (core/telemetry/nvidiaSmi.ts) over a whole fixture file at once. The product itself reads line by line
// (the panel's tail, the runner's gpu.csv) or through gpuProbe.ts, so these live here, not in src.
import {
  NVIDIA_SMI_APP_FIELDS,
  NVIDIA_SMI_GPU_FIELDS,
  diagnoseNvidiaSmi,
  parseGpuCsvLine,
  parseNvidiaSmiCsv,
  processFrom,
  sampleFrom,
  textLines,
} from '../../src/core/telemetry/nvidiaSmi';
import type { NvidiaSmiProcess, NvidiaSmiSample, ParsedGpuCsv } from '../../src/core/telemetry/nvidiaSmi';

/** Arguments for one query as the SSH probe and the runner ask it; add `-lms <n>` for a loop. */
export function nvidiaSmiQueryArgs(intervalMs?: number): string[] {
  const args = [`--query-gpu=${NVIDIA_SMI_GPU_FIELDS.join(',')}`, '--format=csv,noheader,nounits'];
  if (intervalMs !== undefined) args.push('-lms', String(Math.max(1, Math.round(intervalMs))));
  return args;
}

/** `--query-compute-apps` output, with or without a header, in NVIDIA_SMI_APP_FIELDS order by default. */
export function parseComputeApps(text: string, fields: readonly string[] = NVIDIA_SMI_APP_FIELDS): ParsedGpuCsv<NvidiaSmiProcess> {
  const table = parseNvidiaSmiCsv(text, fields);
  const samples: NvidiaSmiProcess[] = [];
  const rejectedLines = [...table.rejectedLines];
  for (const row of table.rows) {
    const p = processFrom(row.values);
    if (p) samples.push(p);
    else rejectedLines.push(row.line);
  }
  return { samples, rejectedLines: rejectedLines.sort((a, b) => a - b) };
}

/**
 * Raw nvidia-smi output (the SSH probe, or any -l/-lms block). Rows are read in `fields` order
 * (NVIDIA_SMI_GPU_FIELDS unless told) until a header row names the columns; a query without `index`
 * numbers its boards from 0 after each header, in the order nvidia-smi lists them.
 */
export function parseNvidiaSmiGpuCsv(text: string, fields: readonly string[] = NVIDIA_SMI_GPU_FIELDS): ParsedGpuCsv<NvidiaSmiSample> {
  const table = parseNvidiaSmiCsv(text, fields);
  const samples: NvidiaSmiSample[] = [];
  const rejectedLines = [...table.rejectedLines];
  for (const row of table.rows) {
    const s = sampleFrom((f) => row.values.get(f), row.values.values(), row.ordinal);
    if (s) samples.push(s);
    else rejectedLines.push(row.line);
  }
  return { samples, rejectedLines: rejectedLines.sort((a, b) => a - b) };
}

/** The runner's gpu.csv (a chunk of whole lines), through the panel's line parser. */
export function parseGpuCsv(text: string): ParsedGpuCsv<NvidiaSmiSample> {
  const samples: NvidiaSmiSample[] = [];
  const rejectedLines: number[] = [];
  textLines(text).forEach((line, i) => {
    if (line.trim() === '') return;
    const s = parseGpuCsvLine(line);
    if (s === undefined) rejectedLines.push(i + 1);
    else samples.push(s);
  });
  return { samples, rejectedLines };
}

/** True when nvidia-smi's output says the host has no usable GPU (driver missing or broken, GPU lost). */
export function nvidiaSmiSaysNoGpu(output: string): boolean {
  return diagnoseNvidiaSmi(output) !== undefined;
}
