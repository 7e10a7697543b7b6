// Zone failover (issue 35.3): a capacity refusal in one zone tries the other zones that offer the type, each
// under its own idempotency identity and at its own zone's price, and the instance says where it landed and what
// was refused where. EC2 through the real @aws-sdk/client-ec2 and GCP through its real HTTP client, against the
// EC2 and Compute Engine emulators (test doubles) with a zone that refuses every launch (noCapacityIn).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Ec2Provider } from '../../../src/core/providers/ec2/instances';
import { ProviderError } from '../../../src/core/providers/provider';
import { placementSummary } from '../../../src/core/providers/zoneFailover';
import { Ec2Emulator } from '../../emulators/ec2';
import { gcpOnSshd } from '../../support/gcpOnSshd';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';

let sshd: Sshd;
let pub: string;

before(async () => {
  process.env.AWS_ACCESS_KEY_ID = 'AKIAEMULATOR000000';
  process.env.AWS_SECRET_ACCESS_KEY = 'emulator-secret';
  delete process.env.AWS_PROFILE;
  sshd = await startSshd();
  pub = readFileSync(`${sshd.userKeyPath}.pub`, 'utf8');
});
after(async () => {
  await sshd.stop();
});

async function ec2(): Promise<{ emu: Ec2Emulator; provider: Ec2Provider }> {
  const emu = await new Ec2Emulator({ consistencyMs: 50 }).start();
  const provider = new Ec2Provider({
    region: 'us-east-1',
    endpoint: emu.url,
    maxAttempts: 1,
    requestTimeoutMs: 2000,
    callerIp: async () => '203.0.113.7',
    sshPort: sshd.port,
    consistency: { baseMs: 20, maxMs: 200, windowMs: 2000 },
  });
  return { emu, provider };
}

const token = (s: string): string => createHash('sha256').update(s).digest('hex').slice(0, 64);

test('ec2: a spot launch refused in the cheapest zone lands in the next zone that offers the type, with its own ClientToken and that zone’s spot price', async () => {
  const { emu, provider } = await ec2();
  try {
    emu.noCapacityIn.add('us-east-1b');
    const lines: string[] = [];
    const runId = 'rft-20261127-210000-zf01';
    const inst = await provider.launch({
      runId,
      instanceType: 'g5.xlarge',
      region: 'us-east-1',
      zone: 'us-east-1b',
      spot: true,
      sshPublicKey: pub,
      progress: (l) => lines.push(l),
    });
    assert.equal(inst.zone, 'us-east-1a');
    const r = emu.instances.get(inst.id)!.request as Map<string, string>;
    assert.equal(r.get('Placement.AvailabilityZone'), 'us-east-1a');
    assert.notEqual(r.get('ClientToken'), token(runId), 'the second zone launches under its own token, not the refused one');
    assert.equal(r.get('ClientToken'), token(`${runId}#@us-east-1a`));
    // Asked for g5.xlarge alone, the emulator's latest spot quote is 0.25 in us-east-1a (0.22 in the refused us-east-1b).
    assert.equal(inst.pricePerHour, 0.25);
    assert.deepEqual(
      inst.placement?.refused.map((x) => [x.zone, x.code]),
      [['us-east-1b', 'capacity']],
    );
    assert.match(inst.placement?.priceSource ?? '', /^DescribeSpotPriceHistory us-east-1a, \d{4}-\d\d-\d\dT\d\d:\d\dZ$/);
    assert.match(placementSummary(inst.placement!), /^landed in us-east-1a at \$0\.2500\/h .* after us-east-1b refused \(capacity\)$/);
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /g5\.xlarge refused in us-east-1b \(InsufficientInstanceCapacity: .*\); trying us-east-1a at \$0\.2500\/h/);
    assert.equal(emu.calls.filter((c) => c === 'RunInstances').length, 2);
    assert.equal(emu.calls.filter((c) => c === 'DescribeSpotPriceHistory').length, 1, 'the zone price asked once');
  } finally {
    await emu.stop();
  }
});

test('ec2: a zone the spec pins is final; when every zone refuses, the error names each zone and nothing is left running', async () => {
  const { emu, provider } = await ec2();
  try {
    emu.noCapacityIn.add('us-east-1a');
    const base = { instanceType: 'g5.xlarge', region: 'us-east-1', spot: false, sshPublicKey: pub };
    await assert.rejects(
      provider.launch({ ...base, runId: 'rft-20261127-210000-zf02', zone: 'us-east-1a', zonePinned: true }),
      (e: unknown) => e instanceof ProviderError && e.code === 'capacity' && /us-east-1a/.test(e.message),
    );
    assert.equal(emu.calls.filter((c) => c === 'RunInstances').length, 1, 'a pinned zone is not left');
    emu.noCapacityIn.add('us-east-1b');
    await assert.rejects(
      provider.launch({ ...base, runId: 'rft-20261127-210000-zf03', zone: 'us-east-1a' }),
      (e: unknown) =>
        e instanceof ProviderError && e.code === 'capacity' && /refused in every zone tried/.test(e.message) && /us-east-1a: .*; us-east-1b: /.test(e.message),
    );
    assert.equal(emu.billing().length, 0);
  } finally {
    await emu.stop();
  }
});

test('gcp: a refusal in the configured zone tries the region’s other zones with the accelerator, then target.regions; each try has its own name and requestId', async () => {
  const { emu, provider } = await gcpOnSshd(sshd);
  try {
    // Every zone of us-central1 that has T4s refuses: the launch goes on to the next region the spec names.
    for (const z of emu.acceleratorZones.filter((x) => x.startsWith('us-central1-'))) emu.noCapacityIn.add(z);
    const lines: string[] = [];
    const inst = await provider.launch({
      runId: 'rft-20261127-210000-zf04',
      instanceType: 'n1-standard-8+nvidia-tesla-t4x1',
      region: 'us-central1',
      spot: true,
      sshPublicKey: pub,
      regions: ['us-central1', 'us-east1'],
      progress: (l) => lines.push(l),
    });
    assert.match(inst.zone ?? '', /^us-east1-/);
    assert.equal(inst.region, 'us-east1');
    const refusedZones = inst.placement?.refused.map((x) => x.zone) ?? [];
    assert.deepEqual(
      refusedZones,
      emu.acceleratorZones.filter((x) => x.startsWith('us-central1-')),
    );
    const inserts = emu.inserts;
    assert.equal(inserts.length, refusedZones.length + 1);
    assert.equal(new Set(inserts.map((r) => r.requestId)).size, inserts.length, 'one requestId per zone');
    assert.equal(new Set(inserts.map((r) => r.name)).size, inserts.length, 'one VM name per zone');
    assert.equal(lines.length, refusedZones.length);
    assert.match(inst.placement?.priceSource ?? '', /catalog/);
  } finally {
    await emu.stop();
  }
});
