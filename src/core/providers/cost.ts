// Money, shown before launch (estimate), while the instance lives (running) and in the run record (final).
// Billing rules differ: EC2 and GCP bill per second with a 60 s minimum, Lambda per minute started.
import type { Offer, ProviderKind } from './provider';

export interface BillingRule {
  /** Smallest billed unit, in seconds. */
  readonly incrementSeconds: number;
  /** Minimum billed duration, in seconds. */
  readonly minimumSeconds: number;
}

export const BILLING: Readonly<Record<ProviderKind, BillingRule>> = {
  ec2: { incrementSeconds: 1, minimumSeconds: 60 },
  gcp: { incrementSeconds: 1, minimumSeconds: 60 },
  lambda: { incrementSeconds: 60, minimumSeconds: 60 },
  ssh: { incrementSeconds: 1, minimumSeconds: 0 },
  local: { incrementSeconds: 1, minimumSeconds: 0 },
};

/** Billed seconds for a lifetime under a rule. Zero or negative lifetimes cost nothing. */
export function billedSeconds(seconds: number, rule: BillingRule): number {
  if (!(seconds > 0)) return 0;
  const rounded = Math.ceil(seconds / rule.incrementSeconds) * rule.incrementSeconds;
  return Math.max(rule.minimumSeconds, rounded);
}

/** USD, rounded to the cent (half up), so records and the UI agree. */
function roundUsd(usd: number): number {
  return Math.round((usd + Number.EPSILON) * 100) / 100;
}

export function costFor(pricePerHour: number, seconds: number, provider: ProviderKind): number {
  return roundUsd((pricePerHour * billedSeconds(seconds, BILLING[provider])) / 3600);
}

export interface CostEstimate {
  readonly pricePerHour: number;
  /** Training time the plan expects, in hours. */
  readonly trainingHours: number;
  /** Boot, SSH wait, environment setup and download of results, billed too. */
  readonly overheadHours: number;
  readonly totalUsd: number;
  /** Shown next to the figure: what the estimate assumes. */
  readonly basis: string;
}

/** Boot + bootstrap time before training starts; measured order of magnitude on these clouds. */
export const DEFAULT_OVERHEAD_HOURS: Readonly<Record<ProviderKind, number>> = {
  lambda: 0.1,
  ec2: 0.15,
  gcp: 0.15,
  ssh: 0,
  local: 0,
};

export function estimateRunCost(
  offer: Pick<Offer, 'provider' | 'pricePerHour' | 'spot'>,
  trainingHours: number,
  overheadHours = DEFAULT_OVERHEAD_HOURS[offer.provider],
): CostEstimate {
  const hours = Math.max(0, trainingHours) + Math.max(0, overheadHours);
  const totalUsd = costFor(offer.pricePerHour, hours * 3600, offer.provider);
  const basis = `${formatUsd(offer.pricePerHour)}/h × ${hours.toFixed(2)} h (${trainingHours.toFixed(2)} h training + ${overheadHours.toFixed(2)} h setup)${offer.spot ? ', spot price can change' : ''}`;
  return { pricePerHour: offer.pricePerHour, trainingHours, overheadHours, totalUsd, basis };
}

/** Training hours from a step count and a measured or assumed seconds-per-step. */
export function trainingHoursFromSteps(steps: number, secondsPerStep: number): number {
  if (!(steps > 0) || !(secondsPerStep > 0)) return 0;
  return (steps * secondsPerStep) / 3600;
}

/** Cost so far of an instance that is still alive. */
export function runningCost(pricePerHour: number, launchedAtMs: number, nowMs: number, provider: ProviderKind): number {
  return costFor(pricePerHour, (nowMs - launchedAtMs) / 1000, provider);
}

export interface FinalCost {
  readonly provider: ProviderKind;
  readonly instanceType: string;
  readonly pricePerHour: number;
  readonly launchedAt: string;
  readonly endedAt: string;
  readonly billedSeconds: number;
  readonly usd: number;
}

/** The cost line that goes into the run record when the instance is gone. */
export function finalCost(provider: ProviderKind, instanceType: string, pricePerHour: number, launchedAtMs: number, endedAtMs: number): FinalCost {
  const seconds = billedSeconds((endedAtMs - launchedAtMs) / 1000, BILLING[provider]);
  return {
    provider,
    instanceType,
    pricePerHour,
    launchedAt: new Date(launchedAtMs).toISOString(),
    endedAt: new Date(endedAtMs).toISOString(),
    billedSeconds: seconds,
    usd: roundUsd((pricePerHour * seconds) / 3600),
  };
}

export function formatUsd(usd: number): string {
  return `$${usd.toFixed(usd < 10 ? 3 : 2).replace(/(\.\d\d)0$/, '$1')}`;
}
