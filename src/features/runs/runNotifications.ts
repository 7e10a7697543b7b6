// One notification when a run ends: what happened, the recognised failure with its fix, and for an
// out-of-memory failure the fit estimator's cheapest changes.
import * as vscode from 'vscode';
import { showErrorMessage, showInformationMessage } from '../notify';
import type { RunServices } from './runServices';
import { finishedMessage } from '../../core/runs/runSummary';
import { oomAdvice } from '../../core/runs/runPlan';
import { nodeFiles } from '../../core/config/nodeFiles';
import { RUN_COMMANDS } from './runActions';

export function registerRunNotifications(runs: RunServices): vscode.Disposable {
  return runs.manager.onFinished((f) => {
    const advice = f.failure?.signature === 'cuda-oom' ? oomAdvice(f.record.specPath, f.record.gpu, nodeFiles) : undefined;
    const msg = finishedMessage(f, advice);
    const text = msg.text;
    const show = msg.error ? showErrorMessage : showInformationMessage;
    void show(text, 'Show Logs').then((c) => { if (c) void vscode.commands.executeCommand(RUN_COMMANDS.showLogs, f.record.id); });
  });
}
