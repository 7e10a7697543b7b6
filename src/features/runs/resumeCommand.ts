// "Resume" on a stopped, failed or interrupted run (core/runs/lifecycle/runResume.ts), and the question "Run Again" asks
// when the run left a checkpoint it can go on from: resume from checkpoint-N, or start fresh.
import * as vscode from 'vscode';
import { showQuickPick, withProgress } from '../linkSafeUi';
import { showErrorMessage, showInformationMessage } from '../notify';
import type { RunServices } from './runServices';
import type { RunRecord } from '../../core/runs/store/runRecord';
import { newestCheckpoint, resumeCheck, runAgainChoices } from '../../core/runs/lifecycle/runResume';
import type { RunAgainChoice } from '../../core/runs/lifecycle/runResume';
import { loadLocalSpec } from '../../core/runs/lifecycle/runStart';

function checkOf(runs: RunServices, r: RunRecord): ReturnType<typeof resumeCheck> {
  const localDir = r.localDir ?? runs.manager.localDirOf(r.id);
  return resumeCheck(r, newestCheckpoint(localDir), loadLocalSpec(localDir) !== undefined);
}

/** Resumes the run with a progress notification; says why not when it cannot. */
export async function resumeWithProgress(runs: RunServices, r: RunRecord): Promise<void> {
  if (!vscode.workspace.isTrusted) {
    void showErrorMessage('Trust this workspace to resume runs.');
    return;
  }
  const check = checkOf(runs, r);
  if (!check.ok) {
    void showErrorMessage(`${r.name} cannot resume: ${check.why}.`);
    return;
  }
  const step = check.checkpoint.step;
  await withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Resuming ${r.name} from checkpoint-${step}`, cancellable: true },
    async (progress, token) => {
      const abort = new AbortController();
      token.onCancellationRequested(() => abort.abort());
      try {
        await runs.manager.resume(r.id, { signal: abort.signal, progress: (_s, message) => progress.report({ message }) });
        runs.panels.select(r.id);
        void showInformationMessage(`${r.name} resumed on ${r.host ?? 'its host'}: it goes on at step ${step + 1}.`);
      } catch (err) {
        void showErrorMessage(`Could not resume ${r.name}: ${(err as Error).message}`);
      }
    },
  );
}

/**
 * For Run Again: 'resume' or 'fresh' when the run can go on from a checkpoint (the person picks), 'fresh' when it
 * cannot, undefined when the pick was dismissed.
 */
export async function askResumeOrFresh(runs: RunServices, r: RunRecord): Promise<RunAgainChoice | undefined> {
  const check = checkOf(runs, r);
  if (!check.ok) return 'fresh';
  const pick = await showQuickPick(
    runAgainChoices(check.checkpoint).map((c) => ({ label: c.label, detail: c.detail, choice: c.choice })),
    { title: `Run ${r.name} again: it left checkpoint-${check.checkpoint.step}` },
  );
  return pick?.choice;
}
