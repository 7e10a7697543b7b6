// Opening the workspace file a run's traceback names, at its line: the failure notification's button and the log
// panel's links. The path is host text, so it is opened only when it resolves to a file inside the local
// workspace folder (failureReason.ts localSourceFile: no '..', no symlink out).
import * as vscode from 'vscode';
import { linkSafe } from '../../core/text/linkSafe';
import { localSourceFile } from '../../core/runs/view/failureReason';
import type { RunRecord } from '../../core/runs/store/runRecord';

export interface FailureSource {
  /** The button's label: "Open train.py:42". */
  readonly label: string;
  readonly path: string;
  readonly line: number;
}

/** The local file and line of a failed run's exception, when its traceback points into the workspace. */
export function failureSource(r: Pick<RunRecord, 'failure' | 'workspaceDir'>): FailureSource | undefined {
  const at = r.failure?.at;
  if (!at || !r.workspaceDir) return undefined;
  const path = localSourceFile(r.workspaceDir, at.file);
  return path ? { label: linkSafe(`Open ${at.file}:${at.line}`), path, line: at.line } : undefined;
}

/** Opens a file with the cursor on a 1-based line. */
export async function openAtLine(path: string, line: number): Promise<void> {
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(path));
  const pos = new vscode.Position(Math.max(0, Math.min(line - 1, doc.lineCount - 1)), 0);
  await vscode.window.showTextDocument(doc, { preview: false, selection: new vscode.Range(pos, pos) });
}
