// Cloud credentials and the orphan sweep. On activation (trusted workspaces only, after a delay so
// activation stays cheap) it lists the instances this extension owns; those with no live run are shown
// with one action that terminates them. While the ledger holds an entry whose instance may still bill
// unseen (a launch of unknown outcome, a failed cleanup, a recent teardown a lagging listing may not show
// yet), the sweep runs again periodically. Commands refuse in untrusted workspaces.
import { registerCommand } from '../commands';
import * as vscode from 'vscode';
import { showQuickPick, withProgress } from '../linkSafeUi';
import { ownerIdFor } from '../../core/runs/store/ownerId';
import { setting } from '../settings';
import { showErrorMessage, showInformationMessage, showWarningMessage } from '../notify';
import { join } from 'node:path';
import { runningCost } from '../../core/providers/cost';
import { formatUsd } from '../../core/providers/cost';
import { holderAlive } from '../../core/runs/store/ledger';
import { startUncertainSweep } from '../../core/runs/cost/uncertainSweep';
import type { UncertainSweep } from '../../core/runs/cost/uncertainSweep';
import type { LedgerEntry } from '../../core/runs/store/ledger';
import { reconcile, settleUnknownLaunches, terminateOrphans } from '../../core/runs/lifecycle/teardown';
import type { Orphan } from '../../core/runs/lifecycle/teardown';
import { RunStore } from '../../core/runs/store/runStore';
import { isTerminal } from '../../core/runs/store/runRecord';
import type { FeatureDeps } from '../deps';
import { LAMBDA_KEY_SECRET } from './cloudProviders';
import type { CloudProviders } from './cloudProviders';
import { registerShowOffersCommand } from './showOffersCommand';

export const SET_LAMBDA_KEY_COMMAND = 'remoteFinetune.setLambdaApiKey';
export const TERMINATE_ORPHANS_COMMAND = 'remoteFinetune.terminateOrphans';
/** How often the sweep runs while an uncertain ledger entry exists (EC2's listings lag by minutes at most). */
const UNCERTAIN_SWEEP_MS = 2 * 60_000;

function refuseUntrusted(): boolean {
  if (vscode.workspace.isTrusted) return false;
  void showErrorMessage('Cloud instances cost money: trust this workspace before provisioning or terminating. Config checks work without trust.');
  return true;
}

/**
 * A run is live when the run store still follows it (running, or being set up by a live window), or
 * its instance was kept or stopped on purpose. A window that crashed mid-launch leaves neither.
 */
function livenessFrom(storageDir: string): (entry: LedgerEntry) => boolean {
  const store = new RunStore(join(storageDir, 'runs.json'));
  return (entry) => {
    if (entry.state === 'kept' || entry.state === 'stopped') return true;
    if (entry.state !== 'active' && entry.state !== 'launching' && entry.state !== 'launch-unknown') return false;
    const rec = store.get(entry.runId);
    if (rec && rec.status === 'running') return true;
    return holderAlive(entry) && (!rec || !isTerminal(rec.status));
  };
}

function describeOrphan(o: Orphan, now: number): string {
  const i = o.instance;
  const price = i.pricePerHour ?? o.entry?.pricePerHour;
  const since = i.launchedAt ?? o.entry?.launchedAt;
  const cost = price !== undefined && since !== undefined ? `, ${formatUsd(runningCost(price, since, now, i.provider))} so far` : '';
  return `${i.provider} ${i.instanceType} ${i.id}${price !== undefined ? ` (${formatUsd(price)}/h${cost})` : ''}`;
}

async function findOrphans(cloud: CloudProviders, storageDir: string): Promise<{ orphans: Orphan[]; errors: string[] }> {
  const providers = await cloud.reconcileProviders();
  if (providers.length === 0) return { orphans: [], errors: [] };
  const isLive = livenessFrom(storageDir);
  const r = await reconcile(providers, cloud.ledger, isLive, AbortSignal.timeout(60_000), ownerIdFor(storageDir));
  await settleUnknownLaunches(cloud.ledger, r, isLive);
  // Another installation's (or a colleague's) instances are listed, never offered for termination.
  return {
    orphans: r.orphans,
    errors: [
      ...r.errors.map((e) => `${e.provider}: ${e.message}`),
      ...(r.others.length
        ? [
            `${r.others.length} instance(s) launched by Remote Fine-Tune elsewhere (another owner): ${r.others.map((i) => `${i.provider} ${i.id}`).join(', ')}; not offered`,
          ]
        : []),
    ],
  };
}

async function terminateWithProgress(cloud: CloudProviders, orphans: readonly Orphan[], log: vscode.LogOutputChannel): Promise<void> {
  const providers = await cloud.reconcileProviders();
  const n = await withProgress({ location: vscode.ProgressLocation.Notification, title: `Terminating ${orphans.length} instance(s)…` }, () =>
    terminateOrphans(providers, cloud.ledger, orphans, (l) => log.info(l)),
  );
  if (n === orphans.length) void showInformationMessage(`Terminated ${n} orphaned instance(s).`);
  else void showErrorMessage(`Terminated ${n} of ${orphans.length} instance(s); see the extension log and your cloud console for the rest.`);
}

async function offerTermination(cloud: CloudProviders, orphans: readonly Orphan[], log: vscode.LogOutputChannel): Promise<void> {
  const now = Date.now();
  const perHour = orphans.reduce((sum, o) => sum + (o.instance.pricePerHour ?? o.entry?.pricePerHour ?? 0), 0);
  for (const o of orphans) log.warn(`orphaned instance: ${describeOrphan(o, now)}: ${o.reason}`);
  const label = orphans.length === 1 ? describeOrphan(orphans[0]!, now) : `${orphans.length} instances (${formatUsd(perHour)}/h together)`;
  const choice = await showWarningMessage(
    `Remote Fine-Tune launched ${label} that no run is using. They keep billing until terminated.`,
    'Terminate',
    'Show Log',
  );
  if (choice === 'Terminate') await terminateWithProgress(cloud, orphans, log);
  else if (choice === 'Show Log') log.show(false);
}

export function registerProviders(deps: FeatureDeps, cloud: CloudProviders): vscode.Disposable {
  const { context, log } = deps;
  const storageDir = context.globalStorageUri.fsPath;

  const setKey = registerCommand(log, SET_LAMBDA_KEY_COMMAND, async (): Promise<boolean> => {
    if (refuseUntrusted()) return false;
    const value = await vscode.window.showInputBox({
      title: 'Lambda Cloud API Key',
      prompt: "Create one at cloud.lambda.ai → API keys. It is kept in VS Code's secret storage. Leave empty to remove the stored key.",
      password: true,
      ignoreFocusOut: true,
      validateInput: (v) => (v.length === 0 || /^\S{16,}$/.test(v.trim()) ? undefined : 'An API key is one word of at least 16 characters'),
    });
    if (value === undefined) return false;
    if (value.trim() === '') {
      await context.secrets.delete(LAMBDA_KEY_SECRET);
      void showInformationMessage('Lambda Cloud API key removed.');
      return true;
    }
    await context.secrets.store(LAMBDA_KEY_SECRET, value.trim());
    // Never the key itself in the log.
    log.info('Lambda Cloud API key stored in secret storage');
    void showInformationMessage('Lambda Cloud API key saved.');
    return true;
  });

  const terminate = registerCommand(log, TERMINATE_ORPHANS_COMMAND, async (): Promise<number> => {
    if (refuseUntrusted()) return 0;
    const found = await withProgress({ location: vscode.ProgressLocation.Window, title: 'Looking for orphaned instances' }, () =>
      findOrphans(cloud, storageDir),
    );
    for (const e of found.errors) log.warn(`orphan sweep: ${e}`);
    if (found.orphans.length === 0) {
      void showInformationMessage(
        found.errors.length
          ? `No orphaned instances found (${found.errors.length} cloud(s) could not be listed; see the log).`
          : 'No orphaned instances: every instance this extension launched belongs to a live run.',
      );
      return 0;
    }
    const now = Date.now();
    const picked = await showQuickPick(
      found.orphans.map((o) => ({ label: describeOrphan(o, now), detail: o.reason, picked: true, orphan: o })),
      { canPickMany: true, title: 'Terminate orphaned instances', placeHolder: 'Every picked instance is terminated (its disk is deleted)' },
    );
    if (!picked || picked.length === 0) return 0;
    await terminateWithProgress(
      cloud,
      picked.map((p) => p.orphan),
      log,
    );
    return picked.length;
  });

  // The sweep on activation: after a pause, off the activation path, trusted workspaces only; then again while
  // the ledger has uncertain entries. An orphan is offered once; the command offers every one again.
  let timer: NodeJS.Timeout | undefined;
  let periodic: UncertainSweep | undefined;
  const offered = new Set<string>();
  let sweeping = false;
  const sweep = async (): Promise<void> => {
    if (sweeping) return;
    sweeping = true;
    try {
      const { orphans, errors } = await findOrphans(cloud, storageDir);
      for (const e of errors) log.warn(`orphan sweep: ${e}`);
      const fresh = orphans.filter((o) => !offered.has(`${o.instance.provider}:${o.instance.id}`));
      for (const o of fresh) offered.add(`${o.instance.provider}:${o.instance.id}`);
      if (fresh.length > 0) await offerTermination(cloud, fresh, log);
      else if (orphans.length === 0) log.info('orphan sweep: no orphaned instances');
    } catch (err) {
      log.warn(`orphan sweep failed: ${(err as Error).message}`);
    } finally {
      sweeping = false;
    }
  };
  const enabled = setting('cloud.reconcileOnStartup') ?? true;
  if (enabled && vscode.workspace.isTrusted) {
    timer = setTimeout(() => void sweep(), 3000);
    periodic = startUncertainSweep(() => cloud.ledger.entries(), sweep, UNCERTAIN_SWEEP_MS);
  }

  return vscode.Disposable.from(setKey, terminate, registerShowOffersCommand(cloud, refuseUntrusted, log), cloud, {
    dispose: () => {
      if (timer) clearTimeout(timer);
      periodic?.stop();
    },
  });
}
