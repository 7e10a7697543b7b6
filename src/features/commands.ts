// The one way the extension registers a command: a failure is written to the extension log with the
// command's id (VS Code's own "command failed" toast is gone once dismissed, and carries no context), then
// rethrown, so executeCommand callers and VS Code see it exactly as before.
import * as vscode from 'vscode';

type Handler = (...args: never[]) => unknown;

export function registerCommand(log: Pick<vscode.LogOutputChannel, 'error'>, id: string, handler: Handler): vscode.Disposable {
  return vscode.commands.registerCommand(id, async (...args: unknown[]) => {
    try {
      return await (handler as (...a: unknown[]) => unknown)(...args);
    } catch (err) {
      log.error(`command ${id} failed: ${err instanceof Error ? err.message : String(err)}`);
      throw err;
    }
  });
}
