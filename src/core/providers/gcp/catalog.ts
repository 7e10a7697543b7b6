// GPU machine shapes on Compute Engine with approximate list prices (USD/hour for the whole VM, us-central1,
// 2025; spot prices move, these are typical). N1 takes attached T4/V100 accelerators; G2, A2 and A3 have
// their GPUs built in. VRAM is per GPU.

/** Where these prices come from and when, shown beside every GCP price. */
export const GCP_PRICE_SOURCE = 'GCP catalog list prices, us-central1, as of 2025 (approximate; spot moves)';

export interface GcpGpuShape {
  readonly machineType: string;
  readonly gpu: string;
  readonly gpuCount: number;
  readonly vramGiB: number;
  /** Set for N1 shapes: the accelerator attached with guestAccelerators. */
  readonly accelerator: string;
  readonly attached: boolean;
  readonly vcpus: number;
  readonly memoryGiB: number;
  readonly onDemandPerHour: number;
  readonly spotPerHour: number;
}

const s = (
  machineType: string,
  gpu: string,
  gpuCount: number,
  vramGiB: number,
  accelerator: string,
  attached: boolean,
  vcpus: number,
  memoryGiB: number,
  onDemandPerHour: number,
  spotPerHour: number,
): GcpGpuShape => ({ machineType, gpu, gpuCount, vramGiB, accelerator, attached, vcpus, memoryGiB, onDemandPerHour, spotPerHour });

export const GCP_GPU_SHAPES: readonly GcpGpuShape[] = [
  s('n1-standard-4', 'T4', 1, 16, 'nvidia-tesla-t4', true, 4, 15, 0.54, 0.18),
  s('n1-standard-8', 'T4', 1, 16, 'nvidia-tesla-t4', true, 8, 30, 0.73, 0.25),
  s('n1-standard-16', 'T4', 2, 16, 'nvidia-tesla-t4', true, 16, 60, 1.46, 0.5),
  s('n1-standard-32', 'T4', 4, 16, 'nvidia-tesla-t4', true, 32, 120, 2.92, 1.0),
  s('n1-standard-8', 'V100', 1, 16, 'nvidia-tesla-v100', true, 8, 30, 2.86, 1.0),
  s('n1-standard-32', 'V100', 4, 16, 'nvidia-tesla-v100', true, 32, 120, 11.44, 4.0),
  s('g2-standard-8', 'L4', 1, 24, 'nvidia-l4', false, 8, 32, 0.85, 0.34),
  s('g2-standard-24', 'L4', 2, 24, 'nvidia-l4', false, 24, 96, 2.0, 0.8),
  s('g2-standard-48', 'L4', 4, 24, 'nvidia-l4', false, 48, 192, 4.0, 1.6),
  s('a2-highgpu-1g', 'A100-40GB', 1, 40, 'nvidia-tesla-a100', false, 12, 85, 3.67, 1.47),
  s('a2-highgpu-2g', 'A100-40GB', 2, 40, 'nvidia-tesla-a100', false, 24, 170, 7.35, 2.94),
  s('a2-highgpu-4g', 'A100-40GB', 4, 40, 'nvidia-tesla-a100', false, 48, 340, 14.69, 5.88),
  s('a2-highgpu-8g', 'A100-40GB', 8, 40, 'nvidia-tesla-a100', false, 96, 680, 29.39, 11.76),
  s('a2-ultragpu-1g', 'A100-80GB', 1, 80, 'nvidia-a100-80gb', false, 12, 170, 5.07, 2.03),
  s('a2-ultragpu-8g', 'A100-80GB', 8, 80, 'nvidia-a100-80gb', false, 96, 1360, 40.55, 16.22),
  s('a3-highgpu-8g', 'H100', 8, 80, 'nvidia-h100-80gb', false, 208, 1872, 88.49, 29.5),
];

/**
 * Deep Learning VM images (project deeplearning-platform-release): PyTorch 2.7, CUDA 12.8, Ubuntu 22.04 with
 * the NVIDIA 570 driver installed (the runner needs a CUDA torch on the image). Families are retired with
 * their OS or CUDA line (common-cu124-debian-11-py310 has only deprecated images left), so the family is
 * checked with images.getFromFamily before every launch rather than trusted.
 */
export const DLVM_IMAGE_PROJECT = 'deeplearning-platform-release';
export const DLVM_IMAGE_FAMILY = 'pytorch-2-7-cu128-ubuntu-2204-nvidia-570';

/** "n1-standard-8+nvidia-tesla-t4x1" names an N1 shape with its accelerator; the others are the machine type. */
export function gcpOfferName(shape: GcpGpuShape): string {
  return shape.attached ? `${shape.machineType}+${shape.accelerator}x${shape.gpuCount}` : shape.machineType;
}

export function gcpShapeOf(instanceType: string): GcpGpuShape | undefined {
  return GCP_GPU_SHAPES.find((x) => gcpOfferName(x) === instanceType);
}
