// Run-spec rules on how the run is launched: processes per GPU, several machines, several GPUs under python.
import type { DocNode } from '../ast';
import { nodeAt, scalarAt } from '../ast';
import type { ConfigDiagnostic } from '../types';
import { setValue } from './crossChecks';
import { replaceNode } from '../edits';
import { plural } from '../plainText';
import type { RunSpecFacts } from './runSpecFacts';
import { nodeRange } from './ruleTable';

/** RFT805 launcher.num_processes is not one per GPU. */
export function processesPerGpu(s: RunSpecFacts): ConfigDiagnostic[] {
  const npNode = nodeAt(s.root, ['launcher', 'num_processes']);
  if (npNode?.kind !== 'scalar' || typeof npNode.value !== 'number' || npNode.value === s.world) return [];
  // The python launcher starts one process whatever num_processes says (python-runner/launchers.py).
  const ignored = s.launcherType === 'python';
  const shape = `${plural(s.gpuCount, 'GPU')}${s.machines > 1 ? ` × ${plural(s.machines, 'machine')} = ${s.world}` : ''}`;
  return [
    {
      ...nodeRange(npNode),
      severity: ignored ? 'warning' : 'error',
      code: 'RFT805',
      message: ignored
        ? `launcher.num_processes is ${npNode.value}, but launcher.type python starts one process and ignores it; the target has ${shape}. Set it to ${s.world}, or use accelerate or torchrun to start one process per GPU.`
        : `launcher.num_processes is ${npNode.value} but the target has ${shape}: use one process per GPU.`,
      fixes: [{ title: `Set num_processes to ${s.world}`, edits: [replaceNode(npNode, s.world, s.syntax)], preferred: true }],
    },
  ];
}

// Multi-node (README "Multi-node"): one SSH host per machine rank in target.hosts, or N on-demand instances of
// a cloud (ec2, gcp, lambda) launched for the run and terminated with it; started by torchrun/accelerate.
const isCloud = (provider: unknown): boolean => provider === 'ec2' || provider === 'gcp' || provider === 'lambda';
const ranksLauncher = (s: RunSpecFacts): boolean => s.launcherType === 'torchrun' || s.launcherType === 'accelerate';

/** RFT830 a multi-node cloud run: on-demand instances, terminated with the run, no volume. */
export function multiNodeCloud(s: RunSpecFacts): ConfigDiagnostic[] {
  const provider = scalarAt(s.root, ['target', 'provider']) ?? 'ssh';
  if (s.machines <= 1 || !nodeAt(s.root, ['launcher', 'num_machines']) || !isCloud(provider) || !ranksLauncher(s)) return [];
  const problem = cloudProblem(s);
  return problem ? [{ ...nodeRange(problem.node), severity: 'error', code: 'RFT830', message: problem.message }] : [];
}

function cloudProblem(s: RunSpecFacts): { node: DocNode; message: string } | undefined {
  const spotNode = nodeAt(s.root, ['target', 'spot']);
  const policyNode = nodeAt(s.root, ['teardown', 'policy']);
  const volumeNode = nodeAt(s.root, ['target', 'volume']);
  const policy = scalarAt(s.root, ['teardown', 'policy']) ?? 'terminate';
  const m = `launcher.num_machines is ${s.machines}`;
  if (spotNode?.kind === 'scalar' && spotNode.value === true)
    return {
      node: spotNode,
      message: `${m}: multi-node cloud runs launch on-demand instances; a reclaimed spot node is not recovered. Set target.spot: false.`,
    };
  if (policyNode && policy !== 'terminate')
    return {
      node: policyNode,
      message: `${m}: a multi-node cloud run's instances are terminated when it ends; teardown.policy ${String(policy)} is not supported for it.`,
    };
  if (volumeNode) return { node: volumeNode, message: `${m}: target.volume attaches to one instance; a multi-node cloud run launches ${s.machines}.` };
  return undefined;
}

/** RFT830 several machines need a ranks launcher and, over SSH, one host per machine rank. */
export function multiNodeHosts(s: RunSpecFacts): ConfigDiagnostic[] {
  const machinesNode = nodeAt(s.root, ['launcher', 'num_machines']);
  if (s.machines <= 1 || !machinesNode) return [];
  const hostsNode = nodeAt(s.root, ['target', 'hosts']);
  const provider = scalarAt(s.root, ['target', 'provider']) ?? 'ssh';
  const m = `launcher.num_machines is ${s.machines}`;
  const problem = !ranksLauncher(s)
    ? `${m}: launcher.type must be torchrun or accelerate to start ranks on several machines.`
    : isCloud(provider)
      ? undefined
      : provider !== 'ssh'
        ? `${m}: multi-node runs go to your SSH hosts (provider ssh with target.hosts) or to instances of ec2, gcp or lambda; ${String(provider)} does not launch several machines.`
        : hostsNode?.kind !== 'seq'
          ? `${m}: list ${s.machines} SSH hosts in target.hosts, rank 0 first.`
          : hostsNode.items.length !== s.machines
            ? `target.hosts lists ${plural(hostsNode.items.length, 'host')} but ${m}: one host per machine rank.`
            : undefined;
  return problem ? [{ ...nodeRange(hostsNode?.kind === 'seq' ? hostsNode : machinesNode), severity: 'error', code: 'RFT830', message: problem }] : [];
}

/** RFT815 several GPUs under the python launcher (one process, one GPU). */
export function pythonOnSeveralGpus(s: RunSpecFacts): ConfigDiagnostic[] {
  if (s.launcherType !== 'python' || s.gpuCount <= 1 || s.hasCommand) return [];
  const edits = [setValue(s, ['launcher', 'type'], 'accelerate')].filter((e): e is NonNullable<typeof e> => e !== undefined);
  return [
    {
      ...nodeRange(nodeAt(s.root, ['target', 'gpu_count'])!),
      severity: 'warning',
      code: 'RFT815',
      message: `The target has ${s.gpuCount} GPUs but launcher.type is python (one process, one GPU). Use accelerate or torchrun to train on all of them.`,
      fixes: edits.length > 0 ? [{ title: 'Launch with accelerate', edits }] : [],
    },
  ];
}
