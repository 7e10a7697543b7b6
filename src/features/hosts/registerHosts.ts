import * as vscode from 'vscode';
import { withProgress } from '../linkSafeUi';
import { registerCommand } from '../commands';
import type { FeatureDeps } from '../deps';
import type { HostStore } from './hostStore';
import { HostsTreeProvider, HOSTS_VIEW_ID, hostRow } from './hostsView';
import type { HostRow } from './hostsView';
import { registerHostCommands, REFRESH_HOSTS_COMMAND } from './addHostCommand';
import { createHostProber } from './hostProbe';
import { ProbeCache } from '../../core/hosts/probeCache';
import type { HostProber } from './hostProbe';
import { listKnownHosts } from './knownHostList';
import type { KnownHostEntry } from '../../core/hosts/hostSources';

/** Hosts of past runs (newest first), from the run store the composition root owns. */
export interface RunHosts {
  list(): readonly string[];
  onDidChange(listener: () => void): { dispose(): void };
}

/** What Start Training needs from the hosts feature. */
export interface HostsApi {
  readonly prober: HostProber;
  known(spec?: string, wanted?: readonly string[]): KnownHostEntry[];
}

/** Built once by the composition root over its host store; Start Training and the Hosts view share it. */
export function createHostsApi(deps: FeatureDeps, store: HostStore, runHosts: RunHosts): HostsApi {
  // One cache, shared by the Hosts view and Start Training through this API.
  const cache = new ProbeCache(deps.context.globalState);
  const prober = createHostProber(store, cache, () => deps.connectOptions, deps.log);
  return { prober, known: (spec, wanted) => listKnownHosts(store, cache, () => runHosts.list(), spec, wanted) };
}

export function registerHosts(deps: FeatureDeps, store: HostStore, api: HostsApi, runHosts: RunHosts): vscode.Disposable {
  const provider = new HostsTreeProvider(
    () => api.known(),
    [(l) => store.onDidChange(l), (l) => api.prober.cache.onDidChange(l), (l) => runHosts.onDidChange(l)],
  );
  const view = vscode.window.createTreeView(HOSTS_VIEW_ID, { treeDataProvider: provider });
  // Refresh: re-read ssh_config and the runs, and probe every listed host again (GPUs change when a host is
  // rebuilt). Returns the rows as the view shows them.
  const refresh = registerCommand(deps.log, REFRESH_HOSTS_COMMAND, async (): Promise<HostRow[]> => {
    const hosts = api.known();
    if (vscode.workspace.isTrusted && hosts.length > 0) {
      await withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'Checking the GPUs of your hosts', cancellable: true },
        async (progress, token) => {
          const ac = new AbortController();
          token.onCancellationRequested(() => ac.abort());
          // Two at a time: quick over several hosts, without a burst of connections (or host-key prompts).
          const queue = [...hosts];
          const worker = async (): Promise<void> => {
            for (let h = queue.shift(); h && !ac.signal.aborted; h = queue.shift()) {
              progress.report({ message: h.host });
              try {
                await api.prober.probeNow(h.host, ac.signal);
              } catch (err) {
                deps.log.warn(`host ${h.host}: GPU probe failed: ${(err as Error).message}`);
              }
            }
          };
          await Promise.all([worker(), worker()]);
        },
      );
    }
    provider.refresh();
    return api.known().map(hostRow);
  });
  return vscode.Disposable.from(view, provider, refresh, registerHostCommands(store, api.prober, deps.log));
}
