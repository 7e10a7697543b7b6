// The hosts the pickers, the Hosts view and the Runs view know, as one list (core/hosts/hostSources.ts orders it):
// saved hosts, ~/.ssh/config's (the configured file, read at each call: it may change), hosts of past runs.
import { listConfiguredHosts } from '../../core/ssh/sshConfig';
import { mergeKnownHosts } from '../../core/hosts/hostSources';
import type { KnownHostEntry } from '../../core/hosts/hostSources';
import { newest } from '../../core/hosts/probeCache';
import type { ProbeCache, ProbeEntry } from '../../core/hosts/probeCache';
import { sshConfigPathSetting } from './sshPrompts';
import type { HostStore } from './hostStore';

export function configuredHosts(): string[] {
  try {
    const path = sshConfigPathSetting();
    return listConfiguredHosts(path ? { path } : {});
  } catch {
    return []; // an unreadable ssh config only hides its hosts
  }
}

export function listKnownHosts(
  store: HostStore,
  cache: ProbeCache,
  runHosts: () => readonly string[],
  spec?: string,
  wanted: readonly string[] = [],
): KnownHostEntry[] {
  const saved = store.list();
  const probeOf = (host: string): ProbeEntry | undefined => {
    const s = saved.find((h) => h.host === host);
    return newest(cache.get(host), s?.probe && s.probedAt ? { host, probe: s.probe, probedAt: s.probedAt } : undefined);
  };
  return mergeKnownHosts({ ...(spec ? { spec } : {}), saved: saved.map((h) => h.host), runs: runHosts(), sshConfig: configuredHosts() }, probeOf, wanted);
}
