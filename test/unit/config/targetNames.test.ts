// RFT821 (issue 40.4): target.region / target.zone of a provisioned run must be a name of the provider's form,
// reported at the value itself; the same values a provider would refuse before any request.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateText } from '../../../src/core/config/validate';
import { allCodes } from '../../../src/core/config/codes';

const spec = (target: string): string => `version: 1\nname: names\ncommand: python train.py\ntarget:\n  gpu: L4\n${target}\n`;

function rft821(text: string): Array<{ at: string; message: string; severity: string }> {
  return validateText(text, { fileName: '/ws/finetune.yaml' })
    .diagnostics.filter((d) => d.code === 'RFT821')
    .map((d) => ({ at: text.slice(d.start, d.end), message: d.message, severity: d.severity }));
}

test('RFT821: a GCP zone that climbs out of its path segment is an error at the value', () => {
  const text = spec('  provider: gcp\n  zone: ../../victim-project/zones/us-central1-a');
  const found = rft821(text);
  assert.equal(found.length, 1, JSON.stringify(found));
  assert.equal(found[0]!.at, '../../victim-project/zones/us-central1-a', 'the range is exactly the value');
  assert.equal(found[0]!.severity, 'error');
  assert.match(found[0]!.message, /^target\.zone "\.\.\/\.\.\/victim-project\/zones\/us-central1-a" is not a GCP zone name/);
});

test('RFT821: EC2 region and zone, Lambda region; a quoted value is marked with its quotes', () => {
  const ec2 = rft821(spec('  provider: ec2\n  region: "us-east-1.evil.example"\n  zone: use1-az1'));
  assert.deepEqual(
    ec2.map((d) => d.at),
    ['"us-east-1.evil.example"', 'use1-az1'],
  );
  assert.match(ec2[0]!.message, /is not an AWS region name/);
  assert.match(ec2[1]!.message, /availability zone id: name the zone itself \(like us-east-1a\)/);
  const lambda = rft821(spec('  provider: lambda\n  region: us-east-1/../x'));
  assert.equal(lambda.length, 1);
  assert.match(lambda[0]!.message, /Lambda Cloud region name/);
});

test("RFT821: real names pass; a GCP region may be a zone; SSH and local targets are not the clouds' business", () => {
  assert.deepEqual(rft821(spec('  provider: gcp\n  region: us-central1\n  zone: us-central1-a')), []);
  assert.deepEqual(rft821(spec('  provider: gcp\n  region: europe-west4-b')), []);
  assert.deepEqual(rft821(spec('  provider: ec2\n  region: us-gov-west-1\n  zone: us-west-2-lax-1a')), []);
  assert.deepEqual(rft821(spec('  provider: lambda\n  region: europe-central-1')), []);
  assert.deepEqual(rft821(spec('  provider: ssh\n  host: gpu\n  region: anything/at/all')), []);
  // Not a string: the schema says so, not this rule.
  assert.deepEqual(rft821(spec('  provider: gcp\n  zone: 12')), []);
});

test('RFT821 is in the code table', () => {
  assert.ok(allCodes().some((c) => c.code === 'RFT821' && c.severity === 'error'));
});
