// "Fine-Tune: Add GPU Host…": pick a host from ~/.ssh/config or type user@host[:port], connect (host key and
// passphrase prompts as needed), probe its GPUs, and keep it in the Hosts view.
import { registerCommand } from '../commands';
import * as vscode from 'vscode';
import { showQuickPick, withProgress } from '../linkSafeUi';
import { showErrorMessage, showWarningMessage } from '../notify';
import { SshFatalError } from '../../core/ssh/session';
import { parseHostSpec } from '../../core/ssh/sshConfig';
import type { HostStore } from './hostStore';
import type { HostProber } from './hostProbe';
import { configuredHosts } from './knownHostList';

export const ADD_HOST_COMMAND = 'remoteFinetune.addHost';
export const PROBE_HOST_COMMAND = 'remoteFinetune.probeHost';
export const REMOVE_HOST_COMMAND = 'remoteFinetune.removeHost';
export const REFRESH_HOSTS_COMMAND = 'remoteFinetune.refreshHosts';

/** Arguments for calling the command programmatically (tests, other features): skips the pickers. */
export interface AddHostArgs {
  readonly host: string;
  /** false adds the host without connecting (probe later from the view). */
  readonly probe?: boolean;
}

export function validateHostInput(value: string): string | undefined {
  return parseHostSpec(value) ? undefined : 'Enter user@host, user@host:port or host (an IPv6 address in brackets: [::1]:22)';
}

async function pickHost(store: HostStore): Promise<string | undefined> {
  const type = '$(edit) Enter user@host[:port]…';
  const present = new Set(store.list().map((h) => h.host));
  const configured = configuredHosts();
  const items: vscode.QuickPickItem[] = [
    { label: type, alwaysShow: true },
    ...(configured.length > 0 ? [{ label: 'from ~/.ssh/config', kind: vscode.QuickPickItemKind.Separator }] : []),
    ...configured.map((h) => ({ label: h, description: present.has(h) ? 'already added' : '' })),
  ];
  const picked = await showQuickPick(items, { title: 'Add GPU Host', placeHolder: 'An ssh config host, or enter one' });
  if (!picked) return undefined;
  if (picked.label !== type) return picked.label;
  return await vscode.window.showInputBox({
    title: 'Add GPU Host',
    prompt: 'user@host[:port]',
    placeHolder: 'ubuntu@132.145.138.210',
    validateInput: validateHostInput,
    ignoreFocusOut: true,
  });
}

/**
 * Connects and probes (the probe cache records it); `save` also keeps the host in the Hosts store. Returns
 * false when the connection failed (and says why).
 */
export async function probeAndSave(store: HostStore, prober: HostProber, host: string, log: vscode.LogOutputChannel, save = true): Promise<boolean> {
  return await withProgress({ location: vscode.ProgressLocation.Notification, title: `Connecting to ${host}…`, cancellable: true }, async (_p, token) => {
    const ac = new AbortController();
    token.onCancellationRequested(() => ac.abort());
    try {
      const probe = await prober.probeNow(host, ac.signal);
      const prev = store.get(host);
      if (save || prev) await store.upsert({ host, addedAt: prev?.addedAt ?? new Date().toISOString(), probe, probedAt: new Date().toISOString() });
      if (probe.kind === 'none') void showWarningMessage(`${host}: ${probe.reason}`);
      return true;
    } catch (err) {
      const msg = (err as Error).message;
      log.error(`host ${host}: ${msg}`);
      if (err instanceof SshFatalError && err.code === 'host-key-changed') void showErrorMessage(msg, { modal: true });
      else if (!ac.signal.aborted) void showErrorMessage(`Could not connect to ${host}: ${msg}`);
      return false;
    }
  });
}

function refuseUntrusted(): boolean {
  if (vscode.workspace.isTrusted) return false;
  void showErrorMessage('Hosts are reached over SSH and run commands: trust this workspace first. Config checks work without trust.');
  return true;
}

export function registerHostCommands(store: HostStore, prober: HostProber, log: vscode.LogOutputChannel): vscode.Disposable {
  return vscode.Disposable.from(
    registerCommand(log, ADD_HOST_COMMAND, async (args?: AddHostArgs): Promise<boolean> => {
      if (refuseUntrusted()) return false;
      const host = args?.host ?? (await pickHost(store));
      if (!host) return false;
      if (validateHostInput(host) !== undefined && !configuredHosts().includes(host)) {
        void showErrorMessage(`Not a host: ${host}`);
        return false;
      }
      if (args?.probe === false) {
        if (!store.get(host)) await store.upsert({ host, addedAt: new Date().toISOString() });
        return true;
      }
      const ok = await probeAndSave(store, prober, host, log);
      if (!ok && !store.get(host)) {
        const add = 'Add Without Probing';
        if ((await showWarningMessage(`${host} was not reached. Add it anyway?`, add)) === add) {
          await store.upsert({ host, addedAt: new Date().toISOString() });
          return true;
        }
      }
      return ok;
    }),
    registerCommand(log, PROBE_HOST_COMMAND, async (node?: { kind: 'host'; host: { host: string } }): Promise<boolean> => {
      if (refuseUntrusted()) return false;
      const host =
        node?.host.host ??
        (await showQuickPick(
          store.list().map((h) => h.host),
          { title: 'Probe GPUs on host' },
        ));
      // Probing an ssh_config host or a past run's host refreshes its GPUs without adding it to the saved hosts.
      return host ? await probeAndSave(store, prober, host, log, false) : false;
    }),
    registerCommand(log, REMOVE_HOST_COMMAND, async (node?: { kind: 'host'; host: { host: string } }): Promise<void> => {
      const host =
        node?.host.host ??
        (await showQuickPick(
          store.list().map((h) => h.host),
          { title: 'Remove host' },
        ));
      if (host) await store.remove(host);
    }),
  );
}
