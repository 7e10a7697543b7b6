// "Fine-Tune: Start Training on A100" and "Fine-Tune: Start Training…": pick the spec, check it, show the
// fit and the price, pick where, confirm, then provision → sync → secrets → launch with a cancellable
// progress notification. Cancel tears a provisioned instance down (core/runs/teardown does it).
import { outputDestinations } from '../../core/runs/lifecycle/runPlan';
import { registerCommand } from '../commands';
import { setting, setUserSetting } from '../settings';
import * as vscode from 'vscode';
import { createQuickPick, showQuickPick, withProgress } from '../linkSafeUi';
import { showErrorMessage, showInformationMessage, showWarningMessage } from '../notify';
import { join, relative } from 'node:path';
import type { FeatureDeps } from '../deps';
import type { RunServices } from './runServices';
import { gatherSecrets } from './runSecrets';
import type { TargetChoice, TargetSources } from './targets';
import { gpuMatches, hostGpuWarning, probedGpuNames } from '../../core/hosts/gpuCheck';
import { gpuSummary, sourcesText } from '../../core/hosts/hostSources';
import { setupRows, validateSettingValue } from '../../core/runs/hosts/targetFixes';
import { runningNoticeLifetime } from './runningNotice';
import { probedHardwareLine } from '../../core/runs/view/hardwareLine';
import { hardwareFromProbe } from '../../core/runs/view/runHardware';
import type { RunHardware } from '../../core/runs/view/runHardware';
import type { GcpSetupState } from '../../core/runs/hosts/targetFixes';
import { resolveCloudSettings } from '../../core/providers/providerSelection';
import { applicationDefaultCredentialsPresent } from '../../core/providers/gcp/auth';
import type { TargetFix } from '../../core/runs/hosts/targetFixes';
import { ADD_HOST_COMMAND } from '../hosts/addHostCommand';
import { hostsOf, machinesOf } from '../../core/runs/lifecycle/multiNode';
import { confirmAndCheckHosts } from '../../core/runs/hosts/hostContactOrder';
import { cloudOf, offersForTarget } from '../../core/runs/hosts/targetOffers';
import type { TargetSpec } from '../../core/providers/targetSpec';
import { runLength } from '../../core/runs/cost/runLength';
import { launchCost } from '../../core/runs/cost/launchCost';
import { RUNNER_DEFAULTS } from '../../core/runs/cost/runLength';
import { describeReadyWait, readyWait, specReadyTimeout } from '../../core/providers/readyWait';
import { estimateCaseOf, measuredMatch, withMeasuredThroughput } from '../../core/runs/cost/estimateVsActual';
import { budgetLine } from '../../core/runs/cost/runBudget';
import type { RunEstimated } from '../../core/runs/store/runMeasuredSchema';
import { countExamples } from '../../core/runs/view/dataExamples';
import { ownHostLine } from '../../core/runs/cost/specTimeCost';
import { planRun, fitOn, describeDiagnostic, readEnvFileWithin } from '../../core/runs/lifecycle/runPlan';
import { billedResources } from '../../core/runs/cost/billedResources';
import { redirectLines } from '../../core/runs/lifecycle/runEnv';
import type { RunEnv } from '../../core/runs/lifecycle/runEnv';
import { confirmRunEnv } from '../../core/runs/lifecycle/startGate';
import { sessionCredentialsWarning } from '../../core/runs/hosts/awsSessionCredentials';
import type { RunPlan } from '../../core/runs/lifecycle/runPlan';
import { editorFiles } from '../config/configFiles';
import { GPU_IDS, isGpuId } from '../../core/gpu/catalog';
import { ensureCloudKey } from '../../core/runs/hosts/cloudKey';
import type { RunTarget } from '../../core/runs/lifecycle/runManager';
import { PANEL_COMMANDS } from '../panels/registerPanels';

export const START_A100_COMMAND = 'remoteFinetune.startTrainingA100';
export const START_COMMAND = 'remoteFinetune.startTraining';
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
  const pick = await showQuickPick(
    found.map((u) => ({ label: vscode.workspace.asRelativePath(u), uri: u })),
    { title: 'Which run spec?' },
  );
  return pick?.uri;
}

/** The GPU picker with the spec's GPU highlighted, so Enter keeps it (showQuickPick's `picked` only works with canPickMany). */
async function pickGpu(current: string | undefined): Promise<string | undefined> {
  const qp = createQuickPick<vscode.QuickPickItem>();
  qp.title = 'Which GPU?';
  qp.items = GPU_IDS.map((g) => ({ label: g, ...(g === current ? { description: 'in the spec' } : {}) }));
  const inSpec = qp.items.find((i) => i.label === current);
  if (inSpec) qp.activeItems = [inSpec];
  const picked = await new Promise<string | undefined>((resolve) => {
    qp.onDidAccept(() => {
      resolve(qp.selectedItems[0]?.label);
      qp.hide();
    });
    qp.onDidHide(() => resolve(undefined));
    qp.show();
  });
  qp.dispose();
  return picked;
}

async function checkPlan(plan: RunPlan): Promise<boolean> {
  if (plan.errors.length > 0) {
    const lines = plan.errors
      .slice(0, 3)
      .map((d) => describeDiagnostic(plan.specText, d))
      .join('\n');
    const choice = await showErrorMessage(
      `${plan.errors.length} error(s) in ${vscode.workspace.asRelativePath(plan.specPath)} block the run.`,
      { modal: true, detail: lines },
      'Show Problems',
    );
    if (choice === 'Show Problems') await vscode.commands.executeCommand('workbench.actions.view.problems');
    return false;
  }
  if (plan.warnings.length > 0) {
    const lines = plan.warnings
      .slice(0, 5)
      .map((d) => describeDiagnostic(plan.specText, d))
      .join('\n');
    const go = await showWarningMessage(`${plan.warnings.length} warning(s) in the run spec. Start anyway?`, { modal: true, detail: lines }, 'Start Anyway');
    return go === 'Start Anyway';
  }
  return true;
}

interface TargetItem extends vscode.QuickPickItem {
  readonly choice?: TargetChoice;
  /** Not a target: adds a host, or sets a cloud's missing credential; the picker comes back after. */
  readonly action?: { readonly kind: 'addHost' } | { readonly kind: 'fix'; readonly fix: TargetFix };
}

type TargetPick = TargetChoice | NonNullable<TargetItem['action']>;

export const ADD_SSH_HOST_LABEL = '$(add) Add SSH host…';

async function pickTarget(
  plan: RunPlan,
  gpus: readonly string[],
  sources: TargetSources,
  fitText: string,
  activeHost?: string,
): Promise<TargetPick | undefined> {
  const qp = createQuickPick<TargetItem>();
  qp.title = `Where should ${plan.name} run? — ${fitText}`;
  qp.placeholder = 'An SSH host you have, or a new instance (cheapest first)';
  qp.matchOnDescription = true;
  qp.matchOnDetail = true;
  qp.busy = true;
  const items: TargetItem[] = [];
  const specHost = plan.target.provider === 'ssh' || plan.target.provider === 'local' ? plan.target.host : undefined;
  // Whatever the spec's provider: the person's own hosts (saved, ssh_config, past runs) are always a choice.
  const hosts = sources.sshHosts(typeof specHost === 'string' ? specHost : undefined, gpus);
  items.push({ label: 'SSH hosts', kind: vscode.QuickPickItemKind.Separator });
  for (const h of hosts) {
    const names = h.probe ? probedGpuNames(h.probe.probe) : undefined;
    const match = names?.some((g) => gpus.some((want) => gpuMatches(g, want)));
    items.push({
      label: `$(server) ${h.host}`,
      description: `${gpuSummary(h)} · ${sourcesText(h.sources)}`,
      ...(names && !match ? { detail: names.length > 0 ? `has no ${gpus.join('/')}` : 'no NVIDIA GPU found when last probed' } : {}),
      choice: { kind: 'ssh', host: h.host, ...(names ? { gpus: names } : {}) },
    });
  }
  items.push({ label: ADD_SSH_HOST_LABEL, description: 'from ~/.ssh/config or user@host[:port]', alwaysShow: true, action: { kind: 'addHost' } });
  qp.items = items;
  const active = items.find((i) => i.choice?.kind === 'ssh' && i.choice.host === activeHost);
  if (active) qp.activeItems = [active];
  qp.show();
  // The spec's target decides which clouds, where, what type and how many GPUs are offered.
  const target = plan.target as Partial<TargetSpec>;
  const cloud = sources.cloudProviders(target).then(
    async ({ providers, problems }) => {
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
      const { fixes, notes } = setupRows([...problems, ...more], cloudOf(target), gcpSetupState());
      if (fixes.length > 0) all.push({ label: 'Clouds to set up', kind: vscode.QuickPickItemKind.Separator });
      for (const fix of fixes) all.push({ label: `$(key) ${fix.label}`, detail: fix.detail, alwaysShow: true, action: { kind: 'fix', fix: fix.fix } });
      for (const p of notes) all.push({ label: `$(warning) ${p}`, alwaysShow: true });
      const keep = qp.activeItems[0];
      qp.items = all;
      if (keep && all.includes(keep)) qp.activeItems = [keep];
      qp.busy = false;
    },
    () => {
      qp.busy = false;
    },
  );
  const picked = await new Promise<TargetPick | undefined>((resolve) => {
    qp.onDidAccept(() => {
      const item = qp.selectedItems[0] ?? qp.activeItems[0];
      const c = item?.choice ?? item?.action;
      if (c) {
        resolve(c);
        qp.hide();
      }
    });
    qp.onDidHide(() => resolve(undefined));
  });
  void cloud;
  qp.dispose();
  return picked;
}

/** GCP's two settings, each its own setup row: the project (settings or environment) and the sign-in. */
function gcpSetupState(): GcpSetupState {
  const project = resolveCloudSettings({ gcpProject: setting('gcp.project') }).gcpProject !== undefined;
  return { project, credentials: applicationDefaultCredentialsPresent() };
}

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

/** Run Again's arguments: the last run's GPU and SSH host (a cloud run's instance is gone: its GPU only). */
export interface StartAgain {
  readonly gpu?: string;
  readonly host?: string;
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

/** Resolves with the new run's id, or undefined when nothing was started. */
export async function startTraining(
  deps: FeatureDeps,
  runs: RunServices,
  sources: TargetSources,
  a100: boolean,
  arg?: unknown,
  again?: StartAgain,
): Promise<string | undefined> {
  if (!vscode.workspace.isTrusted) {
    void showErrorMessage('Starting a run connects to hosts and runs code: trust this workspace first. Config checks work without trust.');
    return undefined;
  }
  const uri = await pickSpec(arg);
  if (!uri) return undefined;
  const doc = await vscode.workspace.openTextDocument(uri);
  if (doc.isDirty) await doc.save();
  // "on A100" checks the spec for the A100 it will get, not for the spec's own target.gpu (a T4 spec's
  // "T4 has no bf16" must not block a run on an A100).
  // Run Again checks for the GPU the last run had, like "on A100" does.
  const gpuOverride = a100 ? A100[0] : again?.gpu;
  const plan = planRun(uri.fsPath, doc.getText(), editorFiles(uri.fsPath), gpuOverride ? { gpu: gpuOverride } : {});
  if (!(await checkPlan(plan))) return undefined;
  // A plan without errors is one the schema accepted: its typed spec is what the start reads.
  const runSpec = plan.runSpec;
  if (!runSpec) return undefined;

  let gpus: readonly string[] = A100;
  if (!a100 && again?.gpu) {
    gpus = [again.gpu];
  } else if (!a100 && typeof plan.target.gpu === 'string' && isGpuId(plan.target.gpu)) {
    // The spec names its GPU: asking again would only echo it ("on A100", or an edit of target.gpu, picks another).
    gpus = [plan.target.gpu];
  } else if (!a100) {
    const current = typeof plan.target.gpu === 'string' ? plan.target.gpu : undefined;
    const pick = await pickGpu(current);
    if (!pick) return undefined;
    gpus = [pick];
  }
  const fits = fitOn(plan, gpus, editorFiles(uri.fsPath));
  // An own script's memory is the script's business: no estimate to show for it.
  const fitText = plan.ownScript && fits.every((f) => f.fits === undefined) ? `your own command on ${gpus.join(' / ')}` : fits.map((f) => f.label).join(' · ');
  if (fits.length > 0 && fits.every((f) => f.fits === false)) {
    const advice = fits[fits.length - 1]?.estimate?.advice.map((a) => a.title).join('; ');
    const go = await showWarningMessage(
      `The estimate says this run does not fit: ${fitText}`,
      { modal: true, detail: advice ? `Cheapest fixes: ${advice}` : undefined },
      'Start Anyway',
    );
    if (go !== 'Start Anyway') return undefined;
  }
  // A multi-node run goes to the hosts its spec lists (target.hosts, rank 0 first): no picker for one host. The
  // spec's checks (RFT830) and the start itself (runStart.ts) say what is wrong with a multi-node spec.
  const machineHosts = machinesOf(runSpec) > 1 ? hostsOf(runSpec) : undefined;
  const choice: TargetChoice | undefined = machineHosts
    ? { kind: 'ssh', host: machineHosts[0]! }
    : again?.host
      ? { kind: 'ssh', host: again.host }
      : await chooseTarget(plan, gpus, sources, fitText);
  if (!choice) return undefined;

  // The user's own run of this case, when there is one, speaks before the model (issue 32.4); the estimate shown
  // is kept in the record to be set against what the host measures.
  const runGpu = choice.kind === 'cloud' ? choice.offer.gpu : (gpus[0] ?? '');
  const runGpuCount = choice.kind === 'cloud' ? choice.offer.gpuCount : typeof plan.target.gpu_count === 'number' ? plan.target.gpu_count : 1;
  const runCase = estimateCaseOf(plan.spec, runGpu, runGpuCount, RUNNER_DEFAULTS);
  const measured = runCase ? measuredMatch(runs.manager.store.all(), runCase) : undefined;
  const runFit = fits.find((f) => f.gpu === runGpu) ?? fits[0];
  let estimated: RunEstimated | undefined = runCase ? { ...runCase, ...(runFit?.estimate ? { vramGib: runFit.estimate.estimate.totalGib } : {}) } : undefined;
  // An own host has no offer, but the run's length still goes into the record, against the budget and into the
  // confirmation.
  const ownLength =
    choice.kind === 'ssh'
      ? withMeasuredThroughput(
          runLength({
            spec: plan.spec,
            specDir: plan.workspaceDir,
            gpu: runGpu,
            gpuCount: runGpuCount,
            ...(runFit?.estimate ? { params: runFit.estimate.model.params, layers: runFit.estimate.model.layers } : {}),
            countExamples,
          }),
          measured,
        )
      : undefined;
  // Price × the run's estimated hours (steps, tokens per step, the GPU class's throughput, the estimator's model size).
  const priceLine =
    choice.kind === 'cloud'
      ? (() => {
          const fit = fits.find((f) => f.gpu === choice.offer.gpu) ?? fits[0];
          const length = withMeasuredThroughput(
            runLength({
              spec: plan.spec,
              specDir: plan.workspaceDir,
              gpu: choice.offer.gpu,
              gpuCount: choice.offer.gpuCount,
              ...(fit?.estimate ? { params: fit.estimate.model.params, layers: fit.estimate.model.layers } : {}),
              countExamples,
            }),
            measured,
          );
          // The wait for SSH bills and grows with the GPU count: in the total, and said with the limit that ends it.
          const ready = readyWait(choice.offer.provider, choice.offer.gpuCount, specReadyTimeout(plan.spec));
          const cost = launchCost(choice.offer, length, ready);
          if (estimated && length.known)
            estimated = {
              ...estimated,
              hours: length.hours,
              tokensPerSecond: length.tokensPerSecond,
              ...(cost.estimate ? { costUsd: cost.estimate.totalUsd } : {}),
            };
          return `${cost.text} ${describeReadyWait(ready, choice.offer.provider, choice.offer.gpuCount)} Teardown: ${plan.teardown.policy}.`;
        })()
      : ownHostLine(ownLength);
  const measuredLine = measured ? ` Estimate from your own run: ${measured.text}.` : '';
  if (estimated && ownLength?.known) estimated = { ...estimated, hours: ownLength.hours, tokensPerSecond: ownLength.tokensPerSecond };
  const budgetText = budgetLine(runSpec, {
    ...(estimated?.costUsd !== undefined ? { costUsd: estimated.costUsd } : {}),
    ...(estimated?.hours !== undefined ? { hours: estimated.hours } : {}),
    ...(choice.kind === 'cloud' ? { pricePerHour: choice.offer.pricePerHour } : {}),
  });
  const where = machineHosts
    ? `${machineHosts.length} machines (${machineHosts.join(', ')})`
    : choice.kind === 'ssh'
      ? choice.host
      : `a new ${choice.provider.kind} ${choice.offer.instanceType}`;
  // The env file must lie inside the workspace folder (links resolved): its values go to the host.
  const root = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(plan.specPath))?.uri.fsPath ?? plan.workspaceDir;
  const envRead = plan.envFile ? readEnvFileWithin(plan.envFile, root) : undefined;
  if (envRead && 'error' in envRead) {
    void showErrorMessage(`${plan.name} was not started: ${envRead.error}.`);
    return undefined;
  }
  const envName = envRead ? vscode.workspace.asRelativePath(envRead.path) : '';
  // What the host's probe found when it is not what the spec asks for (after Start Anyway): said first.
  let hardwareLine: string | undefined;
  // What the probe found, kept in the record until the runner reports the hardware itself.
  let probedHardware: RunHardware | undefined;
  const confirmStart = async (r: RunEnv): Promise<boolean> => {
    const held = r.held.length > 0;
    const variables = [...new Set(r.held.map((h) => h.redirect.variable))].join(', ');
    const hosts = [...new Set(r.held.map((h) => h.redirect.host))];
    const tokens = [...new Set(r.held.flatMap((h) => h.secrets))].join(' and ');
    const button = held ? `Approve ${hosts.length > 1 ? 'Hosts' : 'Host'} and Start` : 'Start';
    const detail = [
      ...(hardwareLine ? [hardwareLine] : []),
      fitText + measuredLine,
      priceLine,
      ...(budgetText ? [budgetText] : []),
      ...(choice.kind === 'cloud' ? billedResources({ offer: choice.offer, spec: runSpec, teardown: plan.teardown, canStop: choice.provider.canStop }) : []),
      `The folder ${vscode.workspace.asRelativePath(plan.workspaceDir)} is synced (.gitignore and .finetuneignore respected).`,
      ...(envRead ? [`The variables of ${envName} are written to the host as a 0600 file (never on a command line).`] : []),
      ...[sessionCredentialsWarning(r.env, runSpec, estimated?.hours)].filter((w): w is string => w !== undefined),
      ...redirectLines(r, envName),
      ...outputDestinations(runSpec),
      ...(held ? [`${button} remembers ${hosts.length > 1 ? 'these hosts' : 'this host'} for your ${tokens}. Without it nothing starts.`] : []),
    ].join('\n');
    const title = held
      ? `Start ${plan.name} on ${where}? ${variables} in ${envName} would send your stored ${tokens} to ${hosts.join(', ')}, ${hosts.length > 1 ? 'hosts' : 'a host'} you have not approved.`
      : `Start ${plan.name} on ${where}?`;
    return (await (held ? showWarningMessage : showInformationMessage)(title, { modal: true, detail }, button)) === button;
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
          stored: await gatherSecrets(deps.context),
          spec: runSpec,
          mlflowTrackingUri: setting('mlflow.trackingUri') ?? '',
        },
        deps.context.globalState,
        confirmStart,
      ),
  });
  if (!prepared) return undefined;
  const { env, dropped } = prepared;
  if (dropped.length > 0) deps.log.info(`${plan.name}: not sending ${dropped.join(', ')} (this run does not use ${dropped.length > 1 ? 'them' : 'it'})`);
  let target: RunTarget;
  if (choice.kind === 'ssh') {
    target = { kind: 'ssh', host: choice.host };
  } else {
    const key = await ensureCloudKey(join(runs.storageDir, 'keys', 'cloud_ed25519'));
    target = { kind: 'cloud', provider: choice.provider, offer: choice.offer, sshPublicKey: key.publicKey, identityFile: key.privateKeyPath };
  }
  return await withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Fine-Tune: ${plan.name}`, cancellable: true },
    async (progress, token): Promise<string | undefined> => {
      const abort = new AbortController();
      token.onCancellationRequested(() => abort.abort());
      try {
        const rec = await runs.manager.start({
          specPath: plan.specPath,
          specText: plan.specText,
          spec: plan.spec,
          runSpec,
          name: plan.name,
          workspaceDir: plan.workspaceDir,
          env,
          target,
          gpu: gpus[0] ?? '',
          ...(probedHardware ? { hardware: probedHardware } : {}),
          teardown: plan.teardown,
          ...(estimated ? { estimated } : {}),
          signal: abort.signal,
          ...(envRead && !relative(plan.workspaceDir, envRead.path).startsWith('..') ? { envFileRel: relative(plan.workspaceDir, envRead.path) } : {}),
          progress: (_status, message) => progress.report({ message }),
        });
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

export function registerStartTraining(deps: FeatureDeps, runs: RunServices, sources: TargetSources): vscode.Disposable {
  return vscode.Disposable.from(
    registerCommand(deps.log, START_A100_COMMAND, (arg?: unknown) => startTraining(deps, runs, sources, true, arg)),
    // A second argument (Run Again) names the GPU and host to reuse: no pickers for what the last run had.
    registerCommand(deps.log, START_COMMAND, (arg?: unknown, again?: unknown) => startTraining(deps, runs, sources, false, arg, againOf(again))),
  );
}
