// The Runs view: every run the store knows, newest first, grouped by host. A row tells runs of one spec
// apart: start time, status, step, loss, duration, GPU and cost; its tooltip adds where the adapter went.
// Context-menu actions (logs, GPU, metrics, stop, download, terminate, run again) are contributed in
// package.json against the item's contextValue.
import * as vscode from 'vscode';
import { textTooltip, treeItem } from '../linkSafeUi';
import type { RunStore } from '../../core/runs/store/runStore';
import { touches } from '../../core/runs/store/runStore';
import type { RunRecord, RunStatus } from '../../core/runs/store/runRecord';
import { isTerminal } from '../../core/runs/store/runRecord';
import { runContextValue } from '../../core/runs/view/runContextValue';
import { ledgerNote } from '../../core/runs/store/ledger';
import type { LedgerEntry } from '../../core/runs/store/ledger';
import { runRowText } from '../../core/runs/view/runRowText';
import type { HostLinks } from './runPanelsContext';

export const RUNS_VIEW_ID = 'remoteFinetune.runs';

export type RunsNode =
  { readonly kind: 'host'; readonly host: string; readonly runs: readonly RunRecord[] } | { readonly kind: 'run'; readonly record: RunRecord };

const ICONS: Readonly<Record<RunStatus, string>> = {
  planned: 'circle-outline',
  provisioning: 'cloud-upload',
  connecting: 'plug',
  syncing: 'sync~spin',
  bootstrapping: 'tools',
  running: 'pulse',
  completed: 'pass',
  failed: 'error',
  stopped: 'debug-stop',
  interrupted: 'debug-pause',
  preempted: 'cloud',
  stalled: 'watch',
  'budget-stopped': 'credit-card',
  cancelled: 'circle-slash',
};

export class RunsTreeProvider implements vscode.TreeDataProvider<RunsNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<RunsNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly sub: { dispose(): void };
  private readonly linkSub: { dispose(): void } | undefined;
  private readonly clock: NodeJS.Timeout;
  /** What the ownership ledger says of runs whose instance may still bill (launch outcome unknown, cleanup failed). */
  private notes = new Map<string, string>();

  constructor(
    private readonly store: RunStore,
    private readonly ledger?: { entries(): Promise<readonly LedgerEntry[]> },
    private readonly links?: HostLinks,
  ) {
    // A live run's link to its host is said on its row; it is transient, so it stays out of the store.
    this.linkSub = links?.onHostLink(() => this.changed.fire(undefined));
    this.sub = store.onDidChange((c) => {
      this.changed.fire(undefined);
      // The ledger's word on a run changes with its instance or its state, not with its step or loss.
      if (touches(c, 'status', 'instanceId', 'provider')) void this.readLedger();
    });
    // A live run's duration moves even when its log is quiet; a ledger entry changes state without the store.
    this.clock = setInterval(() => {
      if (store.live().length > 0) this.changed.fire(undefined);
      void this.readLedger();
    }, 30_000);
    this.clock.unref?.();
    void this.readLedger();
  }

  /** Re-reads the ledger's notes; the view changes only when they do. */
  async readLedger(): Promise<void> {
    if (!this.ledger) return;
    const next = new Map<string, string>();
    for (const e of await this.ledger.entries().catch(() => [])) {
      const note = ledgerNote(e);
      if (note) next.set(e.runId, note);
    }
    const same = next.size === this.notes.size && [...next].every(([k, v]) => this.notes.get(k) === v);
    this.notes = next;
    if (!same) this.changed.fire(undefined);
  }

  refresh(): void {
    this.changed.fire(undefined);
  }

  getTreeItem(node: RunsNode): vscode.TreeItem {
    if (node.kind === 'host') {
      const item = treeItem(node.host, vscode.TreeItemCollapsibleState.Expanded);
      item.iconPath = new vscode.ThemeIcon('server');
      item.contextValue = 'host';
      item.description = `${node.runs.filter((r) => !isTerminal(r.status)).length} live`;
      return item;
    }
    const r = node.record;
    const item = treeItem(r.name, vscode.TreeItemCollapsibleState.None);
    item.id = r.id;
    const note = this.notes.get(r.id);
    const row = runRowText(r, this.links?.hostLink(r.id), note);
    item.description = row.description;
    item.iconPath = new vscode.ThemeIcon(note ? 'warning' : ICONS[r.status]);
    item.contextValue = runContextValue(r);
    // Host and log text in it is untrusted: appended as text, never as markdown.
    item.tooltip = textTooltip(row.tooltip, { supportThemeIcons: true });
    item.command = { command: 'remoteFinetune.selectRun', title: 'Select Run', arguments: [r.id] };
    return item;
  }

  getChildren(node?: RunsNode): RunsNode[] {
    if (node?.kind === 'run') return [];
    if (node?.kind === 'host') return node.runs.map((record) => ({ kind: 'run', record }));
    const byHost = new Map<string, RunRecord[]>();
    for (const r of this.store.all()) {
      const h = r.host ?? (r.provider === 'ssh' ? 'unknown host' : `${r.provider} (provisioning)`);
      byHost.set(h, [...(byHost.get(h) ?? []), r]);
    }
    return [...byHost.entries()].map(([host, runs]) => ({ kind: 'host', host, runs }));
  }

  dispose(): void {
    clearInterval(this.clock);
    this.linkSub?.dispose();
    this.sub.dispose();
    this.changed.dispose();
  }
}

/** One row of the view as the person reads it (the host tests compare these). */
export interface RunsViewRow {
  readonly id: string;
  readonly host: string;
  readonly label: string;
  readonly description: string;
  readonly tooltip: string;
  readonly contextValue: string;
}

/** MarkdownString.appendText's escaping undone: the text the hover shows. */
function plainText(markdown: string): string {
  return markdown
    .replace(/\n\n/g, '\n')
    .replace(/&nbsp;/g, ' ')
    .replace(/\\([\\`*_{}[\]()#+\-.!~|<>$])/g, '$1');
}

/** The view's run rows as its provider renders them, host by host. */
export function runsViewRows(provider: RunsTreeProvider): RunsViewRow[] {
  const rows: RunsViewRow[] = [];
  for (const hostNode of provider.getChildren()) {
    if (hostNode.kind !== 'host') continue;
    for (const node of provider.getChildren(hostNode)) {
      if (node.kind !== 'run') continue;
      const item = provider.getTreeItem(node);
      const tip = item.tooltip;
      rows.push({
        id: node.record.id,
        host: hostNode.host,
        label: typeof item.label === 'string' ? item.label : (item.label?.label ?? ''),
        description: typeof item.description === 'string' ? item.description : '',
        tooltip: typeof tip === 'string' ? tip : plainText(tip?.value ?? ''),
        contextValue: item.contextValue ?? '',
      });
    }
  }
  return rows;
}

export function registerRunsView(
  store: RunStore,
  ledger?: { entries(): Promise<readonly LedgerEntry[]> },
  links?: HostLinks,
): vscode.Disposable & { readonly provider: RunsTreeProvider } {
  const provider = new RunsTreeProvider(store, ledger, links);
  // Several runs selected at once go to Compare Runs together.
  const view = vscode.window.createTreeView(RUNS_VIEW_ID, { treeDataProvider: provider, showCollapseAll: true, canSelectMany: true });
  return Object.assign(vscode.Disposable.from(view, provider), { provider });
}
