// Multi-node runs (launcher.num_machines > 1): one run id, one run folder per machine, machine rank r on the
// spec's target.hosts[r]. Rank 0's files drive the panels; the other ranks are mirrored beside them, and
// the first rank to fail ends the run on every machine. What each machine's spec says (machine_rank, the
// rendezvous address and port) is decided here, before anything starts.

import { volumeOf } from '../hosts/runVolume';
import type { LooseRunSpec, RunSpec } from '../../config/runSpecDefaults';

/** The spec's machine count (1 when it has no launcher block or says nothing). */
export function machinesOf(spec: RunSpec): number {
  return spec.launcher?.num_machines ?? 1;
}

/** target.hosts as the spec lists them (rank order), or undefined. */
export function hostsOf(spec: RunSpec): string[] | undefined {
  return spec.target.hosts?.map((x) => x.trim());
}

/** Whether the spec's target is a cloud that launches the machines itself (no target.hosts). */
export function launchesMachines(spec: RunSpec): boolean {
  const p = spec.target.provider;
  return p === 'ec2' || p === 'gcp' || p === 'lambda';
}

/**
 * What is wrong with a multi-node start, or undefined when it can go ahead. A spec whose cloud launches the
 * machines needs no hosts (cloudMultiNodeProblem checks it once an offer is chosen), unless `onHosts` says the
 * start goes to SSH hosts anyway.
 */
export function multiNodeProblem(spec: RunSpec, hosts: readonly string[] | undefined, onHosts = false): string | undefined {
  const n = machinesOf(spec);
  if (n === 1) return undefined;
  const type = spec.launcher?.type;
  if (type !== 'torchrun' && type !== 'accelerate') return `launcher.num_machines is ${n}: launcher.type must be torchrun or accelerate`;
  if (!hosts && !onHosts && launchesMachines(spec)) return undefined;
  if (!hosts || hosts.length !== n)
    return `launcher.num_machines is ${n}: target.hosts must list ${n} SSH hosts, rank 0 first (it lists ${hosts?.length ?? 0})`;
  if (new Set(hosts).size !== hosts.length) return 'target.hosts lists a host twice: each machine rank needs its own host';
  return undefined;
}

/**
 * What is wrong with a multi-node run on a cloud (N instances launched for it), or undefined. A reclaimed spot
 * node would need the whole cluster relaunched, which nothing does yet; stop and keep would act on node 0 alone.
 */
export function cloudMultiNodeProblem(spec: RunSpec, spot: boolean, policy: string, provider: string): string | undefined {
  const n = machinesOf(spec);
  if (n === 1) return undefined;
  const type = spec.launcher?.type;
  if (type !== 'torchrun' && type !== 'accelerate') return `launcher.num_machines is ${n}: launcher.type must be torchrun or accelerate`;
  if (provider !== 'ec2' && provider !== 'gcp' && provider !== 'lambda') return `launcher.num_machines is ${n}: ${provider} does not launch several instances`;
  if (spot) return `launcher.num_machines is ${n}: multi-node runs launch on-demand instances; a spot node's reclaim is not recovered (set target.spot: false)`;
  if (volumeOf(spec)) return `launcher.num_machines is ${n}: target.volume attaches to one instance; a multi-node cloud run has ${n}`;
  if (policy !== 'terminate')
    return `launcher.num_machines is ${n}: a multi-node cloud run's instances are terminated when it ends (teardown.policy ${policy} is not supported)`;
  return undefined;
}

/** The rendezvous: rank 0's address as the other machines reach it, and a port free there. */
export interface Rendezvous {
  readonly address: string;
  readonly port: number;
}

/** The spec one machine runs: its machine_rank and the rendezvous, the rest as written. */
export function specForMachine(spec: Readonly<Record<string, unknown>>, rank: number, rdv: Rendezvous): Record<string, unknown> {
  const launcher = { ...(spec.launcher as Record<string, unknown>), machine_rank: rank, main_process_ip: rdv.address, main_process_port: rdv.port };
  return { ...spec, launcher };
}

/** The address and port the spec as written fixes, if it does (not the default port) (a private network address the SSH address is not). */
export function fixedRendezvous(written: LooseRunSpec): { address?: string; port?: number } {
  const { main_process_ip: address, main_process_port: port } = written.launcher ?? {};
  return { ...(address ? { address } : {}), ...(port !== undefined ? { port } : {}) };
}

/**
 * Asks rank 0's host for a port nobody listens on (the kernel picks one; it is closed again at once, so another
 * program could take it before torchrun does: the run then fails at the rendezvous and says so), and for the
 * address this SSH connection reached it at (SSH_CONNECTION's third field).
 */
export function rendezvousProbe(python: string): string {
  return `printf '%s\\n' "$SSH_CONNECTION" && ${python} -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'`;
}

export function parseRendezvousProbe(out: string): { address?: string; port?: number } {
  const [conn, portLine] = out.split('\n');
  const addr = conn?.trim().split(/\s+/)[2];
  const port = Number(portLine?.trim());
  return {
    ...(addr && /^[0-9A-Fa-f.:]+$/.test(addr) ? { address: addr } : {}),
    ...(Number.isInteger(port) && port > 0 && port < 65536 ? { port } : {}),
  };
}

/** Where rank r's files are mirrored: beside rank 0's, in rank-<r>/. */
export function machineLocalDir(localDir: string, rank: number): string {
  return `${localDir}/rank-${rank}`;
}

/**
 * Which failure ends a multi-node run: a rank that died of a known failure (a signature) beats one that died
 * because its peer vanished (a collective error, no signature); among equals, the earliest to end.
 */
export function decisiveFailure<T extends { readonly failure?: { readonly message: string; readonly signature?: string }; readonly endedAt?: number }>(
  ranks: readonly T[],
): T | undefined {
  const failed = ranks.filter((r) => r.failure);
  const byTime = (a: T, b: T): number => (a.endedAt ?? Infinity) - (b.endedAt ?? Infinity);
  return failed.filter((r) => r.failure?.signature).sort(byTime)[0] ?? [...failed].sort(byTime)[0];
}
