// RFT819: hardware rules per provider. A provisioned run can only get a GPU the
// provider sells: EC2 and GCP launch from the static catalogs in core/providers, so anything else
// has no offer and the launch fails (error); Lambda's list comes live from its API, so there it is a
// warning (the list below may lag Lambda's). SSH and local hosts have whatever they have.
import { nodeAt, scalarAt } from '../ast';
import type { ConfigDiagnostic, Fix } from '../types';
import type { RuleContext } from './crossChecks';
import { replaceNode } from '../edits';
import type { GpuId, GpuInfo } from '../../gpu/catalog';
import { GPU_CATALOG, findGpu } from '../../gpu/catalog';
import { providerMachines } from './providerMachines';
import type { ProvisionedProvider } from './providerMachines';
import { instanceTypeEditsFor } from './instanceFit';

const NAMES: Readonly<Record<ProvisionedProvider, string>> = { lambda: 'Lambda', ec2: 'EC2', gcp: 'GCP' };

/** Catalog GPU → the GPU counts one machine of this provider has. */
export function providerGpus(p: ProvisionedProvider): ReadonlyMap<GpuId, readonly number[]> {
  const out = new Map<GpuId, number[]>();
  for (const r of providerMachines(p)) {
    const g = findGpu(r.gpu);
    // Only exact catalog names: A10 is not A10G.
    if (!g || g.id !== r.gpu) continue;
    const counts = out.get(g.id) ?? [];
    if (!counts.includes(r.gpuCount)) counts.push(r.gpuCount);
    out.set(
      g.id,
      counts.sort((a, b) => a - b),
    );
  }
  return out;
}

export function checkProviderGpu(ctx: RuleContext): ConfigDiagnostic[] {
  const provider = scalarAt(ctx.root, ['target', 'provider']);
  if (provider !== 'lambda' && provider !== 'ec2' && provider !== 'gcp') return [];
  const gpuNode = nodeAt(ctx.root, ['target', 'gpu']);
  if (gpuNode?.kind !== 'scalar' || typeof gpuNode.value !== 'string') return [];
  const gpu = findGpu(gpuNode.value);
  // A GPU outside the catalog is the schema's error (RFT104), not this one.
  if (!gpu || gpu.id !== gpuNode.value) return [];
  const offered = providerGpus(provider);
  const name = NAMES[provider];
  const severity = provider === 'lambda' ? 'warning' : 'error';
  const range = (n: { start: number; end: number }): { start: number; end: number } => ({ start: n.start, end: Math.max(n.end, n.start + 1) });
  const counts = offered.get(gpu.id);
  // Lambda's sizes come from its live list, which this one may lag: only the static catalogs' sizes are certain.
  if (counts) return provider === 'lambda' ? [] : checkGpuCount(ctx, gpu.id, counts, name, severity);
  const ids = [...offered.keys()];
  const alt = cheapestLike(provider, gpu, ids);
  const fixes: Fix[] = alt
    ? [
        {
          title: `Change to ${alt.id} (offered on ${name})`,
          edits: [replaceNode(gpuNode, alt.id, ctx.syntax), ...instanceTypeEditsFor(ctx, provider, alt.id)],
          preferred: true,
        },
      ]
    : [];
  return [
    {
      ...range(gpuNode),
      severity,
      code: 'RFT819',
      message: `${name} offers no ${gpu.id}; its GPUs are ${ids.join(', ')}. Pick one of them, or use an SSH host that has one.`,
      fixes,
    },
  ];
}

/**
 * The provider sells this GPU only in machines of certain sizes, and an offer matches target.gpu_count exactly
 * (offers.ts matchesQuery): EC2 has A100-40GB only as p4d.24xlarge, eight of them. Another count finds no offer,
 * so the launch fails; the fix is the next size up the provider sells (else its largest).
 */
function checkGpuCount(ctx: RuleContext, gpu: GpuId, counts: readonly number[], name: string, severity: ConfigDiagnostic['severity']): ConfigDiagnostic[] {
  const countNode = nodeAt(ctx.root, ['target', 'gpu_count']);
  const raw = countNode?.kind === 'scalar' ? countNode.value : undefined;
  // Not a whole number: the schema says so (RFT1xx), not this rule.
  if (raw !== undefined && (typeof raw !== 'number' || !Number.isInteger(raw))) return [];
  const want = raw ?? 1;
  if (counts.includes(want)) return [];
  const sizes = counts.join(', ');
  const next = counts.find((c) => c >= want) ?? counts[counts.length - 1]!;
  const at = countNode ?? nodeAt(ctx.root, ['target', 'gpu'])!;
  const message =
    raw === undefined
      ? `${name} sells ${gpu} only in machines of ${sizes} GPUs, and target.gpu_count is 1 when not given: no offer matches. Add gpu_count: ${next} (and launcher.num_processes to match), or pick another GPU.`
      : `${name} sells ${gpu} only in machines of ${sizes} GPUs; gpu_count ${want} matches no offer. Use ${next} (and launcher.num_processes to match), or pick another GPU.`;
  const fixes: Fix[] = countNode
    ? [{ title: `Change to ${next} GPUs (a machine ${name} sells)`, edits: [replaceNode(countNode, next, ctx.syntax)], preferred: true }]
    : [];
  return [{ start: at.start, end: Math.max(at.end, at.start + 1), severity, code: 'RFT819', message, fixes }];
}

/** The offered GPU with at least this one's memory (and bf16 when it has bf16) that is cheapest per GPU on this provider. */
function cheapestLike(p: ProvisionedProvider, g: GpuInfo, ids: readonly GpuId[]): GpuInfo | undefined {
  const perGpu = (c: GpuInfo): number =>
    Math.min(
      ...providerMachines(p)
        .filter((m) => m.gpu === c.id)
        .map((m) => m.perHour / m.gpuCount),
    );
  const cands = ids.map((id) => GPU_CATALOG[id]).filter((c) => c.vramGb >= g.vramGb && (!g.bf16 || c.bf16));
  return cands.sort((a, b) => perGpu(a) - perGpu(b))[0];
}
