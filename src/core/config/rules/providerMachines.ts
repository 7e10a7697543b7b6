// The machines each cloud launches, from the providers' static catalogs, as a run spec's target names them:
// the GPU fixes and the instance-type check (providerGpu.ts, instanceFit.ts) read one list.
import type { GpuId, GpuInfo } from '../../gpu/catalog';
import { findGpu } from '../../gpu/catalog';
import { EC2_GPU_TYPES } from '../../providers/ec2/catalog';
import { GCP_GPU_SHAPES } from '../../providers/gcp/catalog';
import { LAMBDA_INSTANCE_TYPE_NAMES, lambdaGpuOf } from '../../providers/lambda/catalog';

export type ProvisionedProvider = 'lambda' | 'ec2' | 'gcp';

/** One machine a provider launches, named as a spec's target.instance_type names it (GCP: the machine type). */
export interface ProviderMachine {
  readonly instanceType: string;
  readonly gpu: string;
  readonly gpuCount: number;
  /** USD per hour for the machine; Lambda's live prices are not in the project, so its GPUs' list price. */
  readonly perHour: number;
}

export function providerMachines(p: ProvisionedProvider): readonly ProviderMachine[] {
  if (p === 'ec2') return EC2_GPU_TYPES.map((t) => ({ instanceType: t.instanceType, gpu: t.gpu, gpuCount: t.gpuCount, perHour: t.onDemandPerHour }));
  if (p === 'gcp') return GCP_GPU_SHAPES.map((s) => ({ instanceType: s.machineType, gpu: s.gpu, gpuCount: s.gpuCount, perHour: s.onDemandPerHour }));
  return LAMBDA_INSTANCE_TYPE_NAMES.map((name) => {
    const g = lambdaGpuOf({ name, price_cents_per_hour: 0 });
    const known = findGpu(g.gpu);
    return { instanceType: name, gpu: g.gpu, gpuCount: g.count, perHour: (known?.id === g.gpu ? known.pricePerHourUsd : 0) * g.count };
  });
}

/** The cheapest machine of this provider with exactly `count` of this GPU. */
export function cheapestMachine(p: ProvisionedProvider, gpu: GpuId, count: number): ProviderMachine | undefined {
  return providerMachines(p)
    .filter((m) => m.gpu === gpu && m.gpuCount === count)
    .sort((a, b) => a.perHour - b.perHour || a.instanceType.localeCompare(b.instanceType))[0];
}

/** Per GPU-hour on this provider for a machine of `count` of this GPU; undefined when it sells no such machine. */
export function providerGpuPrice(p: ProvisionedProvider, gpu: GpuInfo, count: number): number | undefined {
  const m = cheapestMachine(p, gpu.id, count);
  return m ? m.perHour / count : undefined;
}

export function provisionedProvider(v: unknown): ProvisionedProvider | undefined {
  return v === 'lambda' || v === 'ec2' || v === 'gcp' ? v : undefined;
}
