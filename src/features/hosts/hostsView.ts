// The Hosts view: every host the pickers and the Runs view know (saved, ~/.ssh/config, hosts of past runs),
// each with its GPUs from the last probe as description and tooltip, and the boards as children.
import * as vscode from 'vscode';
import { textTooltip, treeItem } from '../linkSafeUi';
import { describeGpus } from '../../core/ssh/gpuProbe';
import { gpuSummary, sourcesText } from '../../core/hosts/hostSources';
import type { KnownHostEntry } from '../../core/hosts/hostSources';

export const HOSTS_VIEW_ID = 'remoteFinetune.hosts';

export type HostsNode = { readonly kind: 'host'; readonly host: KnownHostEntry } | { readonly kind: 'gpu'; readonly label: string; readonly detail: string };

/** What a row shows, also returned by Refresh so tests and callers see the view's content. */
export interface HostRow {
  readonly label: string;
  readonly description: string;
  readonly tooltip: string;
  readonly saved: boolean;
}

export function hostRow(e: KnownHostEntry): HostRow {
  const probe = e.probe;
  const gpus = gpuSummary(e);
  return {
    label: e.host,
    description: `${gpus} · ${sourcesText(e.sources)}`,
    tooltip: `${e.host} (${sourcesText(e.sources)})\n${probe ? describeGpus(probe.probe) : 'GPUs not probed yet: Refresh, or pick it in Start Training'}${probe ? `\nprobed ${probe.probedAt}` : ''}`,
    saved: e.sources.includes('saved'),
  };
}

export class HostsTreeProvider implements vscode.TreeDataProvider<HostsNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<HostsNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly subs: Array<{ dispose(): void }>;

  constructor(
    private readonly hosts: () => KnownHostEntry[],
    changes: ReadonlyArray<(l: () => void) => { dispose(): void }>,
  ) {
    this.subs = changes.map((on) => on(() => this.refresh()));
  }

  refresh(): void {
    this.changed.fire(undefined);
  }

  getTreeItem(node: HostsNode): vscode.TreeItem {
    if (node.kind === 'gpu') {
      const item = treeItem(node.label, vscode.TreeItemCollapsibleState.None);
      item.description = node.detail;
      item.iconPath = new vscode.ThemeIcon('circuit-board');
      return item;
    }
    const probe = node.host.probe?.probe;
    const row = hostRow(node.host);
    const item = treeItem(row.label, probe?.kind === 'nvidia' ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
    item.id = `host:${node.host.host}`;
    // Only saved hosts can be removed; any host can be probed (menus match on the prefix).
    item.contextValue = row.saved ? 'remoteFinetune.host' : 'remoteFinetune.host.known';
    item.iconPath = new vscode.ThemeIcon(probe?.kind === 'nvidia' ? 'server-environment' : 'server');
    item.description = row.description;
    item.tooltip = textTooltip(row.tooltip);
    return item;
  }

  getChildren(node?: HostsNode): HostsNode[] {
    if (!node) return this.hosts().map((host) => ({ kind: 'host', host }));
    const p = node.kind === 'host' ? node.host.probe?.probe : undefined;
    if (p?.kind !== 'nvidia') return [];
    return p.gpus.map((g) => ({
      kind: 'gpu',
      label: `GPU ${g.index}: ${g.name}`,
      detail: `${g.memoryTotalMiB !== null ? `${Math.round(g.memoryTotalMiB / 1024)} GiB · ` : ''}driver ${p.driverVersion}${p.cudaVersion ? ` · CUDA ${p.cudaVersion}` : ''}`,
    }));
  }

  dispose(): void {
    for (const s of this.subs) s.dispose();
    this.changed.dispose();
  }
}
