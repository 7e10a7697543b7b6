// "Fine-Tune: Merge Adapter" and "Fine-Tune: Push to Hugging Face Hub" on a finished run (Runs view menu or
// palette). Both run on the run's host (core/runs/outputs/adapterMerge.ts, hubPublish.ts); this file asks the
// questions (dtype, what, repo name, private or public) and shows the host's progress.
import * as vscode from 'vscode';
import { showQuickPick, withProgress } from '../linkSafeUi';
import { registerCommand } from '../commands';
import { showErrorMessage, showInformationMessage } from '../notify';
import type { FeatureDeps } from '../deps';
import type { RunServices } from './runServices';
import type { RunsNode } from './runsView';
import type { RunRecord } from '../../core/runs/store/runRecord';
import { isTerminal } from '../../core/runs/store/runRecord';
import type { OnRunHost, OpLine } from '../../core/runs/hosts/hostOps';
import { mergeAdapter, mergePlanFor, startedSpecModel } from '../../core/runs/outputs/adapterMerge';
import type { MergeDtype } from '../../core/runs/outputs/adapterMerge';
import { defaultRepoName, HF_HUB_ORIGIN, publishToHub, repoNameProblem } from '../../core/runs/outputs/hubPublish';
import type { PublishWhat } from '../../core/runs/outputs/hubPublish';
import { RUN_COMMANDS } from './runActions';
import { SECRET_NAMES } from './runSecrets';
import { readRunEvents } from '../../core/runs/store/runFolder';

export const HUB_COMMANDS = {
  merge: 'remoteFinetune.mergeAdapter',
  push: 'remoteFinetune.pushToHub',
} as const;

/** A run whose host still has its outputs: it ran there and has ended. */
function onHostAndDone(r: RunRecord): boolean {
  return !!r.remoteDir && isTerminal(r.status) && r.finishedAction !== 'terminated';
}

async function pickRun(runs: RunServices, arg: unknown): Promise<RunRecord | undefined> {
  if (typeof arg === 'string') return runs.store.get(arg);
  if (typeof arg === 'object' && arg !== null && (arg as RunsNode).kind === 'run') return runs.store.get((arg as { record: RunRecord }).record.id);
  const candidates = runs.store.all().filter(onHostAndDone);
  if (candidates.length === 0) {
    void showInformationMessage('No finished run whose host still has its outputs.');
    return undefined;
  }
  const pick = await showQuickPick(
    candidates.map((r) => ({ label: r.name, description: `${r.status} · ${r.host ?? r.provider}`, detail: r.id, r })),
    { title: 'Which run?' },
  );
  return pick?.r;
}

/** The base model's id from the run's mirrored "started" event (the record keeps no spec), for the size in the merge plan. */
function startedModel(r: RunRecord): string | undefined {
  // No mirror yet, or no started line: the plan then goes by the GPU alone.
  for (const { event: e } of readRunEvents(r.localDir).events) if (e.type === 'started') return e.model;
  return undefined;
}

/** Runs a host operation under a cancellable notification that shows each progress line. */
function withHostProgress<T>(title: string, run: (onLine: (l: OpLine) => void, signal: AbortSignal) => Promise<T>): Thenable<T> {
  return withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: true }, async (progress, token) => {
    const abort = new AbortController();
    token.onCancellationRequested(() => abort.abort());
    let last = 0;
    return run((l) => {
      const total = typeof l.total_bytes === 'number' && l.total_bytes > 0 ? l.total_bytes : undefined;
      const pct = total && typeof l.bytes === 'number' ? Math.min(100, (l.bytes / total) * 100) : undefined;
      progress.report({ ...(l.message ? { message: l.message } : {}), ...(pct !== undefined && pct > last ? { increment: pct - last } : {}) });
      if (pct !== undefined && pct > last) last = pct;
    }, abort.signal);
  });
}

export function registerHubActions(deps: FeatureDeps, runs: RunServices): vscode.Disposable {
  const onRunHost: OnRunHost = (id, fn, signal) => runs.manager.onRunHost(id, fn, signal);
  const secrets = deps.context.secrets;
  const hfToken = (): Thenable<string | undefined> => secrets.get(SECRET_NAMES.HF_TOKEN!);

  return vscode.Disposable.from(
    registerCommand(deps.log, HUB_COMMANDS.merge, async (arg: unknown) => {
      const r = await pickRun(runs, arg);
      if (!r) return;
      if (!onHostAndDone(r)) {
        void showErrorMessage(`${r.name} has not finished on a host that still has its outputs.`);
        return;
      }
      const plan = mergePlanFor(r, startedModel(r));
      const dtypes: MergeDtype[] = ['bf16', 'fp16', 'fp32'];
      const pick = await showQuickPick(
        [plan.dtype, ...dtypes.filter((d) => d !== plan.dtype)].map((d) => ({
          label: d,
          description: d === plan.dtype ? `recommended: ${plan.reason}` : d === 'fp32' ? 'on the CPU; twice the size of 16-bit weights' : '',
          d,
        })),
        { title: `Merge the adapter of ${r.name} into its base model`, placeHolder: 'Precision of the merged weights' },
      );
      if (!pick) return;
      const device = pick.d === plan.dtype ? plan.device : pick.d === 'fp32' ? 'cpu' : 'auto';
      const token = await hfToken();
      // The spec as the run was sent decides whether the base model is on the Hub (the host's word does not).
      const baseModel = startedSpecModel(r.localDir);
      try {
        const res = await withHostProgress(`Merging the adapter of ${r.name}`, (onProgress, signal) =>
          mergeAdapter(onRunHost, r.id, { dtype: pick.d, device, ...(token ? { hfToken: token, baseModel } : {}), onProgress, signal }),
        );
        deps.log.info(`[${r.id}] merged adapter into ${res.path} on ${r.host ?? 'the host'} (${res.dtype}, ${((res.bytes ?? 0) / 1e6).toFixed(1)} MB)`);
        const next = await showInformationMessage(
          `Merged model saved on ${r.host ?? 'the host'} in ${res.path} (${res.dtype}, ${((res.bytes ?? 0) / 1e9).toFixed(2)} GB).`,
          'Push to Hub…',
          'Download…',
        );
        if (next === 'Push to Hub…') await vscode.commands.executeCommand(HUB_COMMANDS.push, r.id, 'merged');
        if (next === 'Download…') await vscode.commands.executeCommand(RUN_COMMANDS.download, r.id);
      } catch (err) {
        deps.log.warn(`[${r.id}] merge failed: ${(err as Error).message}`);
        void showErrorMessage(`Merge failed: ${(err as Error).message}`);
      }
    }),

    registerCommand(deps.log, HUB_COMMANDS.push, async (arg: unknown, whatArg?: unknown) => {
      const r = await pickRun(runs, arg);
      if (!r) return;
      if (!onHostAndDone(r)) {
        void showErrorMessage(`${r.name} has not finished on a host that still has its outputs.`);
        return;
      }
      const what: PublishWhat | undefined =
        whatArg === 'adapter' || whatArg === 'merged'
          ? whatArg
          : (
              await showQuickPick(
                [
                  { label: 'Adapter', description: 'the LoRA adapter alone (small; needs the base model to use)', w: 'adapter' as const },
                  { label: 'Merged model', description: 'the base model with the adapter merged in (run "Merge Adapter" first)', w: 'merged' as const },
                ],
                { title: `Push ${r.name} to the Hugging Face Hub` },
              )
            )?.w;
      if (!what) return;
      let token = await hfToken();
      if (!token) {
        await vscode.commands.executeCommand(RUN_COMMANDS.setHfToken);
        token = await hfToken();
        if (!token) return;
      }
      const repo = await vscode.window.showInputBox({
        title: 'Hugging Face repo',
        prompt: 'name (in your namespace) or namespace/name',
        value: defaultRepoName(r, what),
        validateInput: (v) => repoNameProblem(v) ?? null,
        ignoreFocusOut: true,
      });
      if (!repo) return;
      const visibility = await showQuickPick(
        [
          { label: 'Private', description: 'only you (and your organization) can see it', priv: true },
          { label: 'Public', description: 'anyone can download these weights', priv: false },
        ],
        { title: `Visibility of ${repo.trim()}` },
      );
      if (!visibility) return;
      try {
        const res = await withHostProgress(
          `Pushing ${what === 'adapter' ? 'the adapter' : 'the merged model'} of ${r.name} to ${repo.trim()}`,
          (onProgress, signal) => publishToHub(onRunHost, r, { what, repo: repo.trim(), private: visibility.priv, token: token!, onProgress, signal }),
        );
        deps.log.info(`[${r.id}] pushed ${what} to ${res.repo} (${res.private ? 'private' : 'public'}, ${res.files.length} files)`);
        const open = await showInformationMessage(`Pushed to ${res.repo} (${res.private ? 'private' : 'public'}).`, 'Open on the Hub');
        // Only a page of the Hub itself: publishToHub builds it from the repo name, and nothing else is opened.
        if (open && res.url.startsWith(`${HF_HUB_ORIGIN}/`)) await vscode.env.openExternal(vscode.Uri.parse(res.url));
      } catch (err) {
        deps.log.warn(`[${r.id}] push to the Hub failed: ${(err as Error).message}`);
        void showErrorMessage(`Push failed: ${(err as Error).message}`);
      }
    }),
  );
}
