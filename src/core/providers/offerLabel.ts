// One offer in words, as the editor's offer picker and the CLI's `offers` show it: GPUs, price, where,
// capacity, and what a run of the planned length would cost.
import { estimateRunCost, formatUsd } from './cost';
import type { Offer } from './provider';

export function offerLabel(o: Offer, hours: number): { label: string; description: string; detail: string } {
  const est = estimateRunCost(o, hours);
  const capacity = o.capacity === 'available' ? 'capacity now' : o.capacity === 'unknown' ? 'capacity not published' : 'no capacity now';
  return {
    label: `${o.gpuCount}× ${o.gpu} ${o.vramGiB ? `${o.vramGiB} GB` : ''}`.trim(),
    description: `${formatUsd(o.pricePerHour)}/h${o.spot ? ' spot' : ''} · ${o.provider} ${o.instanceType} · ${o.zone ?? o.region}`,
    detail: `${capacity} · about ${formatUsd(est.totalUsd)} for ${hours} h of training (${est.basis})`,
  };
}
