// The downloaded adapter in the Explorer when it lies in the workspace (it does by default), else in the OS's
// file manager: the end notification's button and the Runs view's action do the same.
import * as vscode from 'vscode';
import { isAbsolute, relative } from 'node:path';

export async function revealAdapter(dir: string): Promise<void> {
  const uri = vscode.Uri.file(dir);
  const inWorkspace = (vscode.workspace.workspaceFolders ?? []).some((w) => {
    const rel = relative(w.uri.fsPath, dir);
    return !rel.startsWith('..') && !isAbsolute(rel);
  });
  await vscode.commands.executeCommand(inWorkspace ? 'revealInExplorer' : 'revealFileInOS', uri);
}
