// Where a run can go, as the Start Training picker lists it: SSH hosts (probed GPUs shown) and cloud
// offers sorted by price with capacity. The composition root supplies the sources.
import type { Provider } from '../../core/providers/provider';
import type { TargetSpec } from '../../core/providers/targetSpec';
import type { KnownHostEntry } from '../../core/hosts/hostSources';
import type { ProbeOutcome } from '../../core/hosts/gpuCheck';

export interface TargetSources {
  /** Saved, ssh_config and past runs' hosts with their last probe; the spec's host and hosts with `wanted` first. */
  sshHosts(specHost?: string, wanted?: readonly string[]): readonly KnownHostEntry[];
  /** The picked host's GPUs: a fresh cached probe or a new one; undefined when the person cancelled the probe. */
  ensureProbe(host: string): Promise<ProbeOutcome | undefined>;
  /**
   * Cloud providers the user has credentials for; a provider that cannot be built is left out with its reason.
   * With a target, the ones it names (an EC2 region, a GCP zone from the run spec) instead of the settings'.
   */
  cloudProviders(target?: Partial<TargetSpec>): Promise<{ readonly providers: readonly Provider[]; readonly problems: readonly string[] }>;
}

export type { TargetChoice } from '../../core/runs/cost/startEstimate';
