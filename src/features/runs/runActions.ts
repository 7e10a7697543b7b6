// The Runs view's actions and the run commands of the palette. Each takes a run node (from the view's
// menu) or asks for a run.
import { registerCommand } from '../commands';
import * as vscode from 'vscode';
import { showQuickPick, withProgress } from '../linkSafeUi';
import { showErrorMessage, showInformationMessage, showWarningMessage } from '../notify';
import { join } from 'node:path';
import type { FeatureDeps } from '../deps';
import type { RunServices } from './runServices';
import type { RunsNode } from './runsView';
import type { RunRecord } from '../../core/runs/store/runRecord';
import { isTerminal } from '../../core/runs/store/runRecord';
import { machineLocalDir } from '../../core/runs/lifecycle/multiNode';
import { PANEL_COMMANDS } from '../panels/registerPanels';
import { OPEN_RUN_PANELS_COMMAND } from './runStatusBar';
import { START_COMMAND } from './startTraining';
import { SECRET_NAMES } from './runSecrets';
import type { StartAgain } from './startTraining';
import { askResumeOrFresh, resumeWithProgress } from './resumeCommand';
import { mayOfferResume } from '../../core/runs/lifecycle/runResume';
import { runAdapterPath } from '../../core/runs/sync/runOutputs';
import { revealAdapter } from './revealAdapter';
import { TensorboardNotLoggedError, tensorboardUnavailable } from '../../core/runs/outputs/tensorboard';
import { runFile } from '../../core/runs/store/runFolder';

export const RUN_COMMANDS = {
  select: 'remoteFinetune.selectRun',
  showLogs: 'remoteFinetune.run.showLogs',
  showRankLogs: 'remoteFinetune.run.showRankLogs',
  showGpu: 'remoteFinetune.run.showGpu',
  showMetrics: 'remoteFinetune.run.showMetrics',
  stop: 'remoteFinetune.stopRun',
  download: 'remoteFinetune.downloadArtifacts',
  terminate: 'remoteFinetune.terminateRunInstance',
  runAgain: 'remoteFinetune.runAgain',
  resume: 'remoteFinetune.resumeRun',
  findOnHost: 'remoteFinetune.findRunsOnHost',
  setHfToken: 'remoteFinetune.setHfToken',
  openTensorBoard: 'remoteFinetune.run.openTensorBoard',
  revealAdapter: 'remoteFinetune.run.revealAdapter',
} as const;

export async function runOf(
  runs: RunServices,
  arg: unknown,
  filter: (r: RunRecord) => boolean = () => true,
  none = 'No run fits this action.',
): Promise<RunRecord | undefined> {
  if (typeof arg === 'string') return runs.store.get(arg);
  if (typeof arg === 'object' && arg !== null && (arg as RunsNode).kind === 'run') return runs.store.get((arg as { record: RunRecord }).record.id);
  const candidates = runs.store.all().filter(filter);
  if (candidates.length === 0) {
    void showInformationMessage(none);
    return undefined;
  }
  const pick = await showQuickPick(
    candidates.map((r) => ({ label: r.name, description: `${r.status} · ${r.host ?? r.provider}`, detail: r.id, r })),
    { title: 'Which run?' },
  );
  return pick?.r;
}

function showPanel(runs: RunServices, command: string) {
  return async (arg: unknown): Promise<void> => {
    const r = await runOf(runs, arg);
    if (!r) return;
    runs.panels.select(r.id);
    await vscode.commands.executeCommand(command);
  };
}

export function registerRunActions(deps: FeatureDeps, runs: RunServices): vscode.Disposable {
  const { manager } = runs;
  const reg = (id: string, handler: Parameters<typeof registerCommand>[2]): vscode.Disposable => registerCommand(deps.log, id, handler);
  return vscode.Disposable.from(
    reg(RUN_COMMANDS.select, (id: unknown) => {
      if (typeof id === 'string') runs.panels.select(id);
    }),
    reg(OPEN_RUN_PANELS_COMMAND, async () => {
      for (const c of [PANEL_COMMANDS.logs, PANEL_COMMANDS.gpu, PANEL_COMMANDS.metrics]) await vscode.commands.executeCommand(c);
    }),
    reg(RUN_COMMANDS.showLogs, showPanel(runs, PANEL_COMMANDS.logs)),
    reg(RUN_COMMANDS.showRankLogs, async (arg: unknown) => {
      // Rank 0 drives the panels; the other machines' logs are mirrored beside its files, one click away.
      const r = await runOf(
        runs,
        arg,
        (x) => (x.machines?.length ?? 0) > 0,
        'No multi-node run: per-machine logs exist for runs on several machines (target.hosts).',
      );
      if (!r?.machines?.length || !r.localDir) {
        if (r) void showInformationMessage(`${r.name} ran on one machine: its log is in the log panel.`);
        return;
      }
      const pick = await showQuickPick(
        r.machines.map((m) => ({ label: `Machine rank ${m.rank}`, description: `${m.host} · ${m.status ?? 'running'}`, rank: m.rank })),
        { title: `Logs of ${r.name}: which machine? (rank 0 is in the log panel)` },
      );
      if (!pick) return;
      const file = runFile(machineLocalDir(r.localDir, pick.rank), 'log');
      try {
        await vscode.window.showTextDocument(vscode.Uri.file(file), { preview: true });
      } catch (err) {
        void showErrorMessage(`No log of machine rank ${pick.rank} yet: ${(err as Error).message}`);
      }
    }),
    reg(RUN_COMMANDS.showGpu, showPanel(runs, PANEL_COMMANDS.gpu)),
    reg(RUN_COMMANDS.showMetrics, showPanel(runs, PANEL_COMMANDS.metrics)),
    reg(RUN_COMMANDS.openTensorBoard, async (arg: unknown) => {
      const r = await runOf(
        runs,
        arg,
        (x) => tensorboardUnavailable(x) === undefined,
        'No run can open TensorBoard: it needs a run whose folder is still on its host (add tensorboard to trainer.report_to in the run spec to log there).',
      );
      if (!r) return;
      const why = tensorboardUnavailable(r);
      if (why) {
        void showInformationMessage(`TensorBoard: ${why}`);
        return;
      }
      try {
        const url = await withProgress(
          { location: vscode.ProgressLocation.Notification, title: `Starting TensorBoard for ${r.name} on ${r.host ?? 'the host'}…`, cancellable: true },
          async (_p, token) => {
            const abort = new AbortController();
            token.onCancellationRequested(() => abort.abort());
            return await runs.tensorboard.url(r, abort.signal);
          },
        );
        await vscode.commands.executeCommand('simpleBrowser.show', url);
      } catch (err) {
        deps.log.warn(`[${r.id}] TensorBoard: ${(err as Error).message}`);
        if (err instanceof TensorboardNotLoggedError) {
          // Not a failure: the run did not ask for TensorBoard. Say how to, next to the spec that would.
          const open = 'Open Run Spec';
          const pick = await showInformationMessage(`TensorBoard for ${r.name}: ${err.message}`, open);
          if (pick === open) await vscode.window.showTextDocument(vscode.Uri.file(r.specPath));
          return;
        }
        void showErrorMessage(`TensorBoard for ${r.name}: ${(err as Error).message}`);
      }
    }),
    // The end notification's Reveal Adapter, kept in the Runs view once the notification is gone.
    reg(RUN_COMMANDS.revealAdapter, async (arg: unknown) => {
      const r = await runOf(runs, arg, (x) => !!x.artifactsDir, 'No run has a downloaded adapter yet: Download Outputs of a finished run first.');
      if (!r) return;
      if (!r.artifactsDir) {
        void showInformationMessage(`${r.name} has no downloaded adapter yet: use Download Outputs first.`);
        return;
      }
      await revealAdapter(r.artifactsDir);
    }),
    reg(RUN_COMMANDS.stop, async (arg: unknown) => {
      const r = await runOf(runs, arg, (x) => !isTerminal(x.status), 'No run is running: there is nothing to stop.');
      if (!r) return;
      const ok = await showWarningMessage(
        `Stop ${r.name}? It gets SIGTERM (the runner saves a checkpoint), then SIGKILL after 2 minutes.`,
        { modal: true },
        'Stop Run',
      );
      if (ok !== 'Stop Run') return;
      await withProgress({ location: vscode.ProgressLocation.Notification, title: `Stopping ${r.name}…` }, async () => {
        try {
          await manager.stop(r.id);
        } catch (err) {
          void showErrorMessage(`Could not stop ${r.name}: ${(err as Error).message}`);
        }
      });
    }),
    reg(RUN_COMMANDS.download, async (arg: unknown) => {
      const r = await runOf(runs, arg, (x) => !!x.remoteDir, 'No run has a folder on a host to download from.');
      if (!r) return;
      // The run's own folders, not the workspace's shared outputs (another run's adapter or checkpoints).
      const adapter = runAdapterPath(r.outputs?.dir, r.id, runFile(r.localDir ?? runs.manager.localDirOf(r.id), 'events'));
      const checkpoints = `${(r.outputs?.dir ?? 'outputs').replace(/\/+$/, '')}/checkpoints/${r.id}`;
      const what = await showQuickPick(
        [
          { label: 'Adapter', description: adapter, path: adapter },
          { label: 'Checkpoints', description: checkpoints, path: checkpoints },
          { label: 'Run logs and events', description: r.remoteDir, path: r.remoteDir ?? '' },
        ],
        { title: `Download from ${r.name}` },
      );
      if (!what) return;
      const dest = join(r.workspaceDir ?? runs.storageDir, 'outputs', r.id, what.label.toLowerCase().replace(/\W+/g, '-'));
      await withProgress(
        { location: vscode.ProgressLocation.Notification, title: `Downloading ${what.label.toLowerCase()} of ${r.name}`, cancellable: true },
        async (progress, token) => {
          const abort = new AbortController();
          token.onCancellationRequested(() => abort.abort());
          let last = 0;
          try {
            const res = await manager.downloadArtifacts(
              r.id,
              what.path,
              dest,
              (p) => {
                const pct = p.totalBytes ? (p.bytes / p.totalBytes) * 100 : undefined;
                progress.report({ message: `${(p.bytes / 1e6).toFixed(1)} MB`, ...(pct !== undefined ? { increment: pct - last } : {}) });
                if (pct !== undefined) last = pct;
              },
              abort.signal,
            );
            deps.log.info(`[${r.id}] downloaded ${what.label.toLowerCase()} ${what.path} to ${dest} (${(res.bytes / 1e6).toFixed(1)} MB)`);
            const open = await showInformationMessage(`Downloaded ${(res.bytes / 1e6).toFixed(1)} MB to ${vscode.workspace.asRelativePath(dest)}.`, 'Reveal');
            if (open) await vscode.commands.executeCommand('revealInExplorer', vscode.Uri.file(dest));
          } catch (err) {
            deps.log.warn(`[${r.id}] ${what.label.toLowerCase()} download failed: ${(err as Error).message}`);
            void showErrorMessage(`Download failed: ${(err as Error).message}`);
          }
        },
      );
    }),
    reg(RUN_COMMANDS.terminate, async (arg: unknown) => {
      const r = await runOf(runs, arg, (x) => !!x.instanceId && x.finishedAction !== 'terminated', 'No run has a cloud instance left to terminate.');
      if (!r) return;
      const ok = await showWarningMessage(`Terminate ${r.provider} instance ${r.instanceId}? Its disk is deleted.`, { modal: true }, 'Terminate');
      if (ok !== 'Terminate') return;
      try {
        await manager.terminateInstance(r.id);
        void showInformationMessage(`${r.instanceId} terminated.`);
      } catch (err) {
        void showErrorMessage((err as Error).message);
      }
    }),
    reg(RUN_COMMANDS.runAgain, async (arg: unknown) => {
      const r = await runOf(runs, arg, (x) => !!x.specPath);
      if (!r?.specPath) return;
      // A run that can go on from its checkpoint asks first: the same run resumed, or a new one from step 0.
      const choice = await askResumeOrFresh(runs, r);
      if (choice === undefined) return;
      if (choice === 'resume') return resumeWithProgress(runs, r);
      // Again means the same GPU and, for an SSH run, the same host: no pickers, only the confirmation (a cloud
      // run's instance is gone, so its GPU's offers are shown).
      const again: StartAgain = { ...(r.gpu ? { gpu: r.gpu } : {}), ...(r.provider === 'ssh' && r.host ? { host: r.host } : {}) };
      await vscode.commands.executeCommand(START_COMMAND, vscode.Uri.file(r.specPath), again);
    }),
    reg(RUN_COMMANDS.resume, async (arg: unknown) => {
      const r = await runOf(runs, arg, mayOfferResume, 'No run can be resumed: that needs a run that ended early with a checkpoint on its host.');
      if (r) await resumeWithProgress(runs, r);
    }),
    // A host named by the caller (a view action, a test) skips the prompt.
    reg(RUN_COMMANDS.findOnHost, async (arg?: unknown) => {
      if (!vscode.workspace.isTrusted) {
        void showErrorMessage('Trust this workspace to connect to hosts.');
        return;
      }
      const host =
        typeof arg === 'string' && arg.trim()
          ? arg
          : await vscode.window.showInputBox({ title: 'Find runs on a host', prompt: 'ssh_config alias or user@host[:port]', ignoreFocusOut: true });
      if (!host) return;
      try {
        const added = await manager.discover(host.trim());
        void showInformationMessage(added.length > 0 ? `Found ${added.length} run(s) on ${host} started elsewhere.` : `No new runs on ${host}.`);
      } catch (err) {
        void showErrorMessage(`Could not list runs on ${host}: ${(err as Error).message}`);
      }
    }),
    reg(RUN_COMMANDS.setHfToken, async () => {
      const v = await vscode.window.showInputBox({
        title: 'Hugging Face token',
        prompt: "Stored in VS Code's secret storage; reaches hosts only in the run's 0600 env file.",
        password: true,
        ignoreFocusOut: true,
      });
      if (v === undefined) return;
      const name = SECRET_NAMES.HF_TOKEN!;
      if (v.trim() === '') await deps.context.secrets.delete(name);
      else await deps.context.secrets.store(name, v.trim());
      void showInformationMessage(v.trim() === '' ? 'Hugging Face token removed.' : 'Hugging Face token saved.');
    }),
  );
}
