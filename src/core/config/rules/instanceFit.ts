// RFT824: target.instance_type must be a machine that holds target.gpu. An offer matches the spec's instance type
// and its GPU both (offers.ts matchesQuery), so a GCP n1-standard-4 with an A100 (A100s come only in A2 machines)
// or an EC2 g4dn.xlarge with an A10G finds no offer and the launch fails. A type outside the catalogs' families
// is left alone: the catalogs cannot say what it holds.
import type { DocNode } from '../ast';
import { nodeAt, pairAt, scalarAt } from '../ast';
import { replaceNode } from '../edits';
import type { ConfigDiagnostic, Fix, TextEdit } from '../types';
import type { RuleContext } from './crossChecks';
import type { GpuId } from '../../gpu/catalog';
import { findGpu } from '../../gpu/catalog';
import type { ProviderMachine, ProvisionedProvider } from './providerMachines';
import { cheapestMachine, providerMachines, provisionedProvider } from './providerMachines';

const NAMES: Readonly<Record<ProvisionedProvider, string>> = { lambda: 'Lambda', ec2: 'EC2', gcp: 'GCP' };

/** Machines of the instance type's family: the exact type when the catalog has it, else its family (n1, a2-highgpu, g4dn). */
function familyOf(p: ProvisionedProvider, instanceType: string): { exact: boolean; machines: readonly ProviderMachine[] } {
  const all = providerMachines(p);
  const exact = all.filter((m) => m.instanceType === instanceType);
  if (exact.length > 0) return { exact: true, machines: exact };
  const family = (t: string): string =>
    p === 'ec2'
      ? t.split('.')[0]!
      : p === 'gcp'
        ? t
            .split('-')
            .slice(0, /^a\d-/.test(t) ? 2 : 1)
            .join('-')
        : (/^gpu_\d+x_(.+)$/.exec(t)?.[1] ?? t);
  const f = family(instanceType);
  return { exact: false, machines: all.filter((m) => family(m.instanceType) === f) };
}

/** Why this instance type cannot take `count` of this GPU, or undefined when it can (or the catalogs cannot tell). */
export function instanceTypeProblem(p: ProvisionedProvider, instanceType: string, gpu: GpuId, count: number): string | undefined {
  const { exact, machines } = familyOf(p, instanceType);
  if (machines.length === 0) return undefined;
  const holds = [...new Set(machines.map((m) => m.gpu))];
  const article = /^[AEHIOLR]/.test(gpu) ? 'an' : 'a';
  const has = exact ? `${NAMES[p]} launches it with ${holds.join(' or ')}` : `${NAMES[p]} machines of its family hold ${holds.join(' or ')}`;
  if (!holds.includes(gpu)) return `${instanceType} cannot take ${article} ${gpu}: ${has}`;
  if (!exact) return undefined;
  const counts = machines.filter((m) => m.gpu === gpu).map((m) => m.gpuCount);
  if (!counts.includes(count)) return `${instanceType} has ${counts.join(' or ')} × ${gpu}, and target.gpu_count is ${count}`;
  return undefined;
}

/** Removes a YAML `key: value` line whole; undefined in JSON, where the neighbours' commas would need edits too. */
function removeYamlPair(ctx: RuleContext, path: readonly string[]): TextEdit | undefined {
  const pair = pairAt(ctx.root, path);
  if (!pair || ctx.syntax !== 'yaml') return undefined;
  const start = ctx.text.lastIndexOf('\n', pair.key.start - 1) + 1;
  const endOf = (pair.value ?? pair.key).end;
  const nl = ctx.text.indexOf('\n', endOf);
  return { start, end: nl === -1 ? ctx.text.length : nl + 1, newText: '' };
}

function gpuCountOf(root: DocNode | undefined): number {
  const c = scalarAt(root, ['target', 'gpu_count']);
  return typeof c === 'number' && Number.isInteger(c) && c > 0 ? c : 1;
}

/**
 * The edits that keep target.instance_type right when a fix changes the GPU to `gpu`: none when the type already
 * holds it, else the provider's cheapest machine with it (at the spec's GPU count), else the key removed so the
 * picker chooses.
 */
export function instanceTypeEditsFor(ctx: RuleContext, provider: ProvisionedProvider, gpu: GpuId): TextEdit[] {
  const node = nodeAt(ctx.root, ['target', 'instance_type']);
  if (node?.kind !== 'scalar' || typeof node.value !== 'string') return [];
  const count = gpuCountOf(ctx.root);
  if (!instanceTypeProblem(provider, node.value, gpu, count)) return [];
  const m = cheapestMachine(provider, gpu, count);
  if (m) return [replaceNode(node, m.instanceType, ctx.syntax)];
  const removed = removeYamlPair(ctx, ['target', 'instance_type']);
  return removed ? [removed] : [];
}

/** The spec's provider when it is a cloud, for the fixes that change target.gpu. */
export function specProvider(ctx: RuleContext): ProvisionedProvider | undefined {
  return provisionedProvider(scalarAt(ctx.root, ['target', 'provider']));
}

export function checkInstanceFit(ctx: RuleContext): ConfigDiagnostic[] {
  const provider = specProvider(ctx);
  const node = nodeAt(ctx.root, ['target', 'instance_type']);
  const gpuValue = scalarAt(ctx.root, ['target', 'gpu']);
  if (!provider || node?.kind !== 'scalar' || typeof node.value !== 'string' || typeof gpuValue !== 'string') return [];
  const gpu = findGpu(gpuValue);
  // A GPU outside the catalog is the schema's error (RFT104) or RFT819's, not this one.
  if (!gpu || gpu.id !== gpuValue) return [];
  const count = gpuCountOf(ctx.root);
  const problem = instanceTypeProblem(provider, node.value, gpu.id, count);
  if (!problem) return [];
  const m = cheapestMachine(provider, gpu.id, count);
  const removed = removeYamlPair(ctx, ['target', 'instance_type']);
  const fixes: Fix[] = m
    ? [
        {
          title: `Change to ${m.instanceType} (${count} × ${gpu.id} on ${NAMES[provider]})`,
          edits: [replaceNode(node, m.instanceType, ctx.syntax)],
          preferred: true,
        },
      ]
    : removed
      ? [{ title: 'Remove instance_type (the picker chooses a machine)', edits: [removed], preferred: true }]
      : [];
  const machines = m ? ` ${NAMES[provider]}'s machine for it is ${m.instanceType}.` : '';
  return [
    {
      start: node.start,
      end: Math.max(node.end, node.start + 1),
      severity: provider === 'lambda' ? 'warning' : 'error',
      code: 'RFT824',
      message: `target.instance_type ${problem}, so no offer matches and the launch fails.${machines}`,
      fixes,
    },
  ];
}
