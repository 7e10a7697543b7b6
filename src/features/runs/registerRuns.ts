// Everything about runs in the editor: the Runs view, Start Training, the run actions, the status bar,
// the end-of-run notification and the context keys of the palette's `when` clauses. Live runs are
// reattached as soon as the workspace is trusted.
import { registerCommand } from '../commands';
import * as vscode from 'vscode';
import type { FeatureDeps } from '../deps';
import type { RunServices } from './runServices';
import type { TargetSources } from './targets';
import { registerRunsView, runsViewRows } from './runsView';
import { registerStartTraining } from './startTraining';
import { registerRunActions } from './runActions';
import { registerHubActions } from './hubActions';
import { registerRunStatusBar } from './runStatusBar';
import { registerRunNotifications } from './runNotifications';
import { registerRunsContext } from './runsContext';
import { registerTryAdapter } from './tryAdapterCommand';
import { registerRemoveRun } from './removeRunCommand';

/** Internal (not in the manifest): what the Runs view, status bar, end notification and context keys show, read by the VS Code host tests. */
export const RUNS_STATE_COMMAND = 'remoteFinetune.runs._state';

export function registerRuns(deps: FeatureDeps, runs: RunServices, sources: TargetSources): vscode.Disposable {
  const reattach = (): void => {
    const n = runs.manager.reattachAll();
    if (n > 0) deps.log.info(`reattached to ${n} live run(s)`);
  };
  const view = registerRunsView(runs.store, runs.ledger, runs.manager);
  const statusBar = registerRunStatusBar(runs);
  const notices = registerRunNotifications(runs, deps.log);
  const context = registerRunsContext(runs.store);
  const disposables: vscode.Disposable[] = [
    runs,
    view,
    registerStartTraining(deps, runs, sources),
    registerRunActions(deps, runs),
    registerHubActions(deps, runs),
    registerTryAdapter(deps, runs),
    registerRemoveRun(deps, runs),
    statusBar,
    notices,
    context,
    registerCommand(deps.log, RUNS_STATE_COMMAND, () => ({
      rows: runsViewRows(view.provider),
      statusBar: statusBar.state(),
      lastNotification: notices.last() ?? null,
      context: context.state(),
    })),
  ];
  if (vscode.workspace.isTrusted) reattach();
  else disposables.push(vscode.workspace.onDidGrantWorkspaceTrust(reattach));
  return vscode.Disposable.from(...disposables);
}
