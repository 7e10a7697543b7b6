// Filtering and ordering offers the same way for every provider, so the picker reads consistently.
import type { Offer, OfferQuery } from './provider';

/** GPU ids compare loosely: "a100" matches A100-40GB and A100-80GB, "A100-80GB" only itself. */
export function gpuMatches(offerGpu: string, wanted: string): boolean {
  const norm = (s: string): string => s.toUpperCase().replace(/[\s_]/g, '');
  const o = norm(offerGpu);
  const w = norm(wanted);
  return o === w || (!w.includes('-') && o.split('-')[0] === w);
}

export function matchesQuery(offer: Offer, query: OfferQuery): boolean {
  if (query.gpu && !gpuMatches(offer.gpu, query.gpu)) return false;
  if (query.gpuCount !== undefined && offer.gpuCount !== query.gpuCount) return false;
  if (query.region && offer.region !== query.region && offer.region !== '-') return false;
  if (query.spot !== undefined && offer.spot !== query.spot) return false;
  // GCP's N1 offers are named machine+accelerator (n1-standard-4+nvidia-tesla-t4x1); a spec names the machine type.
  if (query.instanceType && offer.instanceType !== query.instanceType && offer.instanceType.split('+')[0] !== query.instanceType) return false;
  // An offer without a zone (a provider without zones, a price for the whole region) is not ruled out by one.
  if (query.zone && offer.zone && offer.zone !== query.zone) return false;
  return true;
}

const capacityRank = { available: 0, unknown: 1, unavailable: 2 } as const;

/**
 * Launchable first (capacity now, then unknown, then none), then cheapest per GPU-hour, then
 * cheapest instance, then fewer GPUs, then a stable name order so equal rows never shuffle.
 */
export function compareOffers(a: Offer, b: Offer): number {
  return (
    capacityRank[a.capacity] - capacityRank[b.capacity] ||
    a.pricePerHour / Math.max(1, a.gpuCount) - b.pricePerHour / Math.max(1, b.gpuCount) ||
    a.pricePerHour - b.pricePerHour ||
    a.gpuCount - b.gpuCount ||
    a.provider.localeCompare(b.provider) ||
    a.instanceType.localeCompare(b.instanceType) ||
    a.region.localeCompare(b.region) ||
    (a.zone ?? '').localeCompare(b.zone ?? '') ||
    Number(a.spot) - Number(b.spot) ||
    a.gpu.localeCompare(b.gpu) ||
    a.vramGiB - b.vramGiB
  );
}

export function sortOffers(offers: readonly Offer[]): Offer[] {
  return [...offers].sort(compareOffers);
}

/** The cheapest offer that can be launched now for the query, or undefined. */
export function bestOffer(offers: readonly Offer[], query: OfferQuery): Offer | undefined {
  return sortOffers(offers.filter((o) => matchesQuery(o, query) && o.capacity !== 'unavailable'))[0];
}
