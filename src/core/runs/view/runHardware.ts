// The hardware a run actually had, kept beside the GPU its spec asked for: a host with no GPU (after "Start
// Anyway") ran on the CPU, and rows, Compare and Merge's advice must say so rather than repeat the spec's GPU.
// The runner's own report (gpu.csv's board names, its no-gpu warning) wins over the probe made before the start.
import { z } from 'zod';
import type { ProbeOutcome } from '../../hosts/gpuCheck';
import { gpuMatches } from '../../hosts/gpuCheck';
import { findGpu, GPU_CATALOG } from '../../gpu/catalog';
import type { GpuInfo } from '../../gpu/catalog';
import { parseGpuCsvLine } from '../../telemetry/nvidiaSmi';

export const runHardwareSchema = z.object({
  /** Board names with how many of each; empty: CPU only. Names come from the host, so they are bounded. */
  gpus: z.array(z.object({ name: z.string().min(1).max(200), count: z.number().int().positive().max(1024) })).max(16),
  /** runner: what the run itself saw; probe: the check before the start. */
  source: z.enum(['runner', 'probe']),
});
export type RunHardware = z.infer<typeof runHardwareSchema>;

/** The fields of a record this module reads (the spec's ask and what was used). */
export interface HardwareOf {
  readonly gpu?: string | undefined;
  readonly hardware?: RunHardware | undefined;
}

/** Board names, one per board, as hardware with counts; [] is CPU only. */
export function hardwareFromNames(names: readonly string[], source: RunHardware['source']): RunHardware {
  const counts = new Map<string, number>();
  // Host text: control characters out, length bounded (the schema's limit).
  // eslint-disable-next-line no-control-regex
  const control = /[\u0000-\u001f\u007f]/g;
  for (const raw of names) {
    const name = raw.replace(control, ' ').trim().slice(0, 200);
    if (name) counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return { gpus: [...counts].slice(0, 16).map(([name, count]) => ({ name, count })), source };
}

/** What the probe before the start found; undefined when the host could not be probed. */
export function hardwareFromProbe(outcome: ProbeOutcome | undefined): RunHardware | undefined {
  if (!outcome || 'error' in outcome) return undefined;
  const p = outcome.probe;
  return hardwareFromNames(p.kind === 'nvidia' ? p.gpus.map((g) => g.name) : [], 'probe');
}

/** "2 × NVIDIA A100-SXM4-40GB", "1 × NVIDIA L4", "CPU only". */
export function hardwareText(h: RunHardware): string {
  if (h.gpus.length === 0) return 'CPU only';
  return h.gpus.map((g) => `${g.count} × ${g.name}`).join(', ');
}

/** Whether a board is the GPU the spec asked for: the same catalog entry, or by family where the catalog knows neither. */
function isAsked(board: string, asked: string): boolean {
  const want = findGpu(asked);
  const have = catalogGpu(board);
  return want && have ? want.id === have.id : gpuMatches(board, asked);
}

/** Whether what the run had is not what its spec asked for (no GPU, or another GPU). */
export function hardwareDiffers(r: HardwareOf): boolean {
  const h = r.hardware;
  if (!h) return false;
  if (h.gpus.length === 0) return true;
  return r.gpu ? !h.gpus.every((g) => isAsked(g.name, r.gpu!)) : false;
}

/**
 * The run's hardware as rows, Compare and the model card name it: what was used, with the spec's ask beside it
 * when they differ ("CPU only (spec asked A100-40GB)", "1 × Tesla T4 (spec asked A100-40GB)"); the ask's own
 * short name when the boards are what it asked for ("A100-40GB", "2 × A100-40GB"); the spec's GPU for a record
 * without a report.
 */
export function usedHardwareLabel(r: HardwareOf): string | undefined {
  if (!r.hardware) return r.gpu || undefined;
  if (!hardwareDiffers(r) && r.gpu && r.hardware.gpus.length > 0) {
    const n = r.hardware.gpus.reduce((a, g) => a + g.count, 0);
    return n > 1 ? `${n} × ${r.gpu}` : r.gpu;
  }
  const used = hardwareText(r.hardware);
  return hardwareDiffers(r) && r.gpu ? `${used} (spec asked ${r.gpu})` : used;
}

/** The catalog entry for a board name as nvidia-smi prints it ("NVIDIA A100-SXM4-80GB" is the A100-80GB). */
export function catalogGpu(name: string): GpuInfo | undefined {
  const direct = findGpu(name);
  if (direct) return direct;
  const family = Object.values(GPU_CATALOG).filter((g) => gpuMatches(name, g.id));
  // A100-40GB and A100-80GB are one family: the memory in the name ("…-SXM4-80GB") decides, else the smaller one.
  const gb = Number(/(\d+)\s*GB\b/i.exec(name)?.[1]);
  return family.find((g) => g.vramGb === gb) ?? family.sort((a, b) => a.vramGb - b.vramGb)[0];
}

/**
 * The GPU the run used, for advice that depends on it (Merge's dtype): null for CPU only, the spec's GPU for a
 * record without a report.
 */
export function usedGpu(r: HardwareOf): { readonly name: string; readonly info: GpuInfo | undefined } | null | undefined {
  if (!r.hardware) return r.gpu ? { name: r.gpu, info: findGpu(r.gpu) } : undefined;
  const first = r.hardware.gpus[0];
  if (!first) return null;
  return { name: first.name, info: catalogGpu(first.name) };
}

/**
 * The boards the run's gpu.csv names, read from its first lines: each index's name until a sample round repeats
 * (the sampler writes every board each round). What the runner saw, so it replaces the probe's word.
 */
export class GpuCsvBoards {
  private pending = '';
  private readonly names = new Map<number, string>();
  private rounds = new Set<number>();
  private done = false;

  /** Takes a chunk of gpu.csv; true when the boards known changed. */
  feed(chunk: string): boolean {
    if (this.done) return false;
    const lines = (this.pending + chunk).split('\n');
    this.pending = (lines.pop() ?? '').slice(-65_536);
    let changed = false;
    for (const line of lines) {
      const s = parseGpuCsvLine(line);
      if (!s) continue;
      if (s.ts !== undefined) this.rounds.add(s.ts);
      if (this.rounds.size > 2 || this.names.size >= 1024) {
        this.done = true;
        break;
      }
      if (this.names.get(s.index) !== s.name) {
        this.names.set(s.index, s.name);
        changed = true;
      }
    }
    return changed;
  }

  /** The boards seen, only the run's own when the host's queue gave it some (CUDA_VISIBLE_DEVICES). */
  hardware(indices?: readonly number[]): RunHardware | undefined {
    const picked = [...this.names].filter(([i]) => !indices?.length || indices.includes(i)).sort(([a], [b]) => a - b);
    return picked.length
      ? hardwareFromNames(
          picked.map(([, n]) => n),
          'runner',
        )
      : undefined;
  }
}
