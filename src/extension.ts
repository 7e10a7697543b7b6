// Composition root: build the services, hand them to each feature's registerX, keep the disposables.
import type * as vscode from 'vscode';
import { join } from 'node:path';
import { createExtensionLog } from './features/log/extensionLog';
import { registerShowLogCommand } from './features/log/showLogCommand';
import { registerPanels } from './features/panels/registerPanels';
import { registerConfig } from './features/config/registerConfig';
import { createRunServices } from './features/runs/runServices';
import { registerRuns } from './features/runs/registerRuns';
import { registerHosts, createHostsApi } from './features/hosts/registerHosts';
import { HostStore } from './features/hosts/hostStore';
import { registerProviders } from './features/providers/registerProviders';
import { createSshConnectOptions } from './features/hosts/sshPrompts';
import { sshSync } from './core/runs/sync/runSync';
import { runHostsOf } from './core/runs/hosts/runHosts';
import { confirmLargeFolders } from './features/runs/largeFolderPrompt';
import { createCloudProviders } from './features/providers/cloudProviders';
import { registerWalkthrough } from './features/walkthrough/registerWalkthrough';
import type { FeatureDeps } from './features/deps';

export function activate(context: vscode.ExtensionContext): { activationMs: number } {
  const started = performance.now();
  const log = createExtensionLog();
  context.subscriptions.push(log);
  // Every service once, here: the features get them, never build their own.
  const connectOptions = createSshConnectOptions(context, log);
  const cloud = createCloudProviders(context);
  context.subscriptions.push(cloud);
  const runs = createRunServices(context, {
    connectOptions,
    sync: sshSync(join(context.globalStorageUri.fsPath, 'sync-cache'), confirmLargeFolders),
    ledger: cloud.ledger,
    providerFor: (r) => cloud.providerFor(r),
    log,
  });
  const deps: FeatureDeps = { context, log, connectOptions, runContext: runs.panels };
  const runHosts = runHostsOf(runs.store);
  const hostStore = new HostStore(context.globalState);
  const hosts = createHostsApi(deps, hostStore, runHosts);

  context.subscriptions.push(
    registerShowLogCommand(deps),
    registerPanels(deps),
    registerConfig(deps, () => runs.store.all()),
    registerHosts(deps, hostStore, hosts, runHosts),
    registerProviders(deps, cloud),
    registerWalkthrough(deps),
    registerRuns(deps, runs, {
      sshHosts: (spec, wanted) => hosts.known(spec, wanted),
      ensureProbe: (host) => hosts.prober.ensureProbe(host),
      cloudProviders: (target) => cloud.cloudProviders(target),
    }),
  );

  const activationMs = performance.now() - started;
  const version = String((context.extension.packageJSON as { version?: unknown }).version ?? '?');
  log.info(`Remote Fine-Tune ${version} activated in ${activationMs.toFixed(1)} ms`);
  return { activationMs };
}

export function deactivate(): void {
  // Everything is released through context.subscriptions. Runs go on on their hosts.
}
