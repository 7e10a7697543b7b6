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
import { EC2_GPU_TYPES } from '../../providers/ec2Catalog';
import { GCP_GPU_SHAPES } from '../../providers/gcpCatalog';
import { LAMBDA_INSTANCE_TYPE_NAMES, lambdaGpuOf } from '../../providers/lambdaCatalog';

export type ProvisionedProvider = 'lambda' | 'ec2' | 'gcp';

const NAMES: Readonly<Record<ProvisionedProvider, string>> = { lambda: 'Lambda', ec2: 'EC2', gcp: 'GCP' };

/** Catalog GPU → the GPU counts one machine of this provider has. */
export function providerGpus(p: ProvisionedProvider): ReadonlyMap<GpuId, readonly number[]> {
  const rows: Array<{ gpu: string; count: number }> =
    p === 'ec2'
      ? EC2_GPU_TYPES.map((t) => ({ gpu: t.gpu, count: t.gpuCount }))
      : p === 'gcp'
        ? GCP_GPU_SHAPES.map((s) => ({ gpu: s.gpu, count: s.gpuCount }))
        : LAMBDA_INSTANCE_TYPE_NAMES.map((name) => lambdaGpuOf({ name, price_cents_per_hour: 0 }));
  const out = new Map<GpuId, number[]>();
  for (const r of rows) {
    const g = findGpu(r.gpu);
    // Only exact catalog names: A10 is not A10G.
    if (!g || g.id !== r.gpu) continue;
    const counts = out.get(g.id) ?? [];
    if (!counts.includes(r.count)) counts.push(r.count);
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
  // The GPU count is not checked yet: examples/deepspeed-zero2-multi asks EC2 for 4 A100-40GB on a
  // p4d.24xlarge (8 GPUs), which no offer matches; providerGpus() has the counts for when it is.
  if (offered.has(gpu.id)) return [];
  const ids = [...offered.keys()];
  const alt = cheapestLike(gpu, ids);
  const fixes: Fix[] = alt ? [{ title: `Change to ${alt.id} (offered on ${name})`, edits: [replaceNode(gpuNode, alt.id, ctx.syntax)], preferred: true }] : [];
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

/** The cheapest offered GPU with at least this one's memory (and bf16 when it has bf16). */
function cheapestLike(g: GpuInfo, ids: readonly GpuId[]): GpuInfo | undefined {
  const cands = ids.map((id) => GPU_CATALOG[id]).filter((c) => c.vramGb >= g.vramGb && (!g.bf16 || c.bf16));
  return cands.sort((a, b) => a.pricePerHourUsd - b.pricePerHourUsd)[0];
}
