// "Fine-Tune: Start Training on A100" and "Fine-Tune: Start Training…" as a command object: the decisions are
// core's (startSteps.ts: what to ask, what to refuse, the StartRequest); this class only asks — pickers,
// confirmations, the cancellable progress — and feeds each answer back. Cancel tears a provisioned instance
// down (core/runs/lifecycle/teardown does it).
import * as vscode from 'vscode';
import { join } from 'node:path';
import { registerCommand } from '../commands';
import { setting, setUserSetting } from '../settings';
import { withProgress } from '../linkSafeUi';
import { showErrorMessage, showInformationMessage, showWarningMessage } from '../notify';
import type { FeatureDeps } from '../deps';
import type { RunServices } from './runServices';
import { gatherSecrets } from './runSecrets';
import type { TargetChoice, TargetSources } from './targets';
import { pickGpu, pickSpec, pickTarget } from './startPickers';
import { runningNoticeLifetime } from './runningNotice';
import { hostGpuWarning } from '../../core/hosts/gpuCheck';
import { validateSettingValue } from '../../core/runs/hosts/targetFixes';
import type { TargetFix } from '../../core/runs/hosts/targetFixes';
import { probedHardwareLine } from '../../core/runs/view/hardwareLine';
import { hardwareFromProbe } from '../../core/runs/view/runHardware';
import type { RunHardware } from '../../core/runs/view/runHardware';
import { ADD_HOST_COMMAND } from '../hosts/addHostCommand';
import { confirmAndCheckHosts } from '../../core/runs/hosts/hostContactOrder';
import { confirmRunEnv } from '../../core/runs/lifecycle/startGate';
import { startConfirmation } from '../../core/runs/lifecycle/startConfirmation';
import type { RunEnv } from '../../core/runs/lifecycle/runEnv';
import { nextStartStep } from '../../core/runs/lifecycle/startSteps';
import type { StartAgain, StartAnswers, StartContext, StartGatePassed, StartReady, StartStep } from '../../core/runs/lifecycle/startSteps';
import type { RunPlan } from '../../core/runs/lifecycle/runPlan';
import type { StartRequest } from '../../core/runs/lifecycle/runTypes';
import { editorFiles } from '../config/configFiles';
import { GPU_IDS } from '../../core/gpu/catalog';
import { ensureCloudKey } from '../../core/runs/hosts/cloudKey';
import { PANEL_COMMANDS } from '../panels/registerPanels';

export type { StartAgain };
export const START_A100_COMMAND = 'remoteFinetune.startTrainingA100';
export const START_COMMAND = 'remoteFinetune.startTraining';

async function applyFix(fix: TargetFix): Promise<void> {
  if (fix.kind === 'terminal') {
    const t = vscode.window.createTerminal({ name: fix.name });
    t.show();
    t.sendText(fix.command);
    return;
  }
  if (fix.kind === 'command') {
    await vscode.commands.executeCommand(fix.command);
    return;
  }
  if (fix.kind === 'openSettings') {
    await vscode.commands.executeCommand('workbench.action.openSettings', fix.query);
    return;
  }
  const value = await vscode.window.showInputBox({
    title: fix.prompt,
    prompt: `Saved as ${fix.setting} in your user settings`,
    placeHolder: fix.placeHolder,
    ignoreFocusOut: true,
    validateInput: (v) => validateSettingValue(fix.setting, v),
  });
  if (value === undefined) return;
  await setUserSetting(fix.setting, value.trim());
}

/**
 * The target picker without dead ends: "Add SSH host…" adds one and comes back with it highlighted; a cloud
 * item that lacks its key or region asks for it and comes back with that cloud's offers.
 */
async function chooseTarget(plan: RunPlan, gpus: readonly string[], sources: TargetSources, fitText: string): Promise<TargetChoice | undefined> {
  let activeHost: string | undefined;
  for (;;) {
    const pick = await pickTarget(plan, gpus, sources, fitText, activeHost);
    if (!pick) return undefined;
    if (pick.kind === 'ssh' || pick.kind === 'cloud') return pick;
    if (pick.kind === 'fix') {
      await applyFix(pick.fix);
      continue;
    }
    const before = new Set(
      sources
        .sshHosts()
        .filter((h) => h.sources.includes('saved'))
        .map((h) => h.host),
    );
    await vscode.commands.executeCommand(ADD_HOST_COMMAND);
    activeHost = sources.sshHosts().find((h) => h.sources.includes('saved') && !before.has(h.host))?.host ?? activeHost;
  }
}

function againOf(v: unknown): StartAgain | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const { gpu, host } = v as { gpu?: unknown; host?: unknown };
  return {
    ...(typeof gpu === 'string' && (GPU_IDS as readonly string[]).includes(gpu) ? { gpu } : {}),
    ...(typeof host === 'string' && host.trim() !== '' ? { host: host.trim() } : {}),
  };
}

/**
 * Before starting on an SSH host: its GPUs (cached or probed now) against the run's; false when the person declined.
 * `probed` hears what the host has when it is not what the run asks for, for the confirmation.
 */
async function confirmHostGpu(
  sources: TargetSources,
  host: string,
  gpus: readonly string[],
  probed?: (line: string | undefined, hardware: RunHardware | undefined) => void,
): Promise<boolean> {
  const outcome = await sources.ensureProbe(host);
  if (!outcome) return false;
  probed?.(probedHardwareLine(host, outcome, gpus), hardwareFromProbe(outcome));
  const warn = hostGpuWarning(host, outcome, gpus);
  if (!warn) return true;
  return (await showWarningMessage(warn.message, { modal: true, detail: warn.detail }, 'Start Anyway')) === 'Start Anyway';
}

/** One run of Start Training: asks what core's next step names until it is a start, a refusal or the end. */
export class StartTrainingCommand {
  constructor(
    private readonly deps: FeatureDeps,
    private readonly runs: RunServices,
    private readonly sources: TargetSources,
    private readonly a100: boolean,
  ) {}

  /** Resolves with the new run's id, or undefined when nothing was started. */
  async run(arg?: unknown, again?: StartAgain): Promise<string | undefined> {
    const ctx: StartContext = {
      trusted: vscode.workspace.isTrusted,
      a100: this.a100,
      ...(again ? { again } : {}),
      files: editorFiles,
      pastRuns: () => this.runs.manager.store.all(),
      workspaceRootOf: (p) => vscode.workspace.getWorkspaceFolder(vscode.Uri.file(p))?.uri.fsPath,
      displayPath: (p) => vscode.workspace.asRelativePath(p),
    };
    let answers: StartAnswers = {};
    for (;;) {
      const step = nextStartStep(ctx, answers);
      if (step.kind === 'end') return undefined;
      if (step.kind === 'refuse') return await this.refuse(step);
      if (step.kind === 'start') return await this.start(step.ready, step.request);
      answers = { ...answers, ...(await this.ask(step, arg)) };
    }
  }

  private async ask(step: Exclude<StartStep, { kind: 'end' | 'refuse' | 'start' }>, arg: unknown): Promise<StartAnswers> {
    switch (step.kind) {
      case 'pickSpec':
        return { spec: await this.readSpec(arg) };
      case 'confirmWarnings':
        return { warnings: (await showWarningMessage(step.message, { modal: true, detail: step.detail }, 'Start Anyway')) === 'Start Anyway' };
      case 'pickGpu':
        return { gpu: (await pickGpu(step.current)) ?? null };
      case 'confirmNoFit':
        return { noFit: (await showWarningMessage(step.message, { modal: true, detail: step.fixes }, 'Start Anyway')) === 'Start Anyway' };
      case 'pickTarget':
        return { target: (await chooseTarget(step.plan, step.gpus, this.sources, step.fitText)) ?? null };
      case 'gate':
        return { gate: (await this.gate(step.ready)) ?? null };
      case 'cloudKey':
        return { cloudKey: await ensureCloudKey(join(this.runs.storageDir, 'keys', 'cloud_ed25519')) };
    }
  }

  private async readSpec(arg: unknown): Promise<StartAnswers['spec']> {
    const uri = await pickSpec(arg);
    if (!uri) return null;
    const doc = await vscode.workspace.openTextDocument(uri);
    if (doc.isDirty) await doc.save();
    return { path: uri.fsPath, text: doc.getText() };
  }

  private async refuse(step: Extract<StartStep, { kind: 'refuse' }>): Promise<undefined> {
    if (step.reason !== 'specErrors') {
      void showErrorMessage(step.message);
      return undefined;
    }
    const choice = await showErrorMessage(step.message, { modal: true, detail: step.detail }, 'Show Problems');
    if (choice === 'Show Problems') await vscode.commands.executeCommand('workbench.actions.view.problems');
    return undefined;
  }

  /** The host check and the confirmation, in the order hostContactOrder.ts sets; undefined when either said no. */
  private async gate(ready: StartReady): Promise<StartGatePassed | undefined> {
    const { plan, runSpec, choice, machineHosts, envRead } = ready;
    const sources = this.sources;
    const gpus = ready.gpus;
    let hardwareLine: string | undefined;
    let probedHardware: RunHardware | undefined;
    const confirmStart = async (r: RunEnv): Promise<boolean> => {
      const c = startConfirmation(ready, r, hardwareLine);
      return (await (c.warn ? showWarningMessage : showInformationMessage)(c.title, { modal: true, detail: c.detail }, c.button)) === c.button;
    };
    // A multi-node spec's hosts are reached (the GPU probe) only once the person confirmed the start naming them.
    const prepared = await confirmAndCheckHosts({
      hostsFromSpec: machineHosts !== undefined,
      checkHosts: async () =>
        choice.kind !== 'ssh' ||
        (await confirmHostGpu(sources, choice.host, gpus, (line, hardware) => {
          hardwareLine = line;
          probedHardware = hardware;
        })),
      confirm: async () =>
        await confirmRunEnv(
          {
            ...(envRead ? { envFileText: envRead.text } : {}),
            stored: await gatherSecrets(this.deps.context),
            spec: runSpec,
            mlflowTrackingUri: setting('mlflow.trackingUri') ?? '',
          },
          this.deps.context.globalState,
          confirmStart,
        ),
    });
    if (!prepared) return undefined;
    const { env, dropped } = prepared;
    if (dropped.length > 0) this.deps.log.info(`${plan.name}: not sending ${dropped.join(', ')} (this run does not use ${dropped.length > 1 ? 'them' : 'it'})`);
    return { env, ...(probedHardware ? { hardware: probedHardware } : {}) };
  }

  private async start(ready: StartReady, request: StartRequest): Promise<string | undefined> {
    const { plan, choice, where } = ready;
    const { runs, deps } = this;
    return await withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Fine-Tune: ${plan.name}`, cancellable: true },
      async (progress, token): Promise<string | undefined> => {
        const abort = new AbortController();
        token.onCancellationRequested(() => abort.abort());
        try {
          const rec = await runs.manager.start({ ...request, signal: abort.signal, progress: (_status, message) => progress.report({ message }) });
          runs.panels.select(rec.id);
          void vscode.commands.executeCommand(PANEL_COMMANDS.logs);
          // A notification that goes when the run ends (or soon after the start): its end's notification replaces it.
          void withProgress(
            {
              location: vscode.ProgressLocation.Notification,
              title: `${plan.name} is running on ${rec.host ?? where}. It keeps running if VS Code closes; reopen to reattach.`,
            },
            () => runningNoticeLifetime(runs.manager, rec.id),
          );
          return rec.id;
        } catch (err) {
          const msg = err instanceof Error ? err.message : String(err);
          deps.log.error(`start ${plan.name}: ${msg}`);
          if (abort.signal.aborted) void showWarningMessage(`${plan.name} was cancelled${choice.kind === 'cloud' ? '; its instance was torn down' : ''}.`);
          else void showErrorMessage(`${plan.name} did not start: ${msg}`);
          return undefined;
        }
      },
    );
  }
}

export function registerStartTraining(deps: FeatureDeps, runs: RunServices, sources: TargetSources): vscode.Disposable {
  return vscode.Disposable.from(
    registerCommand(deps.log, START_A100_COMMAND, (arg?: unknown) => new StartTrainingCommand(deps, runs, sources, true).run(arg)),
    // A second argument (Run Again) names the GPU and host to reuse: no pickers for what the last run had.
    registerCommand(deps.log, START_COMMAND, (arg?: unknown, again?: unknown) => new StartTrainingCommand(deps, runs, sources, false).run(arg, againOf(again))),
  );
}
