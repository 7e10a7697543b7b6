// The VRAM breakdown as a read-only markdown document beside the run spec (a virtual document: nothing
// to save, and it is rebuilt from the latest validation each time it opens).
import * as vscode from 'vscode';
import { breakdownMarkdown } from '../../core/config/estimateBreakdown';
import type { ConfigDiagnostics } from './configDiagnostics';

export const ESTIMATE_SCHEME = 'remote-finetune-estimate';

export class EstimateView implements vscode.TextDocumentContentProvider {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  constructor(private readonly diagnostics: ConfigDiagnostics) {}

  /** estimate:/<path of the spec>.md?<uri of the spec> */
  static uriFor(spec: vscode.Uri): vscode.Uri {
    return vscode.Uri.from({ scheme: ESTIMATE_SCHEME, path: `${spec.path}.memory.md`, query: spec.toString() });
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const spec = vscode.Uri.parse(uri.query);
    const doc = await vscode.workspace.openTextDocument(spec);
    const e = this.diagnostics.resultFor(doc)?.estimate;
    const name = spec.path.split('/').pop() ?? 'run spec';
    return e
      ? breakdownMarkdown(e, name)
      : `# GPU memory estimate: ${name}\n\nNo estimate: the spec names no known target.gpu, or the model size is unknown.\n`;
  }

  /** Opens (or refreshes) the breakdown of `spec` beside it; returns the document shown. */
  async show(spec: vscode.Uri): Promise<vscode.TextDocument> {
    const uri = EstimateView.uriFor(spec);
    this.changed.fire(uri);
    let doc = await vscode.workspace.openTextDocument(uri);
    if (doc.languageId !== 'markdown') doc = await vscode.languages.setTextDocumentLanguage(doc, 'markdown');
    await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preview: true, preserveFocus: true });
    return doc;
  }

  dispose(): void {
    this.changed.dispose();
  }
}
