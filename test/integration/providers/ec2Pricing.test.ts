// Prices per region (issue 35.5): EC2 on-demand offers carry the launch region's price from the AWS Price List
// API (the real @aws-sdk/client-pricing against a GetProducts emulator checked against botocore's service
// model), cached per region with its date, the catalog named as the fallback; spot prices name the zone's
// DescribeSpotPriceHistory quote; GCP and Lambda prices carry their source and date; the Start confirmation's
// rate says where it comes from.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ec2Provider } from '../../../src/core/providers/ec2/instances';
import { launchCost } from '../../../src/core/runs/cost/launchCost';
import { Ec2Emulator } from '../../emulators/ec2';
import { AwsPricingEmulator, botocorePricingModel } from '../../emulators/awsPricing';

const model = botocorePricingModel();
if ('missing' in model) console.log(`ec2Pricing: skipped, ${model.missing}`);
const skip = 'missing' in model ? model.missing : false;

let ec2: Ec2Emulator;
let pricing: AwsPricingEmulator;

before(async () => {
  if ('missing' in model) return;
  process.env.AWS_ACCESS_KEY_ID = 'AKIAEMULATOR000000';
  process.env.AWS_SECRET_ACCESS_KEY = 'emulator-secret';
  delete process.env.AWS_PROFILE;
  ec2 = await new Ec2Emulator({ region: 'eu-west-1' }).start();
  pricing = await new AwsPricingEmulator(model).start();
  // eu-west-1's price of g5.xlarge is not us-east-1's 1.006 (the catalog's).
  pricing.prices.set('eu-west-1/g5.xlarge', 1.123);
  pricing.prices.set('us-east-1/g5.xlarge', 1.006);
});
after(async () => {
  await ec2?.stop();
  await pricing?.stop();
});

function provider(cacheDir: string, now: () => number, region = 'eu-west-1'): Ec2Provider {
  return new Ec2Provider({
    region,
    endpoint: ec2.url,
    maxAttempts: 1,
    requestTimeoutMs: 2000,
    pricing: { endpoint: pricing.url, cacheDir, now, maxAgeMs: 3_600_000 },
  });
}

test('ec2: on-demand offers carry the launch region’s Price List price with its date, cached per region until it is old', { skip }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-prices-'));
  let now = Date.parse('2026-11-27T21:00:00Z');
  const p = provider(dir, () => now);
  const od = (await p.listOffers({ gpu: 'A10G', spot: false })).find((o) => o.instanceType === 'g5.xlarge');
  assert.equal(od?.pricePerHour, 1.123, 'eu-west-1’s price, not us-east-1’s list price');
  assert.equal(od?.priceSource, 'AWS Price List eu-west-1, fetched 2026-11-27 (effective 2026-11-01)');
  assert.deepEqual(pricing.refused, [], 'every GetProducts matched botocore’s model');
  const asked = pricing.requests;
  assert.ok(asked >= 2, 'followed NextToken');
  // Cached: the next listing asks nothing, and says the price is cached, with the date it was fetched.
  now += 600_000;
  const again = (await provider(dir, () => now).listOffers({ gpu: 'A10G', spot: false })).find((o) => o.instanceType === 'g5.xlarge');
  assert.equal(again?.priceSource, 'AWS Price List eu-west-1, cached 2026-11-27 (effective 2026-11-01)');
  assert.equal(pricing.requests, asked);
  assert.ok(readdirSync(dir).includes('ec2-on-demand-eu-west-1.json'));
  assert.equal(JSON.parse(readFileSync(join(dir, 'ec2-on-demand-eu-west-1.json'), 'utf8')).prices['g5.xlarge'].usd, 1.123);
  // Older than maxAge: asked again.
  now += 3_600_000;
  await provider(dir, () => now).listOffers({ gpu: 'A10G', spot: false });
  assert.ok(pricing.requests > asked);
  const text = launchCost(od!, { known: false, reason: 'no step count' } as never).text;
  assert.match(text, /^\$1\.123\/h \(g5\.xlarge; AWS Price List eu-west-1, fetched 2026-11-27/);
});

test('ec2: when the Price List refuses, a cached price of the region is used, else the catalog named as the fallback', { skip }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-prices-'));
  pricing.failWith = { status: 400, type: 'AccessDeniedException' };
  try {
    const od = (await provider(dir, () => Date.now()).listOffers({ gpu: 'A10G', spot: false })).find((o) => o.instanceType === 'g5.xlarge');
    assert.equal(od?.pricePerHour, 1.006);
    assert.equal(od?.priceSource, 'catalog list price (us-east-1), used because the Price List API failed (AccessDeniedException)');
  } finally {
    pricing.failWith = undefined;
  }
});

test('ec2: a spot offer names the zone’s DescribeSpotPriceHistory quote and its time', { skip }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-prices-'));
  const spot = (await provider(dir, () => Date.now()).listOffers({ gpu: 'A10G', spot: true })).find((o) => o.instanceType === 'g5.xlarge');
  assert.match(spot?.priceSource ?? '', /^DescribeSpotPriceHistory eu-west-1b, \d{4}-\d\d-\d\dT\d\d:\d\dZ$/);
});
