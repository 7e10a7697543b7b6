// The rules of a spot run's attempts, kept pure so they are tested alone: whether an ended instance is
// replaced (only a reclaim by the cloud is; a stop, a crash or a finished run never), how many instances the
// spec allows, which launches to try in which order (same zone, another zone, on-demand after N reclaims or
// capacity refusals), and what the attempts cost together. runRelaunch.ts does the launching.
import type { RunAttempt } from '../store/runRecord';
import type { RunSpec } from '../../config/runSpecDefaults';

/** How an attempt ended, as the follower saw it. */
export type AttemptEnd = 'reclaimed' | 'completed' | 'failed' | 'stopped' | 'cancelled';

export interface RelaunchPolicy {
  /** Instances in all, the first included. */
  readonly maxAttempts: number;
  /** After this many reclaims plus spot capacity refusals the replacement is on-demand; undefined: always spot. */
  readonly onDemandAfter?: number;
  /** The spec names a zone: replacements stay in it. */
  readonly zonePinned: boolean;
  /** EC2 starts the same instance again itself (target.spot_recovery: cloud): the extension never replaces it. */
  readonly byCloud?: true;
}

export const DEFAULT_MAX_ATTEMPTS = 3;

const CLOUDS = new Set(['lambda', 'ec2', 'gcp']);

/** The spec's relaunch rules; undefined for anything but a spot instance on a cloud (nothing else is reclaimed). */
export function relaunchPolicyOf(spec: RunSpec): RelaunchPolicy | undefined {
  const { provider, spot, max_attempts, on_demand_after, zone, spot_recovery } = spec.target;
  if (provider === undefined || !CLOUDS.has(provider) || spot !== true) return undefined;
  if (provider === 'ec2' && spot_recovery === 'cloud') return { maxAttempts: 1, zonePinned: true, byCloud: true };
  return {
    maxAttempts: Math.min(max_attempts ?? DEFAULT_MAX_ATTEMPTS, 10),
    ...(on_demand_after !== undefined ? { onDemandAfter: on_demand_after } : {}),
    zonePinned: zone !== undefined && zone.length > 0,
  };
}

export type RelaunchDecision = { readonly relaunch: true; readonly attempt: number } | { readonly relaunch: false; readonly why: string };

/**
 * Whether the attempt that just ended gets a replacement. attempts: every attempt so far, the ended one
 * included. A person's stop is never undone, a crash is not retried (it would crash again, billing), and a
 * spec without spot has nothing to relaunch.
 */
export function decideRelaunch(end: AttemptEnd, attempts: readonly RunAttempt[], policy: RelaunchPolicy | undefined, stopping: boolean): RelaunchDecision {
  if (stopping) return { relaunch: false, why: 'you stopped the run' };
  if (end !== 'reclaimed')
    return { relaunch: false, why: `the run ${end === 'failed' ? 'failed' : `was ${end}`} on its instance; only a reclaim by the cloud is relaunched` };
  if (!policy) return { relaunch: false, why: 'the spec does not ask for spot (target.spot), so nothing relaunches it' };
  if (policy.byCloud)
    return { relaunch: false, why: 'EC2 restarts the same instance itself (target.spot_recovery: cloud), the extension launches no replacement' };
  if (attempts.length >= policy.maxAttempts)
    return { relaunch: false, why: `all ${policy.maxAttempts} attempt${policy.maxAttempts === 1 ? '' : 's'} the spec allows (target.max_attempts) are used` };
  return { relaunch: true, attempt: attempts.length + 1 };
}

export interface LaunchChoice {
  readonly spot: boolean;
  /** undefined: any zone of the region (the provider picks one with capacity). */
  readonly zone?: string;
}

/**
 * The launches to try for a replacement, in order, until one is accepted (a capacity refusal moves to the
 * next): spot in the last zone, spot in any zone (unless the spec pins one), then on-demand once reclaims and
 * refusals reach on_demand_after. An attempt that already ran on-demand stays on-demand.
 */
export function launchChoices(policy: RelaunchPolicy, attempts: readonly RunAttempt[]): LaunchChoice[] {
  const last = attempts[attempts.length - 1];
  const zones: Array<string | undefined> = last?.zone ? [last.zone, ...(policy.zonePinned ? [] : [undefined])] : [undefined];
  const onDemand = zones.map((zone) => ({ spot: false, ...(zone ? { zone } : {}) }));
  if (last && !last.spot) return onDemand;
  const reclaims = attempts.filter((a) => a.reason === 'reclaimed').length;
  const spot = zones.map((zone) => ({ spot: true, ...(zone ? { zone } : {}) }));
  if (policy.onDemandAfter === undefined) return spot;
  return [...spot.slice(0, Math.max(0, policy.onDemandAfter - reclaims)), ...onDemand];
}

/** What the ended attempts cost (the current one bills on, counted apart). */
export function endedAttemptsCost(attempts: readonly RunAttempt[] | undefined): number {
  return (attempts ?? []).reduce((sum, a) => sum + (a.endedAt !== undefined ? (a.costUsd ?? 0) : 0), 0);
}

/** The attempt's one-line summary for the Runs view's tooltip. */
export function describeAttempt(a: RunAttempt, max: number | undefined): string {
  const when = (ms: number): string => new Date(ms).toTimeString().slice(0, 5); // local HH:MM, as the view's other times
  const where = [a.instanceType, a.zone ?? a.region, a.spot ? 'spot' : 'on-demand'].join(', ');
  const span = `${when(a.startedAt)}–${a.endedAt !== undefined ? when(a.endedAt) : 'now'}`;
  const cost = a.costUsd !== undefined ? `, $${a.costUsd.toFixed(2)}` : '';
  const resumed = a.resumedFromStep !== undefined ? `, resumed at step ${a.resumedFromStep}` : '';
  return `attempt ${a.n}${max ? `/${max}` : ''}: ${a.instanceId ?? '?'} (${where}) ${span}${a.reason ? `, ${a.reason}` : ''}${resumed}${cost}`;
}
