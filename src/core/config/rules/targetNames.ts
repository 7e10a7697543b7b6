// RFT821: target.region and target.zone of a provisioned run end up in the cloud's API URLs (a GCP zone is a
// path segment, an EC2 region part of the host name), so each must be a name of that cloud's own form. The
// providers refuse the same values before any request (core/providers/cloudNames.ts); this says so in the editor.
import { nodeAt, scalarAt } from '../ast';
import type { ConfigDiagnostic } from '../types';
import type { RuleContext } from './crossChecks';
import { cloudNameProblem, quoteName } from '../../providers/cloudNames';
import type { CloudNameKind } from '../../providers/cloudNames';

type Field = 'region' | 'zone';

/** Which names each provisioned provider takes in each field; Lambda has no zones, so its zone reaches nothing. */
const KINDS: Readonly<Record<'lambda' | 'ec2' | 'gcp', Partial<Record<Field, readonly CloudNameKind[]>>>> = {
  lambda: { region: ['lambda-region'] },
  ec2: { region: ['ec2-region'], zone: ['ec2-zone'] },
  // The GCP provider reads a three-part region (us-central1-a) as a zone.
  gcp: { region: ['gcp-region', 'gcp-zone'], zone: ['gcp-zone'] },
};

export function checkTargetNames(ctx: RuleContext): ConfigDiagnostic[] {
  const provider = scalarAt(ctx.root, ['target', 'provider']);
  if (provider !== 'lambda' && provider !== 'ec2' && provider !== 'gcp') return [];
  const out: ConfigDiagnostic[] = [];
  for (const field of ['region', 'zone'] as const) {
    const kinds = KINDS[provider][field];
    const node = nodeAt(ctx.root, ['target', field]);
    // Not a string: the schema's error (RFT102), not this one.
    if (!kinds || node?.kind !== 'scalar' || typeof node.value !== 'string') continue;
    const value = node.value;
    const problems = kinds.map((k) => cloudNameProblem(k, value));
    if (problems.some((p) => p === undefined)) continue;
    out.push({
      start: node.start,
      end: Math.max(node.end, node.start + 1),
      severity: 'error',
      code: 'RFT821',
      message: `target.${field} ${quoteName(value)} ${problems[0]!}: it goes into the cloud's API addresses, so the provider refuses it before any request.`,
    });
  }
  return out;
}
