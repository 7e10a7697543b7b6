// Config checks in the editor: diagnostics, quick fixes, hovers, the VRAM CodeLens and the validate
// command. Everything here is a thin layer over src/core/config; it runs in untrusted workspaces
// too (it only reads files), which is why no trust check appears here.
import { registerCommand } from '../commands';
import * as vscode from 'vscode';
import type { FeatureDeps } from '../deps';
import { ConfigDiagnostics } from './configDiagnostics';
import { ConfigCodeActions } from './configCodeActions';
import { ConfigHover } from './configHover';
import { ConfigCodeLens, SHOW_ESTIMATE_COMMAND } from './configCodeLens';
import { registerValidateCommand } from './validateCommand';
import { EstimateView, ESTIMATE_SCHEME } from './estimateView';
import { BackgroundValidator } from '../../core/config/backgroundValidator';
import { join } from 'node:path';
import type { RunRecord } from '../../core/runs/store/runRecord';

const SELECTOR: vscode.DocumentSelector = [{ scheme: 'file' }, { scheme: 'untitled' }];

export function registerConfig(deps: FeatureDeps, history?: () => readonly RunRecord[]): vscode.Disposable {
  const background = new BackgroundValidator(join(deps.context.extensionPath, 'dist', 'configWorker.js'));
  // Per workspace where there is one: another window's check in progress is not this window's crash.
  const storage = (deps.context.storageUri ?? deps.context.globalStorageUri).fsPath;
  const diagnostics = new ConfigDiagnostics(deps.log, background, join(storage, 'config-check-in-progress'));
  const lens = new ConfigCodeLens(diagnostics, history);
  const estimates = new EstimateView(diagnostics);
  return vscode.Disposable.from(
    diagnostics,
    background,
    lens,
    estimates,
    vscode.workspace.registerTextDocumentContentProvider(ESTIMATE_SCHEME, estimates),
    vscode.languages.registerCodeActionsProvider(SELECTOR, new ConfigCodeActions(diagnostics), { providedCodeActionKinds: ConfigCodeActions.kinds }),
    vscode.languages.registerHoverProvider(SELECTOR, new ConfigHover(diagnostics, history)),
    vscode.languages.registerCodeLensProvider(SELECTOR, lens),
    registerValidateCommand(diagnostics, deps.log),
    registerCommand(deps.log, SHOW_ESTIMATE_COMMAND, async (uri?: vscode.Uri) => {
      const doc = uri ? await vscode.workspace.openTextDocument(uri) : vscode.window.activeTextEditor?.document;
      const e = doc ? diagnostics.resultFor(doc)?.estimate : undefined;
      if (!e || !doc) return undefined;
      await estimates.show(doc.uri);
      return e.estimate.totalGib;
    }),
  );
}
