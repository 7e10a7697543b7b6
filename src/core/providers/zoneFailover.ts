// Capacity is per zone (spot above all): a refusal in one zone is not the cloud's last word. The launch tries
// the other zones that offer the type (and, when the spec names more regions, their zones), each under its own
// idempotency identity (a reused token would hand back the refusal, or another zone's instance) and at its own
// zone's price. EC2 and GCP share this loop; each says which zones are candidates and how one launch goes.
import { ProviderError } from './provider';
import type { Placement, ProviderKind, ZoneRefusal } from './provider';

export interface ZoneChoice {
  readonly region: string;
  /** Undefined only for the first try when the request names no zone (the cloud picks one). */
  readonly zone?: string;
  readonly pricePerHour?: number;
  /** Where the price comes from ("DescribeSpotPriceHistory us-east-1b 2026-11-27T21:00:00Z", a catalog, …). */
  readonly priceSource?: string;
}

export interface FailoverOptions<T> {
  readonly provider: ProviderKind;
  readonly instanceType: string;
  readonly first: ZoneChoice;
  /** The spec (or a volume) fixes the zone: no other is tried. */
  readonly pinned: boolean;
  /** Other zones to try, best first (the caller orders them: cheapest spot price, the first region first). */
  readonly candidates: () => Promise<readonly ZoneChoice[]>;
  /** One launch in one zone; `launchKeySuffix` is undefined for the first try, so its identity is the request's own. */
  readonly attempt: (choice: ZoneChoice, launchKeySuffix: string | undefined) => Promise<T>;
  /** 'zone': another zone may have it (capacity); 'region': nothing more in this region will (a regional quota). */
  readonly scope: (err: ProviderError) => 'zone' | 'region' | undefined;
  readonly progress?: (line: string) => void;
}

export interface FailoverResult<T> {
  readonly result: T;
  readonly placement: Placement;
}

/** Launches in the first zone, then in each candidate not yet refused, until one launch succeeds. */
export async function launchWithFailover<T>(o: FailoverOptions<T>): Promise<FailoverResult<T>> {
  const refused: ZoneRefusal[] = [];
  const tried = new Set<string>();
  const closedRegions = new Set<string>();
  let candidates: readonly ZoneChoice[] | undefined;
  let choice: ZoneChoice | undefined = o.first;
  let suffix: string | undefined;
  for (;;) {
    try {
      const result = await o.attempt(choice, suffix);
      return { result, placement: { region: choice.region, ...(choice.zone ? { zone: choice.zone } : {}), refused, ...priceOf(choice) } };
    } catch (err) {
      if (!(err instanceof ProviderError)) throw err;
      const scope = o.scope(err);
      if (!scope) throw err;
      const where = choice.zone ?? choice.region;
      refused.push({ region: choice.region, zone: where, code: err.code, message: err.message });
      tried.add(where);
      if (scope === 'region') closedRegions.add(choice.region);
      if (o.pinned) throw withRefusals(err, refused, o, 'the spec fixes the zone');
      candidates ??= await o.candidates();
      const next = candidates.find((c) => c.zone && !tried.has(c.zone) && !closedRegions.has(c.region));
      if (!next?.zone) throw withRefusals(err, refused, o, 'no other zone offers it');
      o.progress?.(`${o.instanceType} refused in ${where} (${firstWords(err.message)}); trying ${next.zone}${priceNote(next)}`);
      choice = next;
      suffix = `@${next.zone}`;
    }
  }
}

function priceOf(c: ZoneChoice): { pricePerHour?: number; priceSource?: string } {
  return { ...(c.pricePerHour !== undefined ? { pricePerHour: c.pricePerHour } : {}), ...(c.priceSource ? { priceSource: c.priceSource } : {}) };
}

function priceNote(c: ZoneChoice): string {
  return c.pricePerHour !== undefined ? ` at $${c.pricePerHour.toFixed(4)}/h` : '';
}

function firstWords(message: string): string {
  return message.length > 120 ? `${message.slice(0, 117)}…` : message;
}

/** The last refusal, with every refusal before it named by zone: the error the run shows. */
function withRefusals<T>(last: ProviderError, refused: readonly ZoneRefusal[], o: FailoverOptions<T>, why: string): ProviderError {
  if (refused.length <= 1 && o.pinned) return last;
  const list = refused.map((r) => `${r.zone}: ${firstWords(r.message)}`).join('; ');
  return new ProviderError(last.code, `${o.instanceType} refused in every zone tried (${why}): ${list}`, o.provider);
}

/** One line for progress and the run record: where it landed and what was refused where. */
export function placementSummary(p: Placement): string {
  const landed = `landed in ${p.zone ?? p.region}${p.pricePerHour !== undefined ? ` at $${p.pricePerHour.toFixed(4)}/h` : ''}${p.priceSource ? ` (${p.priceSource})` : ''}`;
  return p.refused.length ? `${landed} after ${p.refused.map((r) => `${r.zone} refused (${r.code})`).join(', ')}` : landed;
}
