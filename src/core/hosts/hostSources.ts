// Every SSH host the extension knows of, in one list for the target picker and the Hosts view: the run
// spec's host, hosts the person added, hosts of past runs, and ~/.ssh/config's hosts, each once, with its
// last probe. Order is what a person reaches for: the spec's host, then hosts that have the asked GPU,
// then saved hosts, hosts of recent runs (newest first) and ssh_config in file order.
import type { ProbeEntry } from './probeCache';
import { gpuMatches, probedGpuNames } from './gpuCheck';

export type HostSource = 'spec' | 'saved' | 'run' | 'ssh_config';

export interface KnownHostEntry {
  readonly host: string;
  /** Where it was found, in the order above. */
  readonly sources: readonly HostSource[];
  readonly probe?: ProbeEntry;
}

export interface HostSources {
  readonly spec?: string;
  readonly saved: readonly string[];
  /** Hosts of past runs, newest first. */
  readonly runs: readonly string[];
  readonly sshConfig: readonly string[];
}

const SOURCE_LABEL: Readonly<Record<HostSource, string>> = { spec: 'in the spec', saved: 'added', run: 'used by a run', ssh_config: 'ssh config' };

export function mergeKnownHosts(src: HostSources, probeOf: (host: string) => ProbeEntry | undefined, wantedGpus: readonly string[] = []): KnownHostEntry[] {
  const byHost = new Map<string, HostSource[]>();
  const add = (host: string | undefined, source: HostSource): void => {
    const h = host?.trim();
    if (!h) return;
    const list = byHost.get(h) ?? [];
    if (!list.includes(source)) list.push(source);
    byHost.set(h, list);
  };
  add(src.spec, 'spec');
  for (const h of src.saved) add(h, 'saved');
  for (const h of src.runs) add(h, 'run');
  for (const h of src.sshConfig) add(h, 'ssh_config');
  const entries = [...byHost].map(([host, sources]) => {
    const probe = probeOf(host);
    return { host, sources, ...(probe ? { probe } : {}) };
  });
  const has = (e: KnownHostEntry): boolean => !!e.probe && probedGpuNames(e.probe.probe).some((n) => wantedGpus.some((w) => gpuMatches(n, w)));
  const rank = (e: KnownHostEntry): number => (e.sources.includes('spec') ? 0 : wantedGpus.length > 0 && has(e) ? 1 : 2);
  // Array.prototype.sort is stable: within a rank, the sources' order stays.
  return entries.sort((a, b) => rank(a) - rank(b));
}

/** "2 × NVIDIA A100-SXM4-40GB (40 GiB)", "no NVIDIA GPU" or "GPUs not probed yet": a picker description. */
export function gpuSummary(e: Pick<KnownHostEntry, 'probe'>): string {
  const p = e.probe?.probe;
  if (!p) return 'GPUs not probed yet';
  if (p.kind === 'none') return 'no NVIDIA GPU';
  const groups = new Map<string, number>();
  for (const g of p.gpus) {
    const key = `${g.name}${g.memoryTotalMiB !== null ? ` (${Math.round(g.memoryTotalMiB / 1024)} GiB)` : ''}`;
    groups.set(key, (groups.get(key) ?? 0) + 1);
  }
  return [...groups].map(([k, n]) => `${n} × ${k}`).join(' + ');
}

export function sourcesText(sources: readonly HostSource[]): string {
  return sources.map((s) => SOURCE_LABEL[s]).join(', ');
}
