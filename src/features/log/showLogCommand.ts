import type * as vscode from 'vscode';
import { registerCommand } from '../commands';
import type { FeatureDeps } from '../deps';

export const SHOW_LOG_COMMAND = 'remoteFinetune.showLog';

export function registerShowLogCommand(deps: FeatureDeps): vscode.Disposable {
  return registerCommand(deps.log, SHOW_LOG_COMMAND, () => {
    // preserveFocus=false: the person asked to see it, so it takes focus.
    deps.log.show(false);
  });
}
