// Before a run starts on an SSH host: does the host have the GPU the run asks for? Said as a question the
// person answers (a CPU-only host is fine for a smoke test), never as a block.
import type { GpuProbeResult } from '../ssh/gpuProbe';

/** Whether a probed GPU name is of the catalog family asked for ("A100-40GB" matches "NVIDIA A100-SXM4-80GB"). */
export function gpuMatches(probed: string, family: string): boolean {
  const norm = (s: string): string => s.toUpperCase().replace(/[^A-Z0-9]/g, '');
  const fam = norm(family.replace(/-\d+GB$/i, ''));
  return fam !== '' && norm(probed).includes(fam);
}

/** Probed GPU names; [] for a probe that found no NVIDIA GPU. */
export function probedGpuNames(probe: GpuProbeResult): string[] {
  return probe.kind === 'nvidia' ? probe.gpus.map((g) => g.name) : [];
}

export interface HostGpuWarning {
  readonly message: string;
  readonly detail: string;
}

/** What the probe says when connecting or probing failed. */
export type ProbeOutcome = { readonly probe: GpuProbeResult } | { readonly error: string };

/**
 * The warning to show before starting on `host`, or undefined when the host has one of the `wanted` GPUs.
 * An empty `wanted` (own script, no GPU named) only asks for some NVIDIA GPU.
 */
export function hostGpuWarning(host: string, outcome: ProbeOutcome, wanted: readonly string[]): HostGpuWarning | undefined {
  if ('error' in outcome) {
    return { message: `The GPUs of ${host} could not be checked — start anyway?`, detail: outcome.error };
  }
  const p = outcome.probe;
  if (p.kind === 'none') return { message: `${host} has no NVIDIA GPU — start anyway?`, detail: p.reason };
  const names = probedGpuNames(p);
  if (wanted.length === 0 || names.some((n) => wanted.some((w) => gpuMatches(n, w)))) return undefined;
  const have = [...new Set(names)].join(', ');
  const want = [...new Set(wanted.map((w) => w.replace(/-\d+GB$/i, '')))].join(' or ');
  return {
    message: `${host} has ${have}, not the ${want} this run asks for — start anyway?`,
    detail: `The fit and the checks were made for ${wanted.join(' / ')}. On ${have} the run may not fit in memory or may lack bf16/FlashAttention.`,
  };
}
