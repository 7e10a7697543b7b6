// What EC2 offers for a GPU query: the region's types and the zones that offer them (DescribeInstanceTypeOfferings),
// on-demand prices (Price List API, or the catalog's) and the last hour's spot prices, and the zones a launch
// may fail over to.
import type { _InstanceType } from '@aws-sdk/client-ec2';
import { requireCloudName } from '../cloudNames';
import { matchesQuery } from '../offers';
import type { Offer, OfferQuery } from '../provider';
import type { ZoneChoice } from '../zoneFailover';
import { EC2_GPU_TYPES } from './catalog';
import { catalogQuote, Ec2Pricing } from './pricing';
import type { PriceQuote } from './pricing';
import type { Ec2Api } from './api';

interface SpotQuote {
  readonly price: number;
  readonly at: number;
}

function spotSource(zone: string, q: SpotQuote): string {
  return `DescribeSpotPriceHistory ${zone}, ${new Date(q.at).toISOString().slice(0, 16)}Z`;
}

type CatalogType = (typeof EC2_GPU_TYPES)[number];

/** An offer of a catalog type in a region; the caller says the price, the zone, spot and capacity. */
function offerOf(c: CatalogType, region: string, rest: Pick<Offer, 'pricePerHour' | 'spot' | 'capacity'> & Partial<Offer>): Offer {
  return {
    provider: 'ec2',
    instanceType: c.instanceType,
    gpu: c.gpu,
    gpuCount: c.gpuCount,
    vramGiB: c.vramGiB,
    region,
    vcpus: c.vcpus,
    memoryGiB: c.memoryGiB,
    ...rest,
  };
}

export class Ec2Offerings {
  constructor(private readonly api: Ec2Api) {}

  async list(query: OfferQuery, signal?: AbortSignal): Promise<Offer[]> {
    // The SDK client is bound to one region: another region's offers come from a provider made for it.
    const region = this.api.options.region;
    if (query.region && query.region !== region) return [];
    if (query.zone) requireCloudName('ec2', 'ec2-zone', 'target.zone', query.zone);
    const candidates = EC2_GPU_TYPES.filter((x) =>
      matchesQuery(offerOf(x, region, { pricePerHour: 0, spot: false, capacity: 'unknown' }), { ...query, spot: undefined, zone: undefined }),
    );
    if (candidates.length === 0) return [];
    const types = candidates.map((c) => c.instanceType);
    // EC2 publishes no capacity figure; which types the region offers at all is the best "now" there is.
    const offered = await this.api.send<{ InstanceTypeOfferings?: Array<{ InstanceType?: string; Location?: string }> }>(
      (sdk) => new sdk.DescribeInstanceTypeOfferingsCommand({ LocationType: 'availability-zone', Filters: [{ Name: 'instance-type', Values: types }] }),
      signal,
    );
    const zonesOf = new Map<string, string[]>();
    for (const o of offered.InstanceTypeOfferings ?? [])
      if (o.InstanceType && o.Location) zonesOf.set(o.InstanceType, [...(zonesOf.get(o.InstanceType) ?? []), o.Location]);
    const offers: Offer[] = [];
    if (query.spot !== true) {
      const quotes = await Promise.all(candidates.map((c) => this.onDemandQuote(c.instanceType, signal)));
      for (const [n, c] of candidates.entries()) {
        const quote = quotes[n];
        // Asked for a zone: the offer is for that zone, and only where the zone offers the type.
        const where = query.zone ? (zonesOf.get(c.instanceType) ?? []).includes(query.zone) : zonesOf.has(c.instanceType);
        offers.push(
          offerOf(c, region, {
            ...(query.zone ? { zone: query.zone } : {}),
            pricePerHour: quote?.pricePerHour ?? c.onDemandPerHour,
            ...(quote ? { priceSource: quote.source } : {}),
            spot: false,
            capacity: where ? 'unknown' : 'unavailable',
          }),
        );
      }
    }
    if (query.spot !== false) {
      const prices = await this.spotPrices(types, query.zone, signal);
      for (const c of candidates) {
        // The latest price per zone, then the cheapest zone.
        const latest = prices.get(c.instanceType) ?? new Map<string, SpotQuote>();
        const best = [...latest.entries()].sort((a, b) => a[1].price - b[1].price)[0];
        if (best)
          offers.push(
            offerOf(c, region, { zone: best[0], pricePerHour: best[1].price, priceSource: spotSource(best[0], best[1]), spot: true, capacity: 'unknown' }),
          );
      }
    }
    return offers;
  }

  private pricing?: Ec2Pricing;

  /** This region's on-demand price (Price List API, cached), or the catalog's named as such. */
  private async onDemandQuote(instanceType: string, signal?: AbortSignal): Promise<PriceQuote | undefined> {
    const opts = this.api.options.pricing;
    if (opts === false || (opts === undefined && this.api.options.endpoint))
      return catalogQuote(instanceType, opts === false ? 'the Price List API is turned off' : 'the EC2 endpoint is overridden');
    this.pricing ??= new Ec2Pricing(opts ?? {});
    return await this.pricing.onDemand(this.api.options.region, instanceType, signal);
  }

  /** The region's zones that offer the type; for spot, with each zone's latest spot price, cheapest first. */
  async zoneCandidates(instanceType: string, spot: boolean, signal?: AbortSignal): Promise<ZoneChoice[]> {
    const region = this.api.options.region;
    const offered = await this.api.send<{ InstanceTypeOfferings?: Array<{ Location?: string }> }>(
      (sdk) =>
        new sdk.DescribeInstanceTypeOfferingsCommand({ LocationType: 'availability-zone', Filters: [{ Name: 'instance-type', Values: [instanceType] }] }),
      signal,
    );
    const zones = [...new Set((offered.InstanceTypeOfferings ?? []).map((o) => o.Location).filter((z): z is string => !!z))].sort();
    if (!spot) return zones.map((zone) => ({ region, zone }));
    const prices = await this.spotPrices([instanceType], undefined, signal);
    const of = (z: string): SpotQuote | undefined => prices.get(instanceType)?.get(z);
    return zones
      .map((zone): ZoneChoice => {
        const q = of(zone);
        return { region, zone, ...(q ? { pricePerHour: q.price, priceSource: spotSource(zone, q) } : {}) };
      })
      .sort((a, b) => (a.pricePerHour ?? Infinity) - (b.pricePerHour ?? Infinity));
  }

  /** The latest Linux spot price per type and zone (the last hour's DescribeSpotPriceHistory). */
  private async spotPrices(types: readonly string[], zone: string | undefined, signal?: AbortSignal): Promise<Map<string, Map<string, SpotQuote>>> {
    const history = await this.api.send<{
      SpotPriceHistory?: Array<{ InstanceType?: string; AvailabilityZone?: string; SpotPrice?: string; Timestamp?: Date }>;
    }>(
      (sdk) =>
        new sdk.DescribeSpotPriceHistoryCommand({
          InstanceTypes: types as _InstanceType[],
          ProductDescriptions: ['Linux/UNIX'],
          StartTime: new Date(Date.now() - 3600_000),
          ...(zone ? { AvailabilityZone: zone } : {}),
        }),
      signal,
    );
    const out = new Map<string, Map<string, SpotQuote>>();
    for (const h of history.SpotPriceHistory ?? []) {
      if (!h.InstanceType || !h.AvailabilityZone || !h.SpotPrice || (zone && h.AvailabilityZone !== zone)) continue;
      const at = h.Timestamp?.getTime() ?? 0;
      const perZone = out.get(h.InstanceType) ?? new Map<string, SpotQuote>();
      const prev = perZone.get(h.AvailabilityZone);
      if (!prev || at > prev.at) perZone.set(h.AvailabilityZone, { price: Number(h.SpotPrice), at });
      out.set(h.InstanceType, perZone);
    }
    return out;
  }
}
