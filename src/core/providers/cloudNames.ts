// The names each cloud gives its projects, regions and zones, as patterns. A spec or setting value lands in an
// API URL path (GCP: /projects/<p>/zones/<z>/…) or in the endpoint's host name (EC2: ec2.<region>.amazonaws.com):
// `../../other-project/zones/x` or `evil.example/` would send the person's signed calls elsewhere. The run-spec
// check (RFT821) and the providers (before any request) both read these, so the two cannot disagree.
import { ProviderError } from './provider';
import type { ProviderKind } from './provider';

export type CloudNameKind = 'gcp-project' | 'gcp-region' | 'gcp-zone' | 'ec2-region' | 'ec2-zone' | 'lambda-region';

/** One DNS label (RFC 1035): what Compute Engine allows for a resource name. */
const LABEL = '[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?';

const PATTERNS: Readonly<Record<CloudNameKind, RegExp>> = {
  // cloud.google.com/resource-manager/docs/creating-managing-projects: 6 to 30 characters, a letter first, no
  // hyphen last; legacy projects of Workspace domains are scoped as example.com:my-project.
  'gcp-project': new RegExp(`^(?:${LABEL}(?:\\.${LABEL})+:)?[a-z][-a-z0-9]{4,28}[a-z0-9]$`),
  // us-central1, northamerica-northeast1, europe-west12.
  'gcp-region': /^[a-z]+-[a-z]+[0-9]+$/,
  // A region and a zone letter (us-central1-a); a letter then letters or digits keeps room for newer zone names.
  'gcp-zone': /^[a-z]+-[a-z]+[0-9]+-[a-z][a-z0-9]*$/,
  // us-east-1, us-gov-west-1, cn-north-1, eu-isoe-west-1.
  'ec2-region': /^[a-z]{2}(?:-[a-z]+)+-[0-9]+$/,
  // Availability zone names: us-east-1a, local zones us-west-2-lax-1a, Wavelength us-east-1-wl1-bos-wlz-1.
  'ec2-zone': /^[a-z]{2}(?:-[a-z]+)+-[0-9]+(?:[a-z]|(?:-[a-z0-9]+)+)$/,
  // us-east-1, us-south-1, europe-central-1, asia-northeast-1.
  'lambda-region': /^[a-z]+(?:-[a-z]+)+-[0-9]+$/,
};

/** Availability zone ids (use1-az1, usw2-lax1-az1): real, but EC2's Placement and subnets speak zone names. */
const EC2_ZONE_ID = /^[a-z]{3,6}[0-9]+(?:-[a-z0-9]+)*-az[0-9]+$/;

const WHAT: Readonly<Record<CloudNameKind, string>> = {
  'gcp-project': 'a GCP project id (6 to 30 lowercase letters, digits and hyphens, a letter first, like my-project-123)',
  'gcp-region': 'a GCP region name (like us-central1)',
  'gcp-zone': 'a GCP zone name (like us-central1-a)',
  'ec2-region': 'an AWS region name (like us-east-1)',
  'ec2-zone': 'an EC2 availability zone name (like us-east-1a)',
  'lambda-region': 'a Lambda Cloud region name (like us-east-1)',
};

/** Host labels and Compute Engine names stop at 63 characters; a longer value is none of these. */
const MAX_LENGTH = 63;

export function isCloudName(kind: CloudNameKind, value: string): boolean {
  const limit = kind === 'gcp-project' ? 30 + 1 + 253 : MAX_LENGTH;
  return value.length <= limit && PATTERNS[kind].test(value);
}

/** Why the value is not a name of this kind, in words for a diagnostic or an error; undefined when it is one. */
export function cloudNameProblem(kind: CloudNameKind, value: string): string | undefined {
  if (isCloudName(kind, value)) return undefined;
  if (kind === 'ec2-zone' && EC2_ZONE_ID.test(value)) return 'is an availability zone id: name the zone itself (like us-east-1a)';
  return `is not ${WHAT[kind]}`;
}

/** The value as a message shows it: quoted, control characters escaped, cut short. */
export function quoteName(value: string): string {
  return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value);
}

/**
 * The value when it is a name of this kind; otherwise a ProviderError naming the field and the value, thrown
 * before the provider builds any URL or client from it.
 */
export function requireCloudName(provider: ProviderKind, kind: CloudNameKind, field: string, value: string): string {
  const problem = cloudNameProblem(kind, value);
  if (problem) throw new ProviderError('invalid', `${field} ${quoteName(value)} ${problem}; nothing was sent`, provider);
  return value;
}
