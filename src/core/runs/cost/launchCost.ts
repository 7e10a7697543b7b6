// The money line of the Start Training confirmation: the offer's price per hour times the run's estimated
// hours (runLength.ts) plus start-up, under the provider's billing rule; or, when the run's length cannot be
// known, the price per hour and why there is no total. Never a flat "first hour".
import { estimateRunCost, formatUsd } from '../../providers/cost';
import type { CostEstimate } from '../../providers/cost';
import type { Offer } from '../../providers/provider';
import type { RunLength } from './runLength';
import type { ReadyWait } from '../../providers/readyWait';
import { SETUP_HOURS } from '../../providers/readyWait';

export interface LaunchCost {
  readonly text: string;
  readonly estimate?: CostEstimate;
}

export function launchCost(
  offer: Pick<Offer, 'provider' | 'pricePerHour' | 'spot' | 'instanceType' | 'priceSource'>,
  length: RunLength,
  ready?: ReadyWait,
): LaunchCost {
  // The rate's source and date: a region's price list, a zone's spot history, or a catalog named as the fallback.
  const rate = `${formatUsd(offer.pricePerHour)}/h (${offer.instanceType}${offer.spot ? ', spot' : ''}${offer.priceSource ? `; ${offer.priceSource}` : ''})`;
  // The instance bills from the launch call: its usual wait for SSH (which grows with the GPU count) is part of the total.
  const overhead = ready ? ready.typicalMinutes / 60 + SETUP_HOURS : undefined;
  if (!length.known) return { text: `${rate}; no total: ${length.reason}.` };
  const estimate = estimateRunCost(offer, length.hours, overhead);
  // The throughput's band carried to money: the same billing rule at the band's shortest and longest hours.
  const low = estimateRunCost(offer, length.hoursLow, overhead).totalUsd;
  const high = estimateRunCost(offer, length.hoursHigh, overhead).totalUsd;
  return {
    text: `${rate}; about ${formatUsd(estimate.totalUsd)} for this run (${formatUsd(low)}–${formatUsd(high)}): ${estimate.basis}. Training: ${length.basis}.`,
    estimate,
  };
}
