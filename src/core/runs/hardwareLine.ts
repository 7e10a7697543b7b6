// The Start confirmation names the hardware the run will get when the host's probe found other than the spec asks
// for (the person chose "Start Anyway"): the fit, time and cost lines above it are the spec's GPU's, not the host's.
import type { ProbeOutcome } from '../hosts/gpuCheck';
import { hostGpuWarning } from '../hosts/gpuCheck';

export function probedHardwareLine(host: string, outcome: ProbeOutcome, wanted: readonly string[]): string | undefined {
  if (!hostGpuWarning(host, outcome, wanted) || 'error' in outcome) return undefined;
  const asked = wanted.length > 0 ? ` The spec asks for ${wanted.join(' / ')}; the estimates above are for that.` : '';
  const p = outcome.probe;
  if (p.kind !== 'nvidia') return `Hardware on ${host}: CPU only (no NVIDIA GPU found).${asked}`;
  const counts = new Map<string, number>();
  for (const g of p.gpus) counts.set(g.name, (counts.get(g.name) ?? 0) + 1);
  const have = [...counts].map(([name, n]) => `${n} × ${name}`).join(', ');
  return `Hardware on ${host}: ${have}.${asked}`;
}
