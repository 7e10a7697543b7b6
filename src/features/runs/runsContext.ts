// Context keys for the manifest's `when` clauses: commands that act on a run stay out of the command
// palette until the store holds one (and Stop until one is live), instead of answering "No run fits".
import * as vscode from 'vscode';
import type { RunStore } from '../../core/runs/store/runStore';
import { RUNS_CONTEXT, runsContextState } from './runsContextState';
import type { RunsContextState } from './runsContextState';

export { RUNS_CONTEXT };

export function registerRunsContext(store: RunStore): vscode.Disposable & { state(): RunsContextState } {
  let last: RunsContextState | undefined;
  const apply = (): void => {
    const next = runsContextState(store);
    if (last && last.hasRuns === next.hasRuns && last.hasLiveRuns === next.hasLiveRuns) return;
    last = next;
    void vscode.commands.executeCommand('setContext', RUNS_CONTEXT.hasRuns, next.hasRuns);
    void vscode.commands.executeCommand('setContext', RUNS_CONTEXT.hasLiveRuns, next.hasLiveRuns);
  };
  apply();
  const sub = store.onDidChange(apply);
  return Object.assign(new vscode.Disposable(() => sub.dispose()), { state: (): RunsContextState => last ?? runsContextState(store) });
}
