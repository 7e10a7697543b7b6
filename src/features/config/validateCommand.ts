// "Fine-Tune: Validate Training Config": checks the active config, or every config in the workspace
// when none is active, fills the Problems panel and says how many problems it found.
import { registerCommand } from '../commands';
import * as vscode from 'vscode';
import { validateBytes } from '../../core/config/validate';
import { syntaxOf } from '../../core/config/kinds';
import type { ConfigDiagnostics } from './configDiagnostics';
import { isConfigCandidate } from './configDiagnostics';
import { editorFiles } from './configFiles';

export const VALIDATE_COMMAND = 'remoteFinetune.validateConfig';

export interface ValidateSummary {
  readonly files: number;
  readonly errors: number;
  readonly warnings: number;
}

export async function validateWorkspace(diagnostics: ConfigDiagnostics, token?: vscode.CancellationToken): Promise<ValidateSummary> {
  const active = vscode.window.activeTextEditor?.document;
  let files = 0;
  let errors = 0;
  let warnings = 0;
  const count = (ds: readonly { severity: string }[]): void => {
    for (const d of ds) {
      if (d.severity === 'error') errors++;
      else if (d.severity === 'warning') warnings++;
    }
  };
  if (active && isConfigCandidate(active)) {
    const r = diagnostics.validate(active);
    if (r?.kind) {
      files = 1;
      count(r.diagnostics);
    }
    return { files, errors, warnings };
  }
  const uris = await vscode.workspace.findFiles('**/{*.yaml,*.yml,*.json,.env,.env.*,*.env}', '**/{node_modules,.git,.venv,venv,dist,out}/**', 2000, token);
  for (const uri of uris) {
    if (token?.isCancellationRequested) break;
    if (syntaxOf(uri.fsPath) === 'other') continue;
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    if (open) {
      const r = diagnostics.validate(open);
      if (r?.kind) {
        files++;
        count(r.diagnostics);
      }
      continue;
    }
    const bytes = await vscode.workspace.fs.readFile(uri);
    const r = validateBytes(bytes, { fileName: uri.fsPath, files: editorFiles() });
    if (!r.kind && r.diagnostics.length === 0) continue;
    files++;
    count(r.diagnostics);
    diagnostics.setForFile(uri, r.text ?? '', r);
  }
  return { files, errors, warnings };
}

export function registerValidateCommand(diagnostics: ConfigDiagnostics, log: Pick<vscode.LogOutputChannel, 'error'>): vscode.Disposable {
  return registerCommand(log, VALIDATE_COMMAND, async (): Promise<ValidateSummary> => {
    const s = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: 'Validating training configs', cancellable: false },
      (_p, token) => validateWorkspace(diagnostics, token),
    );
    const text =
      s.files === 0
        ? 'No training configs found.'
        : `${s.files} config file${s.files === 1 ? '' : 's'}: ${s.errors} error${s.errors === 1 ? '' : 's'}, ${s.warnings} warning${s.warnings === 1 ? '' : 's'}.`;
    if (s.errors + s.warnings > 0) void vscode.commands.executeCommand('workbench.actions.view.problems');
    void vscode.window.setStatusBarMessage(`Fine-Tune: ${text}`, 8000);
    return s;
  });
}
