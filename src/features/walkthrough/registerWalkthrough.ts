// The "first run" walkthrough's own commands: open a shipped example in the person's folder, and open the
// walkthrough itself (from the empty Runs view) inside the editor rather than on a web page.
import * as vscode from 'vscode';
import { join } from 'node:path';
import { registerCommand } from '../commands';
import { showInformationMessage } from '../notify';
import { showQuickPick } from '../linkSafeUi';
import type { FeatureDeps } from '../deps';
import { copyExample, listExamples } from './exampleCopy';
import { FIRST_EXAMPLE, WALKTHROUGH_COMMANDS, WALKTHROUGH_ID } from './walkthroughIds';

async function destinationFolder(): Promise<string | undefined> {
  const ws = vscode.workspace.workspaceFolders?.[0];
  if (ws) return ws.uri.fsPath;
  const picked = await vscode.window.showOpenDialog({
    canSelectFiles: false,
    canSelectFolders: true,
    canSelectMany: false,
    openLabel: 'Put the Example Here',
    title: 'Where should the example go?',
  });
  return picked?.[0]?.fsPath;
}

async function pickExample(names: readonly string[]): Promise<string | undefined> {
  if (names.length <= 1) return names[0];
  const ordered = [...names].sort((a, b) => Number(b === FIRST_EXAMPLE) - Number(a === FIRST_EXAMPLE));
  return showQuickPick(ordered, { title: 'Open an Example', placeHolder: 'Which example?' });
}

export function registerWalkthrough(deps: FeatureDeps): vscode.Disposable {
  const { context, log } = deps;
  return vscode.Disposable.from(
    registerCommand(log, WALKTHROUGH_COMMANDS.openExample, async (): Promise<string | undefined> => {
      const root = join(context.extensionUri.fsPath, 'examples');
      const name = await pickExample(listExamples(root));
      if (!name) {
        if (!listExamples(root).length) log.error(`no examples shipped under ${root}`);
        return undefined;
      }
      const dest = await destinationFolder();
      if (!dest) return undefined;
      const copied = copyExample(root, name, dest);
      log.info(`${copied.created ? 'copied the example' : 'opened the earlier copy of the example'} ${name} in ${dest}`);
      await vscode.window.showTextDocument(vscode.Uri.file(copied.spec), { preview: false });
      if (!vscode.workspace.workspaceFolders?.length) {
        const open = await showInformationMessage(`The example is in ${dest}. Open that folder to run it with its data?`, 'Open Folder');
        if (open === 'Open Folder') await vscode.commands.executeCommand('vscode.openFolder', vscode.Uri.file(dest));
      }
      return copied.spec;
    }),
    registerCommand(log, WALKTHROUGH_COMMANDS.openWalkthrough, async () => {
      await vscode.commands.executeCommand('workbench.action.openWalkthrough', `${context.extension.id}#${WALKTHROUGH_ID}`, false);
    }),
  );
}
