// "Fine-Tune: Validate Training Config": checks the active config, or every config in the workspace
// when none is active, fills the Problems panel and says how many problems it found.
import { registerCommand } from '../commands';
import * as vscode from 'vscode';
import { setStatusBarMessage, withProgress } from '../linkSafeUi';
import { validateBytes } from '../../core/config/validate';
import { mayBeConfig, nameSuggestsConfig, syntaxOf } from '../../core/config/kinds';
import { readPrefix } from '../../core/config/boundedRead';
import { MAX_CHECKED_BYTES } from '../../core/config/text';
import type { ConfigDiagnostics } from './configDiagnostics';
import { isConfigCandidate } from './configDiagnostics';
import { editorFiles } from './configFiles';

export const VALIDATE_COMMAND = 'remoteFinetune.validateConfig';

export interface ValidateSummary {
  readonly files: number;
  readonly errors: number;
  readonly warnings: number;
  /** Workspace files that may be configs but were not checked: over the size limit, or not regular files. */
  readonly skipped: readonly string[];
}

/** Enough of a file to tell a config from a dataset by its first keys, without reading a large file in full. */
const PREFIX_BYTES = 64 * 1024;

export async function validateWorkspace(diagnostics: ConfigDiagnostics, token?: vscode.CancellationToken): Promise<ValidateSummary> {
  const active = vscode.window.activeTextEditor?.document;
  let files = 0;
  let errors = 0;
  let warnings = 0;
  const skipped: string[] = [];
  const count = (ds: readonly { severity: string }[]): void => {
    for (const d of ds) {
      if (d.severity === 'error') errors++;
      else if (d.severity === 'warning') warnings++;
    }
  };
  if (active && isConfigCandidate(active)) {
    const r = diagnostics.validateNow(active);
    if (r?.kind) {
      files = 1;
      count(r.diagnostics);
    }
    return { files, errors, warnings, skipped };
  }
  const uris = await vscode.workspace.findFiles('**/{*.yaml,*.yml,*.json,.env,.env.*,*.env}', '**/{node_modules,.git,.venv,venv,dist,out}/**', 2000, token);
  for (const uri of uris) {
    if (token?.isCancellationRequested) break;
    if (syntaxOf(uri.fsPath) === 'other') continue;
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    if (open) {
      const r = diagnostics.validateNow(open);
      if (r?.kind) {
        files++;
        count(r.diagnostics);
      }
      continue;
    }
    const bytes = await workspaceConfigBytes(uri, skipped);
    if (!bytes) continue;
    const r = validateBytes(bytes, { fileName: uri.fsPath, files: editorFiles(uri.fsPath) });
    if (!r.kind && r.diagnostics.length === 0) continue;
    files++;
    count(r.diagnostics);
    diagnostics.setForFile(uri, r.text ?? '', r);
  }
  return { files, errors, warnings, skipped };
}

/**
 * The bytes to check, or undefined for a file that is no config: decided on its first 64 KB, so a dataset of
 * gigabytes is never read in full (nor a sparse file, a FIFO or a device read at all). A possible config over
 * the size limit is named in `skipped`.
 */
async function workspaceConfigBytes(uri: vscode.Uri, skipped: string[]): Promise<Uint8Array | undefined> {
  const head = await readPrefix(uri.fsPath, PREFIX_BYTES);
  if ('refused' in head) {
    if (nameSuggestsConfig(uri.fsPath)) skipped.push(`${vscode.workspace.asRelativePath(uri)} (${head.refused})`);
    return undefined;
  }
  // Binary: a whole small file still goes to the check (which says so when the name promises a config).
  if (head.bytes.subarray(0, 8192).includes(0)) return head.complete ? head.bytes : undefined;
  if (!mayBeConfig(uri.fsPath, new TextDecoder().decode(head.bytes))) return undefined;
  if (head.complete) return head.bytes;
  if (head.size > MAX_CHECKED_BYTES) {
    skipped.push(`${vscode.workspace.asRelativePath(uri)} (${(head.size / 1048576).toFixed(1)} MB, over the ${MAX_CHECKED_BYTES / 1048576} MB limit)`);
    return undefined;
  }
  const whole = await readPrefix(uri.fsPath, MAX_CHECKED_BYTES);
  return 'refused' in whole || !whole.complete ? undefined : whole.bytes;
}

export function registerValidateCommand(diagnostics: ConfigDiagnostics, log: Pick<vscode.LogOutputChannel, 'error' | 'warn'>): vscode.Disposable {
  return registerCommand(log, VALIDATE_COMMAND, async (): Promise<ValidateSummary> => {
    const s = await withProgress({ location: vscode.ProgressLocation.Window, title: 'Validating training configs', cancellable: false }, (_p, token) =>
      validateWorkspace(diagnostics, token),
    );
    const found =
      s.files === 0
        ? 'No training configs found.'
        : `${s.files} config file${s.files === 1 ? '' : 's'}: ${s.errors} error${s.errors === 1 ? '' : 's'}, ${s.warnings} warning${s.warnings === 1 ? '' : 's'}.`;
    const text = s.skipped.length === 0 ? found : `${found} ${s.skipped.length} not checked (see the output log).`;
    for (const f of s.skipped) log.warn(`validate: not checked: ${f}`);
    if (s.errors + s.warnings > 0) void vscode.commands.executeCommand('workbench.actions.view.problems');
    void setStatusBarMessage(`Fine-Tune: ${text}`, 8000);
    return s;
  });
}
