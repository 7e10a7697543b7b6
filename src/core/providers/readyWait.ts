// Time to ready: how long a new instance takes to answer SSH, and how long the launch waits before it gives up
// and terminates it (issue 32.5). Large instances are slow: 8-GPU machines on Lambda and EC2 commonly take
// 10–30 minutes from the launch call to sshd (the GPUs' firmware and NVLink/fabric manager start before the
// OS hands over, and an 8×A100/H100 EC2 image checks its EFA devices), so the old fixed 15 minutes terminated
// instances that were about to come up: billed for nothing. The default now grows with the GPU count and the
// spec can set its own (`target.ready_timeout_min`). The typical wait is billed too, so the cost includes it.
import type { ProviderKind } from './provider';

export interface ReadyWait {
  /** What a launch usually takes to answer SSH, in minutes: billed, and shown before launch. */
  readonly typicalMinutes: number;
  /** How long the launch waits before it terminates the instance, in minutes. */
  readonly timeoutMinutes: number;
  /** Where the timeout comes from: the spec, or this provider's default for this GPU count. */
  readonly fromSpec: boolean;
}

/** Bootstrap (runner sync, environment) and the results' download, after SSH answers; billed like the wait. */
export const SETUP_HOURS = 0.05;

/** typical = base + perGpu × (GPUs − 1); timeout likewise, never under 15 minutes. */
const READY: Readonly<Record<ProviderKind, { typical: [number, number]; timeout: [number, number] }>> = {
  // 1 GPU ≈ 4 min, 8 GPUs ≈ 20 min typical (10–30 seen); gives up after 15 min (1 GPU) to 45 min (8 GPUs).
  lambda: { typical: [4, 16 / 7], timeout: [15, 30 / 7] },
  // DLAMI boot ≈ 5 min on one GPU, ≈ 20 min on p4d/p5 (EFA, fabric manager); 15 to 45 min before giving up.
  ec2: { typical: [5, 15 / 7], timeout: [15, 30 / 7] },
  // GCP's deep-learning image boots faster; its 8-GPU a2/a3 shapes still take ≈ 12 min. 15 to 30 min.
  gcp: { typical: [4, 8 / 7], timeout: [15, 15 / 7] },
  ssh: { typical: [0, 0], timeout: [15, 0] },
  local: { typical: [0, 0], timeout: [15, 0] },
};

export function readyWait(provider: ProviderKind, gpuCount: number, specTimeoutMin?: unknown): ReadyWait {
  const r = READY[provider];
  const extra = Math.max(0, Math.floor(Number.isFinite(gpuCount) ? gpuCount : 1) - 1);
  const typicalMinutes = Math.round(r.typical[0] + r.typical[1] * extra);
  const fromSpec = typeof specTimeoutMin === 'number' && Number.isFinite(specTimeoutMin) && specTimeoutMin > 0;
  const timeoutMinutes = fromSpec ? specTimeoutMin : Math.round(Math.max(15, r.timeout[0] + r.timeout[1] * extra));
  return { typicalMinutes, timeoutMinutes, fromSpec };
}

/** The spec's `target.ready_timeout_min`, if it gives one. */
/** The part of a run spec (config's RunSpec or LooseRunSpec; providers sit below config) this reads. */
export interface ReadyTimeoutSpec {
  readonly target?: { readonly ready_timeout_min?: number | undefined } | undefined;
}

export function specReadyTimeout(spec: ReadyTimeoutSpec): number | undefined {
  const v = spec.target?.ready_timeout_min;
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : undefined;
}

/** One line for the Start confirmation. */
export function describeReadyWait(w: ReadyWait, provider: ProviderKind, gpuCount: number): string {
  const gpus = `${gpuCount} GPU${gpuCount === 1 ? '' : 's'}`;
  const limit = w.fromSpec ? `target.ready_timeout_min ${w.timeoutMinutes}` : `the default for ${gpus}; set target.ready_timeout_min to change it`;
  return `Time to ready: ${provider} instances with ${gpus} usually answer SSH in about ${w.typicalMinutes} min (billed, included above); the launch waits up to ${w.timeoutMinutes} min (${limit}) before it terminates the instance.`;
}
