// AWS credentials for S3 on the host (issue 35.4): an EC2 instance with target.iam_instance_profile gets no AWS
// keys (the role wins only when the environment holds none), and the Start confirmation warns when only session
// credentials would be shipped and the run's estimate outlasts them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dropUnneededSecrets } from '../../../src/core/runs/lifecycle/runPlan';
import { sessionCredentialsWarning } from '../../../src/core/runs/hosts/awsSessionCredentials';
import { typedSpec } from '../../support/typedSpec';
import type { RunSpec } from '../../../src/core/config/runSpecDefaults';

const keys = {
  AWS_ACCESS_KEY_ID: 'ASIAEXAMPLE0000',
  AWS_SECRET_ACCESS_KEY: 'secret',
  AWS_SESSION_TOKEN: 'token',
  AWS_CREDENTIAL_EXPIRATION: '2026-11-27T23:00:00Z',
  AWS_PROFILE: 'sso-dev',
  AWS_DEFAULT_REGION: 'us-east-1',
};
const s3Spec = (target: Record<string, unknown>): RunSpec =>
  typedSpec({
    target,
    outputs: { dir: 'out', checkpoints: 's3://bucket/ckpt' },
  });

test('an EC2 target with iam_instance_profile ships no AWS keys (the role on the host is used instead); without it they go', () => {
  const withRole = dropUnneededSecrets(keys, s3Spec({ provider: 'ec2', gpu: 'A10G', iam_instance_profile: 'rft-s3' }));
  assert.deepEqual(Object.keys(withRole.env), ['AWS_DEFAULT_REGION']);
  assert.deepEqual(withRole.dropped.sort(), ['AWS_ACCESS_KEY_ID', 'AWS_CREDENTIAL_EXPIRATION', 'AWS_PROFILE', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN']);
  assert.deepEqual(dropUnneededSecrets(keys, s3Spec({ provider: 'ec2', gpu: 'A10G' })).env, keys);
  // A profile on another provider's target names nothing there.
  assert.deepEqual(dropUnneededSecrets(keys, s3Spec({ provider: 'ssh', host: 'gpu', gpu: 'A10G', iam_instance_profile: 'x' })).env, keys);
});

test('session credentials that expire before the estimated end of an s3:// run are a Start warning naming the fix', () => {
  const now = Date.parse('2026-11-27T21:00:00Z');
  const spec = s3Spec({ provider: 'ec2', gpu: 'A10G' });
  const w = sessionCredentialsWarning(keys, spec, 5, now);
  assert.match(
    w ?? '',
    /session credentials \(AWS_SESSION_TOKEN\).*expire at 2026-11-27T23:00:00\.000Z \(in 2\.0 h\).*estimated at 5\.0 h.*target\.iam_instance_profile/,
  );
  assert.equal(sessionCredentialsWarning(keys, spec, 1.5, now), undefined, 'the run ends before they do');
  const noExpiry = { ...keys, AWS_CREDENTIAL_EXPIRATION: '' };
  assert.match(sessionCredentialsWarning(noExpiry, spec, 3, now) ?? '', /no stated expiry/);
  const longLived = { AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE', AWS_SECRET_ACCESS_KEY: 's' };
  assert.equal(sessionCredentialsWarning(longLived, spec, 50, now), undefined, 'long-lived keys do not expire');
  assert.equal(sessionCredentialsWarning(keys, typedSpec({ outputs: { dir: 'out' } }), 50, now), undefined, 'no s3:// in the spec');
  // With a role the keys are dropped first, so nothing is left to warn about.
  const role = s3Spec({ provider: 'ec2', gpu: 'A10G', iam_instance_profile: 'rft-s3' });
  assert.equal(sessionCredentialsWarning(dropUnneededSecrets(keys, role).env, role, 50, now), undefined);
});
