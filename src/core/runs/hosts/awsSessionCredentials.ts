// S3 on the host with keys shipped from here: session credentials (SSO, AssumeRole, GetSessionToken) carry an
// AWS_SESSION_TOKEN and end after hours, and a run that outlives them fails its checkpoint uploads and any
// restore after a spot reclaim. The Start confirmation says so when the run's estimate outlasts them.
import type { RunSpec } from '../../config/runSpecDefaults';

/** STS's default lifetime for AssumeRole (and a common SSO role setting): what is assumed when no expiry is given. */
const ASSUMED_LIFETIME_HOURS = 1;

function usesS3(spec: RunSpec): boolean {
  return JSON.stringify(spec).includes('"s3://');
}

/**
 * A sentence for the confirmation, or undefined: only when the env the host gets holds session credentials
 * (AWS_SESSION_TOKEN), the spec reads or writes s3://, and the run's estimated hours outlast the credentials
 * (AWS_CREDENTIAL_EXPIRATION, as `aws configure export-credentials --format env` writes it; else STS's 1 h default).
 */
export function sessionCredentialsWarning(
  env: Readonly<Record<string, string>>,
  spec: RunSpec,
  estimatedHours: number | undefined,
  now = Date.now(),
): string | undefined {
  if (!env.AWS_SESSION_TOKEN || !env.AWS_ACCESS_KEY_ID || !usesS3(spec) || estimatedHours === undefined) return undefined;
  const expiry = env.AWS_CREDENTIAL_EXPIRATION ? Date.parse(env.AWS_CREDENTIAL_EXPIRATION) : NaN;
  const leftHours = Number.isFinite(expiry) ? (expiry - now) / 3_600_000 : ASSUMED_LIFETIME_HOURS;
  if (estimatedHours <= leftHours) return undefined;
  const when = Number.isFinite(expiry)
    ? leftHours <= 0
      ? `expired at ${new Date(expiry).toISOString()}`
      : `expire at ${new Date(expiry).toISOString()} (in ${leftHours.toFixed(1)} h)`
    : `have no stated expiry (session credentials often last ${ASSUMED_LIFETIME_HOURS} h)`;
  const fix =
    spec.target.provider === 'ec2'
      ? 'set target.iam_instance_profile so the instance uses a role instead'
      : 'use long-lived keys for the host, or a role the host has itself';
  return `Only session credentials (AWS_SESSION_TOKEN) go to the host and they ${when}; the run is estimated at ${estimatedHours.toFixed(1)} h, so its s3:// checkpoint uploads and restores would fail after that: ${fix}.`;
}
