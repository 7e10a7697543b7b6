// Lambda Cloud's GPU models as its instance type names spell them, with each model's memory per GPU.
// Unlike EC2 (ec2/catalog.ts) and GCP (gcp/catalog.ts) the prices are not listed here: Lambda's
// /instance-types answer carries them live, so only the reading of a type's name is ours.

/** An instance type as Lambda's /instance-types and /instances answers describe it. */
export interface LambdaInstanceType {
  readonly name: string;
  readonly description?: string;
  readonly gpu_description?: string;
  readonly price_cents_per_hour: number;
  readonly specs?: { readonly vcpus?: number; readonly memory_gib?: number; readonly gpus?: number };
}

const KNOWN_GPUS: ReadonlyArray<[RegExp, string, number]> = [
  [/a100_80gb/, 'A100-80GB', 80],
  [/a100/, 'A100-40GB', 40],
  [/h100/, 'H100', 80],
  [/h200/, 'H200', 141],
  [/gh200/, 'GH200', 96],
  [/b200/, 'B200', 180],
  [/a6000/, 'A6000', 48],
  [/rtx6000/, 'RTX6000', 24],
  [/a10(?!0)/, 'A10', 24],
  [/v100/, 'V100', 16],
];

/** Reads GPU model, count and memory from a Lambda instance type (gpu_8x_a100_80gb_sxm4 → 8 × A100-80GB). */
export function lambdaGpuOf(t: LambdaInstanceType): { gpu: string; count: number; vramGiB: number } {
  const m = /^gpu_(\d+)x_(.+)$/.exec(t.name);
  const count = t.specs?.gpus ?? (m ? Number(m[1]) : 1);
  const model = m?.[2] ?? t.name;
  const fromDescription = /(\d+)\s*GB/i.exec(t.gpu_description ?? '');
  // gh200 also matches h200's pattern, so test the longer names first.
  const ordered = [...KNOWN_GPUS].sort((a, b) => b[1].length - a[1].length);
  const known = ordered.find(([re]) => re.test(model));
  const vram = fromDescription ? Number(fromDescription[1]) : (known?.[2] ?? 0);
  const gpu = known ? (known[1] === 'A100-40GB' && vram >= 80 ? 'A100-80GB' : known[1]) : model.toUpperCase();
  return { gpu, count, vramGiB: vram };
}

/**
 * Lambda Cloud's on-demand instance types (docs.lambda.ai, 2025), read through
 * lambdaGpuOf below so the config checks and the provider cannot disagree on what a name means. Its A10 is not the A10G and
 * GH200/B200/A6000/RTX 6000 are outside the catalog: none of them is a catalog id a spec can name.
 */
export const LAMBDA_INSTANCE_TYPE_NAMES: readonly string[] = [
  'gpu_1x_a10',
  'gpu_1x_a6000',
  'gpu_1x_rtx6000',
  'gpu_8x_v100',
  'gpu_1x_a100',
  'gpu_1x_a100_sxm4',
  'gpu_2x_a100',
  'gpu_4x_a100',
  'gpu_8x_a100',
  'gpu_8x_a100_80gb_sxm4',
  'gpu_1x_h100_pcie',
  'gpu_1x_h100_sxm5',
  'gpu_2x_h100_sxm5',
  'gpu_4x_h100_sxm5',
  'gpu_8x_h100_sxm5',
  'gpu_1x_gh200',
  'gpu_8x_b200_sxm6',
];
