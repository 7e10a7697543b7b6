// The SSH hosts of past runs (newest first), which join the Hosts view and the target picker. Its change event
// fires only when a run's host could have changed (a run added or removed, its host or provider changed): the
// Hosts view re-reads ~/.ssh/config on each, and a live run changes its record many times a minute.
import type { RunStore } from '../store/runStore';
import { touches } from '../store/runStore';

export interface RunHosts {
  list(): string[];
  onDidChange(listener: () => void): { dispose(): void };
}

export function runHostsOf(store: RunStore): RunHosts {
  return {
    list: () =>
      store
        .all()
        .filter((r) => r.provider === 'ssh' && r.host)
        .sort((a, b) => b.createdAt.localeCompare(a.createdAt))
        .map((r) => r.host!),
    onDidChange: (listener) =>
      store.onDidChange((c) => {
        if (touches(c, 'host', 'provider')) listener();
      }),
  };
}
