// The clouds' own forms of project, region and zone names (issue 40.4): real names of every documented
// shape pass, and anything that could leave its URL path segment or host label does not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cloudNameProblem, isCloudName, requireCloudName } from '../../../src/core/providers/cloudNames';
import type { CloudNameKind } from '../../../src/core/providers/cloudNames';
import { ProviderError } from '../../../src/core/providers/provider';

const VALID: Readonly<Record<CloudNameKind, readonly string[]>> = {
  'gcp-project': ['my-project-123', 'rft-test-project', 'deeplearning-platform-release', 'abcdef', 'example.com:my-project', 'google.com:cloudsdktool'],
  'gcp-region': ['us-central1', 'europe-west4', 'northamerica-northeast1', 'europe-west12', 'me-central2'],
  'gcp-zone': ['us-central1-a', 'europe-west4-b', 'northamerica-northeast1-c', 'asia-southeast1-b', 'us-east5-c'],
  'ec2-region': ['us-east-1', 'us-gov-west-1', 'cn-north-1', 'ap-southeast-5', 'eu-isoe-west-1', 'us-isob-east-1'],
  'ec2-zone': ['us-east-1a', 'us-west-2-lax-1a', 'us-east-1-wl1-bos-wlz-1', 'cn-north-1b', 'us-gov-west-1a'],
  'lambda-region': ['us-east-1', 'us-south-1', 'europe-central-1', 'asia-northeast-1', 'me-west-1', 'us-midwest-1'],
};

/** Path climbs, encoded separators, query and fragment starts, host-name tricks, case, whitespace, control characters. */
const HOSTILE = [
  '',
  '..',
  '../../victim-project/zones/us-central1-a',
  'us-central1-a/../..',
  'us-central1-a%2F..',
  '%2e%2e',
  'us-central1-a?x=1',
  'us-central1-a#',
  'us-east-1.evil.example',
  'evil.example/x?',
  'us-east-1@evil.example',
  'US-EAST-1',
  ' us-east-1',
  'us-east-1\n',
  'us-east-1\u0000',
  'us-eaſt-1',
  `us-${'a'.repeat(80)}-1`,
];

test('cloud names: every documented shape of each kind passes', () => {
  for (const [kind, names] of Object.entries(VALID) as Array<[CloudNameKind, readonly string[]]>) {
    for (const n of names) assert.equal(cloudNameProblem(kind, n), undefined, `${kind} ${n}`);
  }
});

test('cloud names: nothing that leaves a path segment or host label passes as any kind', () => {
  for (const kind of Object.keys(VALID) as CloudNameKind[]) {
    for (const v of HOSTILE) assert.equal(isCloudName(kind, v), false, `${kind} ${JSON.stringify(v)}`);
  }
});

test('cloud names: each kind refuses the other kinds and near misses', () => {
  const no: Array<[CloudNameKind, string]> = [
    ['gcp-project', 'abc'], // under 6
    ['gcp-project', 'a'.repeat(31)],
    ['gcp-project', '1project'],
    ['gcp-project', 'my-project-'],
    ['gcp-project', 'example.com:'],
    ['gcp-zone', 'us-central1'],
    ['gcp-zone', 'us-central1a'],
    ['gcp-region', 'us-central1-a'],
    ['ec2-region', 'us-east-1a'],
    ['ec2-region', 'useast1'],
    ['ec2-zone', 'us-east-1'],
    ['ec2-zone', 'use1-az1'],
    ['lambda-region', 'us-east1'],
  ];
  for (const [kind, v] of no) assert.notEqual(cloudNameProblem(kind, v), undefined, `${kind} ${v}`);
  assert.match(cloudNameProblem('ec2-zone', 'use1-az1')!, /availability zone id: name the zone itself/);
  assert.match(cloudNameProblem('ec2-zone', 'usw2-lax1-az1')!, /zone id/);
});

test('cloud names: the provider error names the field and the value, quoted and cut short', () => {
  assert.equal(requireCloudName('gcp', 'gcp-zone', 'target.zone', 'us-central1-a'), 'us-central1-a');
  assert.throws(
    () => requireCloudName('gcp', 'gcp-zone', 'target.zone', '../x\n'),
    (e: unknown) =>
      e instanceof ProviderError && e.code === 'invalid' && e.provider === 'gcp' && e.message.startsWith('target.zone "../x\\n" is not a GCP zone name'),
  );
  assert.throws(
    () => requireCloudName('ec2', 'ec2-region', 'target.region', 'x'.repeat(500)),
    (e: unknown) => e instanceof ProviderError && e.message.length < 200 && e.message.includes('…'),
  );
});
