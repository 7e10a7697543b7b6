// The runner's gpu.csv / gpu_procs.csv lines (parsed by the shared nvidia-smi parser) in the GPU panel's
// protocol shape: times in milliseconds, field names as the panel labels them.
import { parseComputeAppLine, parseGpuCsvLine as parseSmiGpuCsvLine } from '../../core/telemetry/nvidiaSmi';
import type { NvidiaSmiSample as SmiGpuSample } from '../../core/telemetry/nvidiaSmi';
import { parseHostCsvLine as parseCpuLine } from '../../core/telemetry/hostSample';
import type { GpuProcess, GpuSample, HostSample } from '../../protocol/gpu';

export function toPanelSample(s: SmiGpuSample, fallbackMs: number = Date.now()): GpuSample {
  return {
    t: s.ts !== undefined ? s.ts * 1000 : fallbackMs,
    index: s.index,
    name: s.name,
    utilizationPct: s.utilizationGpu,
    memoryUsedMiB: s.memoryUsedMiB,
    memoryTotalMiB: s.memoryTotalMiB,
    temperatureC: s.temperatureC,
    powerW: s.powerDrawW,
    powerLimitW: s.powerLimitW,
    smClockMHz: s.clocksSmMHz,
  };
}

/** One gpu.csv line, or undefined when it is not one. Never throws. */
export function parseGpuCsvLine(line: string): GpuSample | undefined {
  const s = parseSmiGpuCsvLine(line);
  return s && s.ts !== undefined ? toPanelSample(s) : undefined;
}

/** One CPU/memory line of gpu.csv (a host without a GPU), or undefined when it is not one. */
export function parseHostCsvLine(line: string): HostSample | undefined {
  const s = parseCpuLine(line);
  return s && { t: s.ts * 1000, cpuPct: s.cpuPct, cpus: s.cpus, memoryUsedMiB: s.memoryUsedMiB, memoryTotalMiB: s.memoryTotalMiB };
}

/** One gpu_procs.csv line (time, then --query-compute-apps fields). */
export function parseGpuProcsCsvLine(line: string): (GpuProcess & { readonly t: number }) | undefined {
  const p = parseComputeAppLine(line, true);
  if (!p || p.ts === undefined) return undefined;
  return { t: p.ts * 1000, gpu: p.gpuUuid, pid: p.pid, name: p.processName, usedMemoryMiB: p.usedMemoryMiB };
}
