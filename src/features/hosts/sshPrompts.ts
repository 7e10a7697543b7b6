// The VS Code side of connecting: the passphrase and password prompts (kept in memory for this window only)
// and the modal that shows an unknown host key's fingerprint. Runs and hosts share one set of options.
import * as vscode from 'vscode';
import { setting, userSetting } from '../settings';
import { showWarningMessage } from '../notify';
import { join } from 'node:path';
import { homedir } from 'node:os';
import type { ConnectOptions, HostKeyPrompt } from '../../core/ssh/session';
import type { SecretPrompt } from '../../core/ssh/auth';
import { chooseSshConfigPath } from '../../core/ssh/sshConfig';

const passphrases = new Map<string, string>();
const passwords = new Map<string, string>();

export async function confirmHostKeyModal(p: HostKeyPrompt): Promise<boolean> {
  const name = p.port === 22 ? p.host : `[${p.host}]:${p.port}`;
  const trust = 'Trust and Connect';
  const choice = await showWarningMessage(
    `The authenticity of host ${name} can't be established.`,
    {
      modal: true,
      detail: `${p.keyType} key fingerprint is ${p.fingerprint}.${p.certAuthorityFile ? `\n\n${p.certAuthorityFile} vouches for this host with a @cert-authority, but host certificates cannot be checked here.` : ''}\n\nCompare it with the fingerprint your provider shows (or \`ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub\` on the host). If you trust it, it is remembered by Remote Fine-Tune; a different key later will be refused.`,
    },
    trust,
  );
  return choice === trust;
}

export async function askPassphrase(keyPath: string): Promise<string | undefined> {
  return await vscode.window.showInputBox({
    title: 'SSH key passphrase',
    prompt: `Passphrase for ${keyPath} (kept in memory for this window only)`,
    password: true,
    ignoreFocusOut: true,
  });
}

/** A password, or what a keyboard-interactive server asks (a PAM password, a one-time code). */
export async function askSecret(p: SecretPrompt): Promise<string | undefined> {
  const where = p.port === 22 ? `${p.user}@${p.host}` : `${p.user}@${p.host}:${p.port}`;
  return await vscode.window.showInputBox({
    title: p.kind === 'password' ? `SSH password for ${where}` : `SSH login to ${where}`,
    prompt: [p.instructions, p.kind === 'password' ? 'Password (kept in memory for this window only)' : p.prompt.trim()].filter(Boolean).join(' — '),
    password: !p.echo,
    ignoreFocusOut: true,
  });
}

/**
 * A non-default ssh_config (remoteFinetune.ssh.configFile) serves people who keep GPU hosts apart, and the
 * demo. Unset, Remote-SSH's own `remote.SSH.configFile` is honoured: its users' hosts live there.
 */
export function sshConfigPathSetting(): string | undefined {
  return chooseSshConfigPath(setting('ssh.configFile'), userSetting<string>('remote.SSH', 'configFile'), homedir());
}

/** Connect options for every SSH connection the extension makes. */
export function createSshConnectOptions(context: vscode.ExtensionContext, log: vscode.LogOutputChannel): ConnectOptions {
  return {
    // Read at each connection, not once: the setting may change, and a window that reattaches to its runs
    // during start-up must still see it when the first connection is made.
    get sshConfigPath(): string | undefined {
      return sshConfigPathSetting();
    },
    hostKeyStore: join(context.globalStorageUri.fsPath, 'known_hosts'),
    confirmHostKey: confirmHostKeyModal,
    askPassphrase,
    passphraseCache: passphrases,
    askSecret,
    passwordCache: passwords,
    log: (m) => log.info(`ssh: ${m}`),
  };
}
