// The first-run walkthrough's commands inside a real VS Code: the example lands in the workspace and opens,
// the editor's checks find nothing wrong with it, and the Runs view's "Get started" opens the walkthrough in
// the editor (the Welcome page), not a web page.
import * as assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';

const EXTENSION_ID = 'remote-finetune.remote-finetune';
const SOURCE = 'Remote Fine-Tune';

/**
 * Runs Open an Example as its button does (no argument). Run from the repository, the extension finds every
 * example in examples/ and asks which (the VSIX ships only first-run, offered first): accept the first row.
 */
async function openExample(): Promise<string | undefined> {
  let done = false;
  const run = Promise.resolve(vscode.commands.executeCommand<string | undefined>('remoteFinetune.openExample')).finally(() => {
    done = true;
  });
  while (!done) {
    await new Promise((r) => setTimeout(r, 500));
    if (!done) await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
  }
  return run;
}

suite('walkthrough', () => {
  suiteSetup(async () => {
    await vscode.extensions.getExtension(EXTENSION_ID)!.activate();
  });

  test('Open an Example copies first-run into the workspace, opens its finetune.yaml, and Validate finds no problem', async () => {
    const ws = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    assert.ok(ws, 'the test host opens a folder');
    // The host's workspace is a copy of examples/, which has first-run already: start without it.
    rmSync(join(ws, 'first-run'), { recursive: true, force: true });
    const spec = await openExample();
    assert.equal(spec, join(ws, 'first-run', 'finetune.yaml'));
    assert.ok(existsSync(join(ws, 'first-run', 'data', 'train.jsonl')), 'its data came along');
    assert.equal(vscode.window.activeTextEditor?.document.uri.fsPath, spec);
    await vscode.commands.executeCommand('remoteFinetune.validateConfig');
    await new Promise((r) => setTimeout(r, 1500));
    const ours = vscode.languages.getDiagnostics(vscode.Uri.file(spec)).filter((d) => d.source === SOURCE);
    assert.deepEqual(
      ours.map((d) => `${String(d.code)} ${d.message}`),
      [],
    );
    // A second time it reopens the same copy.
    assert.equal(await openExample(), spec);
  });

  test('"Get Started: Your First Run" opens the Welcome editor, inside VS Code', async () => {
    // Seen with code-server 4.100.3: an extension loaded from extensionDevelopmentPath (this suite) gets no
    // walkthrough registered (the Welcome editor opens on "Welcome" or another walkthrough, even 30 s on), while the same VSIX installed
    // opens "Walkthrough: Remote Fine-Tune" (test/e2e/demo.test.ts clicks the Runs view's link and sees it).
    // Here: the command exists, runs, and opens the editor's Welcome page rather than anything outside.
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await vscode.commands.executeCommand('remoteFinetune.openWalkthrough');
    const deadline = Date.now() + 10_000;
    let label = '';
    while (Date.now() < deadline && !/^(Welcome|Walkthrough: .+)$/.test(label)) {
      await new Promise((r) => setTimeout(r, 200));
      label = vscode.window.tabGroups.activeTabGroup.activeTab?.label ?? '';
    }
    assert.match(label, /^(Welcome|Walkthrough: .+)$/);
  });
});
