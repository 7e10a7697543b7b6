// EC2 on-demand prices of the launch region, from the AWS Price List API (GetProducts through the real
// @aws-sdk/client-pricing, loaded on first use), kept in a dated local cache per region; the catalog's us-east-1
// list price is the fallback and says so. On-demand prices differ by region (eu-west-1, ap-northeast-1 cost more
// than us-east-1), and the confirmation's total is only as right as the rate it multiplies.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { PricingClient } from '@aws-sdk/client-pricing';
import { ec2TypeInfo } from './catalog';

export interface PriceQuote {
  readonly pricePerHour: number;
  /** Where the price comes from, with its date, for the confirmation and the run record. */
  readonly source: string;
  readonly fromCatalog: boolean;
}

export interface Ec2PricingOptions {
  /** Endpoint override (tests point it at a Price List emulator). */
  readonly endpoint?: string;
  /** Folder of the per-region cache files; default ~/.cache/remote-finetune/aws-prices. */
  readonly cacheDir?: string;
  /** How long a cached price is used before GetProducts is asked again; default 7 days (AWS revises prices monthly at most). */
  readonly maxAgeMs?: number;
  readonly requestTimeoutMs?: number;
  readonly now?: () => number;
}

interface CacheFile {
  readonly v: 1;
  readonly prices: Record<string, { readonly usd: number; readonly fetchedAt: number; readonly effective?: string }>;
}

/** The catalog's list price (us-east-1), named as the fallback it is. */
export function catalogQuote(instanceType: string, why: string): PriceQuote | undefined {
  const info = ec2TypeInfo(instanceType);
  return info ? { pricePerHour: info.onDemandPerHour, source: `catalog list price (us-east-1), used because ${why}`, fromCatalog: true } : undefined;
}

function cachePath(dir: string, region: string): string {
  return join(dir, `ec2-on-demand-${region.replace(/[^a-z0-9-]/g, '_')}.json`);
}

function readCache(path: string): CacheFile {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<CacheFile>;
    if (parsed.v === 1 && parsed.prices && typeof parsed.prices === 'object') return { v: 1, prices: { ...parsed.prices } };
  } catch {
    // Missing or unreadable: asked again.
  }
  return { v: 1, prices: {} };
}

function writeCache(path: string, dir: string, cache: CacheFile): void {
  try {
    mkdirSync(dir, { recursive: true });
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(cache));
    renameSync(tmp, path);
  } catch {
    // A cache that cannot be written only costs a request next time.
  }
}

/**
 * The Linux, shared-tenancy, no-license on-demand price of one product answer (a PriceList entry is a JSON
 * string: product.attributes, terms.OnDemand.<sku.term>.priceDimensions.<rate>.pricePerUnit.USD).
 */
export function onDemandUsd(priceListItem: string): { usd: number; effective?: string } | undefined {
  let item: {
    terms?: { OnDemand?: Record<string, { effectiveDate?: string; priceDimensions?: Record<string, { unit?: string; pricePerUnit?: { USD?: string } }> }> };
  };
  try {
    item = JSON.parse(priceListItem) as typeof item;
  } catch {
    return undefined;
  }
  for (const term of Object.values(item.terms?.OnDemand ?? {})) {
    for (const dim of Object.values(term.priceDimensions ?? {})) {
      const usd = Number(dim.pricePerUnit?.USD);
      if (dim.unit === 'Hrs' && Number.isFinite(usd) && usd > 0) return { usd, ...(term.effectiveDate ? { effective: term.effectiveDate } : {}) };
    }
  }
  return undefined;
}

/**
 * Looks prices up in the Price List API, one region per cache file. The Price List API answers from us-east-1
 * (and two other regions) for every region's products: the region is a filter (regionCode), not the endpoint.
 */
export class Ec2Pricing {
  private client?: PricingClient;

  constructor(private readonly options: Ec2PricingOptions = {}) {}

  private get dir(): string {
    return this.options.cacheDir ?? join(homedir(), '.cache', 'remote-finetune', 'aws-prices');
  }

  /** Requests made to GetProducts (tests). */
  requests = 0;

  async onDemand(region: string, instanceType: string, signal?: AbortSignal): Promise<PriceQuote | undefined> {
    const now = (this.options.now ?? Date.now)();
    const path = cachePath(this.dir, region);
    const cache = readCache(path);
    const hit = cache.prices[instanceType];
    const fresh = (at: number): boolean => now - at < (this.options.maxAgeMs ?? 7 * 86_400_000);
    const quoteOf = (p: { usd: number; fetchedAt: number; effective?: string }, how: string): PriceQuote => ({
      pricePerHour: p.usd,
      source: `AWS Price List ${region}, ${how} ${new Date(p.fetchedAt).toISOString().slice(0, 10)}${p.effective ? ` (effective ${p.effective.slice(0, 10)})` : ''}`,
      fromCatalog: false,
    });
    const none = (): PriceQuote | undefined => catalogQuote(instanceType, `the Price List API has no ${instanceType} in ${region}`);
    // usd 0 records "no such product here", so a type the region lacks is not asked again at every listing.
    if (hit && fresh(hit.fetchedAt)) return hit.usd > 0 ? quoteOf(hit, 'cached') : none();
    let found: { usd: number; effective?: string } | undefined;
    try {
      found = await this.getProducts(region, instanceType, signal);
    } catch (err) {
      if (signal?.aborted) throw err;
      const why = `the Price List API failed (${(err as { name?: string }).name ?? 'Error'})`;
      // A stale price of this region still beats another region's list price.
      return hit && hit.usd > 0 ? quoteOf(hit, `cached (${why}) on`) : catalogQuote(instanceType, why);
    }
    const entry = { usd: found?.usd ?? 0, fetchedAt: now, ...(found?.effective ? { effective: found.effective } : {}) };
    writeCache(path, this.dir, { v: 1, prices: { ...readCache(path).prices, [instanceType]: entry } });
    return found ? quoteOf(entry, 'fetched') : none();
  }

  private async getProducts(region: string, instanceType: string, signal?: AbortSignal): Promise<{ usd: number; effective?: string } | undefined> {
    const { PricingClient, GetProductsCommand } = await import('@aws-sdk/client-pricing');
    this.client ??= new PricingClient({
      region: 'us-east-1',
      ...(this.options.endpoint ? { endpoint: this.options.endpoint } : {}),
      maxAttempts: 2,
      requestHandler: { requestTimeout: this.options.requestTimeoutMs ?? 10_000, connectionTimeout: 5000, throwOnRequestTimeout: true },
    });
    const term = (Field: string, Value: string): { Type: 'TERM_MATCH'; Field: string; Value: string } => ({ Type: 'TERM_MATCH', Field, Value });
    let token: string | undefined;
    do {
      this.requests++;
      const res = await this.client.send(
        new GetProductsCommand({
          ServiceCode: 'AmazonEC2',
          FormatVersion: 'aws_v1',
          Filters: [
            term('instanceType', instanceType),
            term('regionCode', region),
            term('operatingSystem', 'Linux'),
            term('tenancy', 'Shared'),
            term('preInstalledSw', 'NA'),
            term('licenseModel', 'No License required'),
            term('capacitystatus', 'Used'),
          ],
          MaxResults: 100,
          ...(token ? { NextToken: token } : {}),
        }),
        { abortSignal: signal },
      );
      for (const item of res.PriceList ?? []) {
        // The model marks items as JSON values: the SDK hands them over as strings (or String objects), older ones parsed.
        const usd = onDemandUsd(typeof item === 'string' || item instanceof String ? String(item) : JSON.stringify(item));
        if (usd) return usd;
      }
      token = res.NextToken;
    } while (token);
    return undefined;
  }
}
