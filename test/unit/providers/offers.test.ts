import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { bestOffer, compareOffers, gpuMatches, matchesQuery, sortOffers } from '../../../src/core/providers/offers';
import { lambdaGpuOf } from '../../../src/core/providers/lambda/catalog';
import { EC2_GPU_TYPES } from '../../../src/core/providers/ec2/catalog';
import { GCP_GPU_SHAPES, gcpOfferName, gcpShapeOf } from '../../../src/core/providers/gcp/catalog';
import { instanceNameFor, runIdFromName } from '../../../src/core/providers/provider';
import type { Capacity, Offer, ProviderKind } from '../../../src/core/providers/provider';

const o = (p: Partial<Offer>): Offer => ({
  provider: 'ec2',
  instanceType: 'x',
  gpu: 'T4',
  gpuCount: 1,
  vramGiB: 16,
  region: 'us-east-1',
  pricePerHour: 1,
  spot: false,
  capacity: 'available',
  ...p,
});

test('offers: launchable first, then cheapest per GPU-hour, then cheapest instance', () => {
  const sorted = sortOffers([
    o({ instanceType: 'none', pricePerHour: 0.1, capacity: 'unavailable' }),
    o({ instanceType: 'eight', pricePerHour: 8, gpuCount: 8 }),
    o({ instanceType: 'unknown', pricePerHour: 0.2, capacity: 'unknown' }),
    o({ instanceType: 'one', pricePerHour: 1.5 }),
    o({ instanceType: 'cheap-one', pricePerHour: 0.9 }),
  ]);
  assert.deepEqual(
    sorted.map((x) => x.instanceType),
    ['cheap-one', 'eight', 'one', 'unknown', 'none'],
  );
});

test('offers: ordering is a total order (antisymmetric, transitive) and stable under shuffles', () => {
  const arb = fc.record({
    provider: fc.constantFrom<ProviderKind>('lambda', 'ec2', 'gcp'),
    instanceType: fc.constantFrom('a', 'b', 'c'),
    gpu: fc.constantFrom('T4', 'L4'),
    gpuCount: fc.constantFrom(1, 2, 8),
    vramGiB: fc.constant(16),
    region: fc.constantFrom('r1', 'r2'),
    pricePerHour: fc.constantFrom(0.5, 1, 2, 8),
    spot: fc.boolean(),
    capacity: fc.constantFrom<Capacity>('available', 'unknown', 'unavailable'),
  });
  fc.assert(
    fc.property(fc.array(arb, { maxLength: 12 }), (offers) => {
      const a = sortOffers(offers);
      const b = sortOffers([...offers].reverse());
      assert.deepEqual(
        a.map((x) => JSON.stringify(x)),
        b.map((x) => JSON.stringify(x)),
      );
      for (let i = 1; i < a.length; i++) assert.ok(compareOffers(a[i - 1]!, a[i]!) <= 0);
    }),
  );
});

test('offers: GPU matching is loose for families, exact for variants; queries filter count, region, spot', () => {
  assert.ok(gpuMatches('A100-80GB', 'a100'));
  assert.ok(gpuMatches('A100-40GB', 'A100-40GB'));
  assert.ok(!gpuMatches('A100-40GB', 'A100-80GB'));
  assert.ok(!gpuMatches('H100', 'H200'));
  assert.ok(matchesQuery(o({}), { gpu: 'T4', gpuCount: 1, region: 'us-east-1', spot: false }));
  assert.ok(!matchesQuery(o({}), { spot: true }));
  assert.ok(!matchesQuery(o({}), { gpuCount: 4 }));
  assert.equal(bestOffer([o({ capacity: 'unavailable', pricePerHour: 0.1 }), o({ instanceType: 'ok', pricePerHour: 3 })], { gpu: 'T4' })?.instanceType, 'ok');
  assert.equal(bestOffer([o({ capacity: 'unavailable' })], {}), undefined);
});

test('offers: Lambda instance type names and descriptions give GPU, count and memory', () => {
  const t = (name: string, gpu_description: string, gpus?: number): ReturnType<typeof lambdaGpuOf> =>
    lambdaGpuOf({ name, gpu_description, price_cents_per_hour: 1, specs: gpus ? { gpus } : undefined });
  assert.deepEqual(t('gpu_1x_a100', 'A100 (40 GB PCIe)'), { gpu: 'A100-40GB', count: 1, vramGiB: 40 });
  assert.deepEqual(t('gpu_1x_a100_sxm4', 'A100 (40 GB SXM4)'), { gpu: 'A100-40GB', count: 1, vramGiB: 40 });
  assert.deepEqual(t('gpu_8x_a100_80gb_sxm4', 'A100 (80 GB SXM4)', 8), { gpu: 'A100-80GB', count: 8, vramGiB: 80 });
  assert.deepEqual(t('gpu_8x_h100_sxm5', 'H100 (80 GB SXM5)'), { gpu: 'H100', count: 8, vramGiB: 80 });
  assert.deepEqual(t('gpu_1x_gh200', 'GH200 (96 GB)'), { gpu: 'GH200', count: 1, vramGiB: 96 });
  assert.deepEqual(t('gpu_1x_a10', 'A10 (24 GB PCIe)'), { gpu: 'A10', count: 1, vramGiB: 24 });
  assert.deepEqual(t('gpu_2x_future9000', ''), { gpu: 'FUTURE9000', count: 2, vramGiB: 0 });
});

test('offers: catalogs cover the families the issue names, with positive prices', () => {
  for (const family of ['g4dn', 'g5', 'g6', 'p4d', 'p4de', 'p5'])
    assert.ok(
      EC2_GPU_TYPES.some((x) => x.instanceType.startsWith(`${family}.`)),
      family,
    );
  // No P3: no current Deep Learning AMI drives its V100s (ec2/dlami.ts).
  assert.ok(!EC2_GPU_TYPES.some((x) => x.instanceType.startsWith('p3.')));
  assert.deepEqual([...new Set(GCP_GPU_SHAPES.map((x) => x.gpu))].sort(), ['A100-40GB', 'A100-80GB', 'H100', 'L4', 'T4', 'V100']);
  for (const x of [...EC2_GPU_TYPES.map((e) => e.onDemandPerHour), ...GCP_GPU_SHAPES.flatMap((g) => [g.onDemandPerHour, g.spotPerHour])]) assert.ok(x > 0);
  for (const g of GCP_GPU_SHAPES) assert.ok(g.spotPerHour < g.onDemandPerHour, g.machineType);
  for (const g of GCP_GPU_SHAPES) assert.equal(gcpShapeOf(gcpOfferName(g)), g);
});

test('offers: instance names from run ids are valid GCP names and read back', () => {
  assert.equal(instanceNameFor('rft-20261121-150000-abcd'), 'rft-20261121-150000-abcd');
  assert.equal(runIdFromName('rft-20261121-150000-abcd'), 'rft-20261121-150000-abcd');
  assert.equal(instanceNameFor('My Run_1'), 'rft-my-run-1');
  assert.equal(runIdFromName('someone-else'), undefined);
  fc.assert(
    fc.property(fc.string({ minLength: 1, maxLength: 200 }), (s) => {
      assert.match(instanceNameFor(s), /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/);
    }),
  );
});
