// "Fine-Tune: Compare Runs": from the Runs view (the runs selected there) or the palette (a multi-select quick
// pick of recorded runs, newest first). One Compare Runs panel: running the command again shows the new choice.
import * as vscode from 'vscode';
import { showQuickPick } from '../linkSafeUi';
import { registerCommand } from '../commands';
import { showInformationMessage } from '../notify';
import type { RunContext } from './runDataSource';
import { webviewOptions } from './panelHost';
import { COMPARE_PANEL, ComparePanelHost, MAX_COMPARED } from './comparePanel';

export const COMPARE_RUNS_COMMAND = 'remoteFinetune.compareRuns';

/** A run id from a command argument: an id, or a Runs view node. */
function runIdOf(arg: unknown): string | undefined {
  if (typeof arg === 'string') return arg;
  if (typeof arg !== 'object' || arg === null || (arg as { kind?: unknown }).kind !== 'run') return undefined;
  const id = (arg as { record?: { id?: unknown } }).record?.id;
  return typeof id === 'string' ? id : undefined;
}

/** A tree view passes (clicked node, all selected nodes); a caller may pass an array of ids. */
export function runIdsFromArgs(first: unknown, second: unknown): string[] {
  const list = Array.isArray(second) ? second : Array.isArray(first) ? first : [first];
  return [...new Set(list.map(runIdOf).filter((id): id is string => id !== undefined))];
}

async function pickRuns(runs: RunContext, preselected: readonly string[]): Promise<string[] | undefined> {
  type Item = vscode.QuickPickItem & { id: string };
  const items: Item[] = (runs.comparableRuns?.() ?? []).map((r) => ({
    id: r.id,
    label: r.label,
    ...(r.detail ? { detail: r.detail } : {}),
    picked: preselected.includes(r.id),
  }));
  if (items.length < 2) {
    void showInformationMessage(`Compare Runs needs two recorded runs or more; this machine has recorded ${items.length}.`);
    return undefined;
  }
  const chosen = await showQuickPick(items, {
    title: 'Compare Runs',
    placeHolder: `Pick two runs or more (up to ${MAX_COMPARED}), newest first`,
    canPickMany: true,
  });
  return chosen?.map((c) => c.id);
}

export function registerCompareRuns(
  log: vscode.LogOutputChannel,
  extensionUri: vscode.Uri,
  runs: RunContext | undefined,
): vscode.Disposable & { host(): ComparePanelHost | undefined } {
  let host: ComparePanelHost | undefined;
  const command = registerCommand(log, COMPARE_RUNS_COMMAND, async (first?: unknown, second?: unknown) => {
    if (!runs) return;
    let ids = runIdsFromArgs(first, second);
    if (ids.length < 2) {
      const picked = await pickRuns(runs, ids);
      if (!picked) return;
      ids = picked;
    }
    if (ids.length < 2) {
      void showInformationMessage('Pick two runs or more to compare.');
      return;
    }
    if (ids.length > MAX_COMPARED) void showInformationMessage(`Comparing the first ${MAX_COMPARED} of ${ids.length} runs.`);
    if (!host) {
      const panel = vscode.window.createWebviewPanel(COMPARE_PANEL.viewType, COMPARE_PANEL.title, vscode.ViewColumn.Active, webviewOptions(extensionUri));
      const created = new ComparePanelHost(panel, extensionUri, log, runs);
      created.onDidDispose(() => {
        if (host === created) host = undefined;
      });
      host = created;
    } else host.panel.reveal();
    host.show(ids);
  });
  return Object.assign(vscode.Disposable.from(command, { dispose: () => host?.dispose() }), { host: () => host });
}
