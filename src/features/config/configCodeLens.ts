// The VRAM estimate as a CodeLens on the run spec's target.gpu: "≈ 14.1 GB of 40 GB on A100-40GB".
import * as vscode from 'vscode';
import { estimateLabel } from '../../core/config/runSpecEstimate';
import type { ConfigDiagnostics } from './configDiagnostics';

export const SHOW_ESTIMATE_COMMAND = 'remoteFinetune.showMemoryEstimate';

export class ConfigCodeLens implements vscode.CodeLensProvider {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.changed.event;
  private readonly sub: vscode.Disposable;

  constructor(private readonly diagnostics: ConfigDiagnostics) {
    this.sub = diagnostics.onDidValidate(() => this.changed.fire());
  }

  provideCodeLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
    const r = this.diagnostics.resultFor(doc);
    const e = r?.kind === 'runspec' ? r.estimate : undefined;
    const at = e?.gpuNode;
    if (!e || !at) return [];
    const range = new vscode.Range(doc.positionAt(at.start), doc.positionAt(at.end));
    const tooltip = e.estimate.parts.map((p) => `${p.name}: ${p.gib.toFixed(2)} GB — ${p.source}`).join('\n');
    return [new vscode.CodeLens(range, { title: estimateLabel(e), tooltip, command: SHOW_ESTIMATE_COMMAND, arguments: [doc.uri] })];
  }

  dispose(): void {
    this.sub.dispose();
    this.changed.dispose();
  }
}
