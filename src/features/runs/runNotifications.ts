// One notification when a run ends: what happened, the recognised failure with its fix, and for an
// out-of-memory failure the fit estimator's cheapest changes. Its buttons go where a person goes next:
// the downloaded adapter, the metrics, the logs. The extension log records the end as well, since a
// notification is gone once dismissed.
import * as vscode from 'vscode';
import { showErrorMessage, showInformationMessage, showWarningMessage } from '../notify';
import type { RunServices } from './runServices';
import { endLogLine, finishedMessage, stalledMessage } from '../../core/runs/view/runSummary';
import type { RunRecord } from '../../core/runs/store/runRecord';
import { oomAdvice } from '../../core/runs/lifecycle/runPlan';
import { editorFiles } from '../config/configFiles';
import { RUN_COMMANDS } from './runActions';
import { revealAdapter } from './revealAdapter';
import { failureSource, openAtLine } from './failureSource';
import { usedGpu } from '../../core/runs/view/runHardware';

export const END_ACTIONS = { revealAdapter: 'Reveal Adapter', openMetrics: 'Open Metrics', showLogs: 'Show Logs' } as const;

/** What the notification showed, for the host tests (a toast cannot be read back from VS Code). */
export interface RunEndNotice {
  readonly runId: string;
  readonly text: string;
  readonly error: boolean;
  readonly buttons: readonly string[];
}

export function endButtons(r: RunRecord): string[] {
  return [...(r.artifactsDir ? [END_ACTIONS.revealAdapter] : []), END_ACTIONS.openMetrics, END_ACTIONS.showLogs];
}

/** A notification whose one button opens the run's logs. */
function offerLogs(show: typeof showInformationMessage, text: string, runId: string, log: Pick<vscode.LogOutputChannel, 'warn'>): void {
  void show(text, END_ACTIONS.showLogs)
    .then(async (choice) => {
      if (choice === END_ACTIONS.showLogs) await vscode.commands.executeCommand(RUN_COMMANDS.showLogs, runId);
    })
    .then(undefined, (err: unknown) => log.warn(`[${runId}] ${String((err as Error)?.message ?? err)}`));
}

export function registerRunNotifications(
  runs: Pick<RunServices, 'manager'>,
  log: Pick<vscode.LogOutputChannel, 'info' | 'warn'>,
): vscode.Disposable & { last(): RunEndNotice | undefined } {
  let last: RunEndNotice | undefined;
  const sub = runs.manager.onFinished((f) => {
    const r = f.record;
    (f.record.status === 'completed' || f.record.status === 'stopped' ? log.info : log.warn).call(log, endLogLine(f));
    // The fit's advice is for the GPU the run had, not the one its spec asked for.
    const gpu = usedGpu(r)?.info?.id ?? r.gpu;
    const advice = f.failure?.signature === 'cuda-oom' ? oomAdvice(r.specPath, gpu, editorFiles(r.specPath)) : undefined;
    const msg = finishedMessage(f, advice);
    // Where the exception was raised, when that is a file of the workspace: opened at its line.
    const source = failureSource(r);
    const buttons = [...(source ? [source.label] : []), ...endButtons(r)];
    last = { runId: r.id, text: msg.text, error: msg.error, buttons };
    void (msg.error ? showErrorMessage : showInformationMessage)(msg.text, ...buttons)
      .then(async (choice) => {
        if (source && choice === source.label) await openAtLine(source.path, source.line);
        else if (choice === END_ACTIONS.revealAdapter && r.artifactsDir) await revealAdapter(r.artifactsDir);
        else if (choice === END_ACTIONS.openMetrics) await vscode.commands.executeCommand(RUN_COMMANDS.showMetrics, r.id);
        else if (choice === END_ACTIONS.showLogs) await vscode.commands.executeCommand(RUN_COMMANDS.showLogs, r.id);
      })
      .then(undefined, (err: unknown) => log.warn(`[${r.id}] ${String((err as Error)?.message ?? err)}`));
  });
  // The host saw no training step for its stall limit (the host notification went out too): said once per event.
  const stalls = runs.manager.onEvents((runId, events) => {
    const r = runs.manager.store.get(runId);
    for (const e of events) {
      if (e.type !== 'stalled' || !r) continue;
      const text = stalledMessage(r, e);
      log.warn(`[${runId}] ${text}`);
      last = { runId, text, error: true, buttons: [END_ACTIONS.showLogs] };
      offerLogs(showWarningMessage, text, runId, log);
    }
  });
  // A spot run moved to a replacement instance: said once, at activation too (the reclaim happened while closed).
  const relaunched = runs.manager.onRelaunched((r) => {
    log.info(`[${r.record.id}] ${r.message}`);
    last = { runId: r.record.id, text: r.message, error: false, buttons: [END_ACTIONS.showLogs] };
    offerLogs(showInformationMessage, r.message, r.record.id, log);
  });
  return Object.assign(
    new vscode.Disposable(() => {
      sub.dispose();
      stalls.dispose();
      relaunched.dispose();
    }),
    { last: () => last },
  );
}
