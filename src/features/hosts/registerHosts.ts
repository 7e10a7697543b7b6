import * as vscode from 'vscode';
import type { FeatureDeps } from '../deps';
import { HostStore } from './hostStore';
import { HostsTreeProvider, HOSTS_VIEW_ID } from './hostsView';
import { registerHostCommands } from './addHostCommand';

/** The hosts store other features read (Start Training lists its hosts); one per extension host. */
let sharedStore: HostStore | undefined;
export function hostStoreFor(context: vscode.ExtensionContext): HostStore {
  sharedStore ??= new HostStore(context.globalState);
  return sharedStore;
}

export function registerHosts(deps: FeatureDeps): vscode.Disposable {
  const store = hostStoreFor(deps.context);
  const provider = new HostsTreeProvider(store);
  const view = vscode.window.createTreeView(HOSTS_VIEW_ID, { treeDataProvider: provider });
  return vscode.Disposable.from(view, provider, registerHostCommands(store, () => deps.connectOptions, deps.log));
}
