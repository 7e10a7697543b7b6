// The VRAM estimate, the run's length and its cost as a CodeLens at the top of the run spec and on its target.gpu
// line: "≈ 14.1 GB of 40 GB on A100-40GB · ≈ 2h 10m · ≈ $8.40 on gcp a2-highgpu-1g" (or "own host: no charge,
// ≈ 40 min"). Clicking opens the part-by-part breakdown (estimateView.ts).
import * as vscode from 'vscode';
import { estimateLabel } from '../../core/config/runSpecEstimate';
import { breakdownLines } from '../../core/config/estimateBreakdown';
import type { ConfigDiagnostics } from './configDiagnostics';
import { estimateLensTitle, measuredForSpec } from '../../core/runs/cost/estimateVsActual';
import type { RunRecord } from '../../core/runs/store/runRecord';
import { editorSpecOf, specTimeCostOf } from './specTimeCostOf';

export const SHOW_ESTIMATE_COMMAND = 'remoteFinetune.showMemoryEstimate';

export class ConfigCodeLens implements vscode.CodeLensProvider {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.changed.event;
  private readonly sub: vscode.Disposable;

  constructor(
    private readonly diagnostics: ConfigDiagnostics,
    /** The user's runs: a measured run of the same case speaks before the model (issue 32.4). */
    private readonly history: () => readonly RunRecord[] = () => [],
  ) {
    this.sub = diagnostics.onDidValidate(() => this.changed.fire());
  }

  provideCodeLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
    const r = this.diagnostics.resultFor(doc);
    const e = r?.kind === 'runspec' ? r.estimate : undefined;
    const at = e?.gpuNode;
    if (!e || !at) return [];
    const measured = r ? measuredForSpec(editorSpecOf(r), e.gpu.id, this.history()) : undefined;
    // Memory, then time and money for the spec's own target, as the Start confirmation reckons them.
    const tc = specTimeCostOf(doc, r, this.history());
    const command = {
      title: `${estimateLensTitle(estimateLabel(e), measured)}${tc ? ` · ${tc.lens}` : ''}`,
      tooltip: `${breakdownLines(e).join('\n')}${tc ? `\n\n${tc.detail}` : ''}\n\nClick for the breakdown.`,
      command: SHOW_ESTIMATE_COMMAND,
      arguments: [doc.uri],
    };
    const gpuRange = new vscode.Range(doc.positionAt(at.start), doc.positionAt(at.end));
    const lenses = [new vscode.CodeLens(gpuRange, command)];
    // The top of the file too: the first thing read, and visible without scrolling to target.
    if (gpuRange.start.line !== 0) lenses.unshift(new vscode.CodeLens(new vscode.Range(0, 0, 0, 0), command));
    return lenses;
  }

  dispose(): void {
    this.sub.dispose();
    this.changed.dispose();
  }
}
