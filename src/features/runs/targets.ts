// Where a run can go, as the Start Training picker lists it: SSH hosts (probed GPUs shown) and cloud
// offers sorted by price with capacity. The composition root supplies the sources.
import type { Offer, Provider } from '../../core/providers/types';
import type { TargetSpec } from '../../core/providers/targetSpec';

export interface KnownHost {
  /** ssh_config alias or user@host[:port]. */
  readonly host: string;
  /** Probed GPU names, e.g. ["NVIDIA A100-SXM4-40GB"]; undefined when never probed. */
  readonly gpus?: readonly string[];
}

export interface TargetSources {
  sshHosts(): readonly KnownHost[];
  /**
   * Cloud providers the user has credentials for; a provider that cannot be built is left out with its reason.
   * With a target, the ones it names (an EC2 region, a GCP zone from the run spec) instead of the settings'.
   */
  cloudProviders(target?: Partial<TargetSpec>): Promise<{ readonly providers: readonly Provider[]; readonly problems: readonly string[] }>;
}

export type TargetChoice =
  | { readonly kind: 'ssh'; readonly host: string; readonly gpus?: readonly string[] }
  | { readonly kind: 'cloud'; readonly provider: Provider; readonly offer: Offer };

/** Whether a probed GPU name is of the catalog family asked for ("A100" matches "NVIDIA A100-SXM4-80GB"). */
export function gpuMatches(probed: string, family: string): boolean {
  const norm = (s: string): string => s.toUpperCase().replace(/[^A-Z0-9]/g, '');
  const fam = norm(family.replace(/-\d+GB$/i, ''));
  return norm(probed).includes(fam);
}
