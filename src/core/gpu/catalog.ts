// GPU catalog: the facts the config checks and the VRAM estimate need.
// Sources: NVIDIA data sheets (memory, compute capability); bf16 needs compute capability >= 8.0
// (Ampere), FlashAttention-2 supports Ampere, Ada and Hopper only (Dao-AILab/flash-attention README),
// FP8 needs Ada (8.9) or Hopper (9.0) (NVIDIA Transformer Engine docs).
// Prices are indicative on-demand USD per GPU-hour (GCP/AWS/Lambda list prices, 2024–2025),
// used only to order "a larger GPU" suggestions by cost.

export const GPU_IDS = ['T4', 'V100', 'A10G', 'L4', 'RTX3090', 'RTX4090', 'A100-40GB', 'A100-80GB', 'H100', 'H200'] as const;
export type GpuId = (typeof GPU_IDS)[number];

export interface GpuInfo {
  readonly id: GpuId;
  readonly name: string;
  /** Memory in GB (10^9 bytes) as NVIDIA states it. */
  readonly vramGb: number;
  readonly computeCapability: number;
  readonly bf16: boolean;
  readonly flashAttention2: boolean;
  readonly fp8: boolean;
  readonly pricePerHourUsd: number;
}

const gpu = (id: GpuId, name: string, vramGb: number, computeCapability: number, pricePerHourUsd: number): GpuInfo => ({
  id,
  name,
  vramGb,
  computeCapability,
  bf16: computeCapability >= 8.0,
  flashAttention2: computeCapability >= 8.0,
  fp8: computeCapability >= 8.9,
  pricePerHourUsd,
});

export const GPU_CATALOG: Readonly<Record<GpuId, GpuInfo>> = {
  T4: gpu('T4', 'NVIDIA T4', 16, 7.5, 0.35),
  V100: gpu('V100', 'NVIDIA V100', 16, 7.0, 2.48),
  A10G: gpu('A10G', 'NVIDIA A10G', 24, 8.6, 1.01),
  L4: gpu('L4', 'NVIDIA L4', 24, 8.9, 0.71),
  RTX3090: gpu('RTX3090', 'NVIDIA GeForce RTX 3090', 24, 8.6, 0.44),
  RTX4090: gpu('RTX4090', 'NVIDIA GeForce RTX 4090', 24, 8.9, 0.69),
  'A100-40GB': gpu('A100-40GB', 'NVIDIA A100 40GB', 40, 8.0, 1.29),
  'A100-80GB': gpu('A100-80GB', 'NVIDIA A100 80GB', 80, 8.0, 1.79),
  H100: gpu('H100', 'NVIDIA H100 80GB', 80, 9.0, 2.49),
  H200: gpu('H200', 'NVIDIA H200 141GB', 141, 9.0, 3.79),
};

export function isGpuId(s: string): s is GpuId {
  return (GPU_IDS as readonly string[]).includes(s);
}

/** Accepts the catalog id and the spellings people type (a100, A100-40G, "Tesla T4", nvidia-tesla-t4). */
export function findGpu(s: string): GpuInfo | undefined {
  if (isGpuId(s)) return GPU_CATALOG[s];
  const k = s
    .toLowerCase()
    .replace(/^nvidia[- ]?/, '')
    .replace(/^(tesla|geforce)[- ]?/, '')
    .replace(/[\s_]/g, '')
    .replace(/-/g, '');
  const aliases: Record<string, GpuId> = {
    t4: 'T4',
    v100: 'V100',
    a10g: 'A10G',
    l4: 'L4',
    rtx3090: 'RTX3090',
    '3090': 'RTX3090',
    rtx4090: 'RTX4090',
    '4090': 'RTX4090',
    a100: 'A100-40GB',
    a10040gb: 'A100-40GB',
    a10040g: 'A100-40GB',
    a10080gb: 'A100-80GB',
    a10080g: 'A100-80GB',
    h100: 'H100',
    h10080gb: 'H100',
    h200: 'H200',
  };
  const id = aliases[k];
  return id ? GPU_CATALOG[id] : undefined;
}

/** GPUs with at least `gb` of memory, cheapest first. */
export function gpusWithAtLeast(gb: number): GpuInfo[] {
  return GPU_IDS.map((id) => GPU_CATALOG[id])
    .filter((g) => g.vramGb >= gb)
    .sort((a, b) => a.pricePerHourUsd - b.pricePerHourUsd);
}
