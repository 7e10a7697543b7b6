// The VRAM breakdown as a read-only markdown document beside the run spec (a virtual document: nothing to
// save), shown rendered in the Markdown preview. It is rebuilt from the spec's latest check each time the spec is
// checked again, so the preview follows edits.
import * as vscode from 'vscode';
import { breakdownMarkdown } from '../../core/config/estimateBreakdown';
import type { ConfigDiagnostics } from './configDiagnostics';

export const ESTIMATE_SCHEME = 'remote-finetune-estimate';

export class EstimateView implements vscode.TextDocumentContentProvider {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  /** Breakdowns opened in this window, by their estimate URI: only these are rebuilt when their spec is checked. */
  private readonly shown = new Set<string>();
  private readonly sub: vscode.Disposable;

  constructor(private readonly diagnostics: ConfigDiagnostics) {
    this.sub = diagnostics.onDidValidate((spec) => {
      if (spec.scheme === ESTIMATE_SCHEME) return;
      const uri = EstimateView.uriFor(spec);
      if (this.shown.has(uri.toString())) this.changed.fire(uri);
    });
  }

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

  /** Opens (or refreshes) the breakdown of `spec` beside it, rendered; returns the document behind the preview. */
  async show(spec: vscode.Uri): Promise<vscode.TextDocument> {
    const uri = EstimateView.uriFor(spec);
    this.shown.add(uri.toString());
    this.changed.fire(uri);
    let doc = await vscode.workspace.openTextDocument(uri);
    if (doc.languageId !== 'markdown') doc = await vscode.languages.setTextDocumentLanguage(doc, 'markdown');
    try {
      // The built-in Markdown preview renders the table and the escapes that keep workspace text from being markup.
      await vscode.commands.executeCommand('markdown.showPreviewToSide', uri);
    } catch {
      // Without the Markdown extension (disabled by the user) the source is still readable.
      await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preview: true, preserveFocus: true });
    }
    return doc;
  }

  dispose(): void {
    this.sub.dispose();
    this.changed.dispose();
  }
}
