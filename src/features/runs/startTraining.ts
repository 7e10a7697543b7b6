// "Fine-Tune: Start Training on A100" and "Fine-Tune: Start Training…": pick the spec, check it, show the
// fit and the price, pick where, confirm, then provision → sync → secrets → launch with a cancellable
// progress notification. Cancel tears a provisioned instance down (core/runs/teardown does it).
import * as vscode from 'vscode';
import { showErrorMessage, showInformationMessage, showWarningMessage } from '../notify';
import { join, relative } from 'node:path';
import type { FeatureDeps } from '../deps';
import type { RunServices } from './runServices';
import type { TargetChoice, TargetSources } from './targets';
import { gpuMatches } from './targets';
import { offersForTarget } from '../../core/runs/targetOffers';
import type { TargetSpec } from '../../core/providers/targetSpec';
import { runLength } from '../../core/runs/runLength';
import { launchCost } from '../../core/runs/launchCost';
import { countExamples } from '../../core/runs/dataExamples';
import { planRun, fitOn, collectEnv, describeDiagnostic, dropUnneededSecrets, readEnvFileWithin } from '../../core/runs/runPlan';
import type { RunPlan } from '../../core/runs/runPlan';
import { nodeFiles } from '../../core/config/nodeFiles';
import { GPU_IDS } from '../../core/gpu/catalog';
import { ensureCloudKey } from '../../core/runs/cloudKey';
import type { RunTarget } from '../../core/runs/runManager';
import { PANEL_COMMANDS } from '../panels/registerPanels';

export const START_A100_COMMAND = 'remoteFinetune.startTrainingA100';
export const START_COMMAND = 'remoteFinetune.startTraining';
/** Secret-store names of the tokens a run's env file gets. */
export const SECRET_NAMES: Readonly<Record<string, string>> = {
  HF_TOKEN: 'remoteFinetune.hf.token',
  WANDB_API_KEY: 'remoteFinetune.wandb.apiKey',
};

const A100 = ['A100-40GB', 'A100-80GB'] as const;

async function pickSpec(arg: unknown): Promise<vscode.Uri | undefined> {
  if (arg instanceof vscode.Uri) return arg;
  const active = vscode.window.activeTextEditor?.document;
  if (active && /finetune[^/\\]*\.ya?ml$/i.test(active.fileName)) return active.uri;
  const found = await vscode.workspace.findFiles('**/finetune*.{yaml,yml}', '**/{node_modules,.git}/**', 200);
  if (found.length === 1) return found[0];
  if (found.length === 0) {
    void showErrorMessage('No run spec (finetune.yaml) in this workspace. Open one, or copy one from the examples.');
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(found.map((u) => ({ label: vscode.workspace.asRelativePath(u), uri: u })), { title: 'Which run spec?' });
  return pick?.uri;
}

/** The GPU picker with the spec's GPU highlighted, so Enter keeps it (showQuickPick's `picked` only works with canPickMany). */
async function pickGpu(current: string | undefined): Promise<string | undefined> {
  const qp = vscode.window.createQuickPick<vscode.QuickPickItem>();
  qp.title = 'Which GPU?';
  qp.items = GPU_IDS.map((g) => ({ label: g, ...(g === current ? { description: 'in the spec' } : {}) }));
  const inSpec = qp.items.find((i) => i.label === current);
  if (inSpec) qp.activeItems = [inSpec];
  const picked = await new Promise<string | undefined>((resolve) => {
    qp.onDidAccept(() => { resolve(qp.selectedItems[0]?.label); qp.hide(); });
    qp.onDidHide(() => resolve(undefined));
    qp.show();
  });
  qp.dispose();
  return picked;
}

async function checkPlan(plan: RunPlan): Promise<boolean> {
  if (plan.errors.length > 0) {
    const lines = plan.errors.slice(0, 3).map((d) => describeDiagnostic(plan.specText, d)).join('\n');
    const choice = await showErrorMessage(`${plan.errors.length} error(s) in ${vscode.workspace.asRelativePath(plan.specPath)} block the run.`, { modal: true, detail: lines }, 'Show Problems');
    if (choice === 'Show Problems') await vscode.commands.executeCommand('workbench.actions.view.problems');
    return false;
  }
  if (plan.warnings.length > 0) {
    const lines = plan.warnings.slice(0, 5).map((d) => describeDiagnostic(plan.specText, d)).join('\n');
    const go = await showWarningMessage(`${plan.warnings.length} warning(s) in the run spec. Start anyway?`, { modal: true, detail: lines }, 'Start Anyway');
    return go === 'Start Anyway';
  }
  return true;
}

interface TargetItem extends vscode.QuickPickItem {
  readonly choice?: TargetChoice;
}

async function pickTarget(plan: RunPlan, gpus: readonly string[], sources: TargetSources, fitText: string): Promise<TargetChoice | undefined> {
  const qp = vscode.window.createQuickPick<TargetItem>();
  qp.title = `Where should ${plan.name} run? — ${fitText}`;
  qp.placeholder = 'An SSH host you have, or a new instance (cheapest first)';
  qp.matchOnDescription = true;
  qp.matchOnDetail = true;
  qp.busy = true;
  const items: TargetItem[] = [];
  const specHost = plan.target.provider === 'ssh' || plan.target.provider === 'local' ? plan.target.host : undefined;
  const hosts = [...sources.sshHosts()];
  if (typeof specHost === 'string' && !hosts.some((h) => h.host === specHost)) hosts.unshift({ host: specHost });
  if (hosts.length > 0) items.push({ label: 'SSH hosts', kind: vscode.QuickPickItemKind.Separator });
  for (const h of hosts) {
    const match = h.gpus?.some((g) => gpus.some((want) => gpuMatches(g, want)));
    items.push({
      label: `$(server) ${h.host}`,
      description: h.gpus ? (h.gpus.length > 0 ? h.gpus.join(', ') : 'no NVIDIA GPU') : 'not probed yet',
      detail: h.gpus && !match ? `has no ${gpus.join('/')}` : undefined,
      choice: { kind: 'ssh', host: h.host, ...(h.gpus ? { gpus: h.gpus } : {}) },
    });
  }
  qp.items = items;
  qp.show();
  // The spec's target decides which clouds, where, what type and how many GPUs are offered.
  const target = plan.target as Partial<TargetSpec>;
  const cloud = sources.cloudProviders(target).then(async ({ providers, problems }) => {
    const { offers, problems: more } = await offersForTarget(providers, gpus, target);
    const all = [...items];
    if (offers.length > 0) all.push({ label: 'New instance (price per hour, cheapest first)', kind: vscode.QuickPickItemKind.Separator });
    for (const { provider, offer } of offers) {
      all.push({
        label: `$(cloud) ${provider.kind} ${offer.instanceType}`,
        description: `$${offer.pricePerHour.toFixed(2)}/h · ${offer.gpuCount}× ${offer.gpu} · ${offer.region}${offer.zone ? `/${offer.zone}` : ''}${offer.spot ? ' · spot' : ''}`,
        detail: offer.capacity === 'available' ? 'capacity now' : offer.capacity === 'unavailable' ? 'no capacity now' : 'capacity unknown until launch',
        choice: { kind: 'cloud', provider, offer },
      });
    }
    for (const p of [...problems, ...more]) all.push({ label: `$(warning) ${p}`, alwaysShow: true });
    qp.items = all;
    qp.busy = false;
  }, () => { qp.busy = false; });
  const picked = await new Promise<TargetChoice | undefined>((resolve) => {
    qp.onDidAccept(() => {
      const c = qp.selectedItems[0]?.choice;
      if (c) { resolve(c); qp.hide(); }
    });
    qp.onDidHide(() => resolve(undefined));
  });
  void cloud;
  qp.dispose();
  return picked;
}

async function gatherSecrets(context: vscode.ExtensionContext): Promise<Record<string, string | undefined>> {
  const out: Record<string, string | undefined> = {};
  for (const [envName, secretName] of Object.entries(SECRET_NAMES)) out[envName] = await context.secrets.get(secretName);
  return out;
}

export async function startTraining(deps: FeatureDeps, runs: RunServices, sources: TargetSources, a100: boolean, arg?: unknown): Promise<void> {
  if (!vscode.workspace.isTrusted) {
    void showErrorMessage('Starting a run connects to hosts and runs code: trust this workspace first. Config checks work without trust.');
    return;
  }
  const uri = await pickSpec(arg);
  if (!uri) return;
  const doc = await vscode.workspace.openTextDocument(uri);
  if (doc.isDirty) await doc.save();
  // "on A100" checks the spec for the A100 it will get, not for the spec's own target.gpu (a T4 spec's
  // "T4 has no bf16" must not block a run on an A100).
  const plan = planRun(uri.fsPath, doc.getText(), nodeFiles, a100 ? { gpu: A100[0] } : {});
  if (!(await checkPlan(plan))) return;

  let gpus: readonly string[] = A100;
  if (!a100) {
    const current = typeof plan.target.gpu === 'string' ? plan.target.gpu : undefined;
    const pick = await pickGpu(current);
    if (!pick) return;
    gpus = [pick];
  }
  const fits = fitOn(plan, gpus, nodeFiles);
  // An own script's memory is the script's business: no estimate to show for it.
  const fitText = plan.ownScript && fits.every((f) => f.fits === undefined) ? `your own command on ${gpus.join(' / ')}` : fits.map((f) => f.label).join(' · ');
  if (fits.length > 0 && fits.every((f) => f.fits === false)) {
    const advice = fits[fits.length - 1]?.estimate?.advice.map((a) => a.title).join('; ');
    const go = await showWarningMessage(`The estimate says this run does not fit: ${fitText}`, { modal: true, detail: advice ? `Cheapest fixes: ${advice}` : undefined }, 'Start Anyway');
    if (go !== 'Start Anyway') return;
  }
  const choice = await pickTarget(plan, gpus, sources, fitText);
  if (!choice) return;

  // Price × the run's estimated hours (steps, tokens per step, the GPU class's throughput, the estimator's model size).
  const priceLine = choice.kind === 'cloud'
    ? (() => {
      const fit = fits.find((f) => f.gpu === choice.offer.gpu) ?? fits[0];
      const length = runLength({ spec: plan.spec, specDir: plan.workspaceDir, gpu: choice.offer.gpu, gpuCount: choice.offer.gpuCount, ...(fit?.estimate ? { params: fit.estimate.model.params } : {}), countExamples });
      return `${launchCost(choice.offer, length).text} Teardown: ${plan.teardown.policy}.`;
    })()
    : 'Your own host: no cloud charges from this extension.';
  const where = choice.kind === 'ssh' ? choice.host : `a new ${choice.provider.kind} ${choice.offer.instanceType}`;
  // The env file must lie inside the workspace folder (links resolved): its values go to the host.
  const root = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(plan.specPath))?.uri.fsPath ?? plan.workspaceDir;
  const envRead = plan.envFile ? readEnvFileWithin(plan.envFile, root) : undefined;
  if (envRead && 'error' in envRead) {
    void showErrorMessage(`${plan.name} was not started: ${envRead.error}.`);
    return;
  }
  const envLine = envRead ? `\nThe variables of ${vscode.workspace.asRelativePath(envRead.path)} are written to the host as a 0600 file (never on a command line).` : '';
  const ok = await showInformationMessage(`Start ${plan.name} on ${where}?`, { modal: true, detail: `${fitText}\n${priceLine}\nThe folder ${vscode.workspace.asRelativePath(plan.workspaceDir)} is synced (.gitignore and .finetuneignore respected).${envLine}` }, 'Start');
  if (ok !== 'Start') return;

  const envText = envRead?.text;
  const { env, dropped } = dropUnneededSecrets(collectEnv(envText, await gatherSecrets(deps.context)), plan.spec);
  if (dropped.length > 0) deps.log.info(`${plan.name}: not sending ${dropped.join(', ')} (this run does not use ${dropped.length > 1 ? 'them' : 'it'})`);
  let target: RunTarget;
  if (choice.kind === 'ssh') {
    target = { kind: 'ssh', host: choice.host };
  } else {
    const key = await ensureCloudKey(join(runs.storageDir, 'keys', 'cloud_ed25519'));
    target = { kind: 'cloud', provider: choice.provider, offer: choice.offer, sshPublicKey: key.publicKey, identityFile: key.privateKeyPath };
  }
  await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Fine-Tune: ${plan.name}`, cancellable: true }, async (progress, token) => {
    const abort = new AbortController();
    token.onCancellationRequested(() => abort.abort());
    try {
      const rec = await runs.manager.start({
        specPath: plan.specPath, specText: plan.specText, spec: plan.spec, name: plan.name, workspaceDir: plan.workspaceDir,
        env, target, gpu: gpus[0] ?? '', teardown: plan.teardown, signal: abort.signal,
        ...(envRead && !relative(plan.workspaceDir, envRead.path).startsWith('..') ? { envFileRel: relative(plan.workspaceDir, envRead.path) } : {}),
        progress: (_status, message) => progress.report({ message }),
      });
      runs.panels.select(rec.id);
      void vscode.commands.executeCommand(PANEL_COMMANDS.logs);
      void showInformationMessage(`${plan.name} is running on ${rec.host ?? where}. It keeps running if VS Code closes; reopen to reattach.`);
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      deps.log.error(`start ${plan.name}: ${msg}`);
      if (abort.signal.aborted) void showWarningMessage(`${plan.name} was cancelled${choice.kind === 'cloud' ? '; its instance was torn down' : ''}.`);
      else void showErrorMessage(`${plan.name} did not start: ${msg}`);
    }
  });
}

export function registerStartTraining(deps: FeatureDeps, runs: RunServices, sources: TargetSources): vscode.Disposable {
  return vscode.Disposable.from(
    vscode.commands.registerCommand(START_A100_COMMAND, (arg?: unknown) => startTraining(deps, runs, sources, true, arg)),
    vscode.commands.registerCommand(START_COMMAND, (arg?: unknown) => startTraining(deps, runs, sources, false, arg)),
  );
}
