// GPU instance types on EC2 with their on-demand list prices (USD/hour, Linux, us-east-1, as published
// in 2025; p5 after the June 2025 reduction). Other regions differ by a few percent; spot prices come
// live from DescribeSpotPriceHistory. VRAM is per GPU. No P3 (V100): no current Deep Learning AMI supports
// it (ec2/dlami.ts), and an instance booted from one would come up without a working driver.

export interface Ec2GpuType {
  readonly instanceType: string;
  readonly gpu: string;
  readonly gpuCount: number;
  readonly vramGiB: number;
  readonly vcpus: number;
  readonly memoryGiB: number;
  readonly onDemandPerHour: number;
}

const t = (instanceType: string, gpu: string, gpuCount: number, vramGiB: number, vcpus: number, memoryGiB: number, onDemandPerHour: number): Ec2GpuType => ({
  instanceType,
  gpu,
  gpuCount,
  vramGiB,
  vcpus,
  memoryGiB,
  onDemandPerHour,
});

export const EC2_GPU_TYPES: readonly Ec2GpuType[] = [
  t('g4dn.xlarge', 'T4', 1, 16, 4, 16, 0.526),
  t('g4dn.2xlarge', 'T4', 1, 16, 8, 32, 0.752),
  t('g4dn.4xlarge', 'T4', 1, 16, 16, 64, 1.204),
  t('g4dn.12xlarge', 'T4', 4, 16, 48, 192, 3.912),
  t('g4dn.metal', 'T4', 8, 16, 96, 384, 7.824),
  t('g5.xlarge', 'A10G', 1, 24, 4, 16, 1.006),
  t('g5.2xlarge', 'A10G', 1, 24, 8, 32, 1.212),
  t('g5.4xlarge', 'A10G', 1, 24, 16, 64, 1.624),
  t('g5.12xlarge', 'A10G', 4, 24, 48, 192, 5.672),
  t('g5.48xlarge', 'A10G', 8, 24, 192, 768, 16.288),
  t('g6.xlarge', 'L4', 1, 24, 4, 16, 0.8048),
  t('g6.2xlarge', 'L4', 1, 24, 8, 32, 0.9776),
  t('g6.12xlarge', 'L4', 4, 24, 48, 192, 4.6016),
  t('g6.48xlarge', 'L4', 8, 24, 192, 768, 13.3504),
  t('p4d.24xlarge', 'A100-40GB', 8, 40, 96, 1152, 32.7726),
  t('p4de.24xlarge', 'A100-80GB', 8, 80, 96, 1152, 40.9657),
  t('p5.48xlarge', 'H100', 8, 80, 192, 2048, 55.04),
];

export function ec2TypeInfo(instanceType: string): Ec2GpuType | undefined {
  return EC2_GPU_TYPES.find((x) => x.instanceType === instanceType);
}
