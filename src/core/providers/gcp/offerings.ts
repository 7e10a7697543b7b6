// What GCP offers for a GPU query: the catalog's shapes with the zone's accelerators (present is "unknown"
// capacity, absent "unavailable"), and the zones of some regions that have an accelerator, for failover.
import { requireCloudName } from '../cloudNames';
import { matchesQuery } from '../offers';
import type { Offer, OfferQuery } from '../provider';
import type { GcpApi } from './api';
import { regionOf, tail, zonePath } from './api';
import { GCP_GPU_SHAPES, GCP_PRICE_SOURCE, gcpOfferName } from './catalog';

/** Where the default zone comes from: a spec's target.zone replaces the setting (providerSelection.ts). */
export const ZONE_FIELD = 'target.zone (or the remoteFinetune.gcp.zone setting)';

export async function listGcpOffers(api: GcpApi, query: OfferQuery, signal?: AbortSignal): Promise<Offer[]> {
  // A three-part region (us-central1-a) is a zone; an unchecked region would only filter the offers.
  const regionIsZone = query.region !== undefined && query.region.split('-').length === 3;
  const zone = query.zone ?? (regionIsZone ? query.region : undefined) ?? api.options.zone;
  const field = query.zone ? 'target.zone' : regionIsZone ? 'target.region' : ZONE_FIELD;
  if (query.region && !regionIsZone) requireCloudName('gcp', 'gcp-region', 'target.region', query.region);
  const res = (await api.call('GET', `${zonePath(zone, field)}/acceleratorTypes`, undefined, signal)) as
    { items?: ReadonlyArray<{ name: string }> } | undefined;
  const inZone = new Set((res?.items ?? []).map((a) => a.name));
  const region = zone.replace(/-[a-z]$/, '');
  const offers: Offer[] = [];
  for (const shape of GCP_GPU_SHAPES) {
    for (const spot of [false, true]) {
      offers.push({
        provider: 'gcp',
        instanceType: gcpOfferName(shape),
        gpu: shape.gpu,
        gpuCount: shape.gpuCount,
        vramGiB: shape.vramGiB,
        region,
        zone,
        pricePerHour: spot ? shape.spotPerHour : shape.onDemandPerHour,
        priceSource: GCP_PRICE_SOURCE,
        spot,
        // GCP reports which accelerators a zone has, not free capacity: present is "unknown", absent is "unavailable".
        capacity: inZone.has(shape.accelerator) ? 'unknown' : 'unavailable',
        vcpus: shape.vcpus,
        memoryGiB: shape.memoryGiB,
      });
    }
  }
  return offers.filter((o) => matchesQuery(o, { ...query, region: query.region ? (query.region.split('-').length === 3 ? region : query.region) : undefined }));
}

/**
 * Zones of these regions that have the accelerator (aggregated acceleratorTypes filtered by name), the regions
 * in the order given, zones by name within each.
 */
export async function acceleratorZones(api: GcpApi, accelerator: string, regions: readonly string[], signal?: AbortSignal): Promise<string[]> {
  const res = (await api.call('GET', `/aggregated/acceleratorTypes?filter=${encodeURIComponent(`name = "${accelerator}"`)}`, undefined, signal)) as
    { items?: Record<string, { acceleratorTypes?: ReadonlyArray<{ name?: string; zone?: string }> }> } | undefined;
  const zones = new Set<string>();
  for (const [scope, v] of Object.entries(res?.items ?? {}))
    for (const a of v.acceleratorTypes ?? []) if (a.name === accelerator) zones.add(tail(a.zone) || scope.replace(/^zones\//, ''));
  const order = [...new Set(regions)];
  return [...zones].filter((z) => order.includes(regionOf(z))).sort((a, b) => order.indexOf(regionOf(a)) - order.indexOf(regionOf(b)) || a.localeCompare(b));
}
