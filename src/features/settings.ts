// Settings that decide where credentials or commands go are read from the user's own settings only: a
// repository's .vscode/settings.json (workspace or folder value) must never point the W&B key at another
// server, swap the interpreter that runs on a host, or pick the ssh_config. They are also declared with
// scope "machine" and listed in capabilities.untrustedWorkspaces.restrictedConfigurations (package.json);
// reading inspect().globalValue here holds even where VS Code would still merge a workspace value.
import * as vscode from 'vscode';

export const USER_ONLY_SETTINGS = [
  'remoteFinetune.wandb.baseUrl', 'remoteFinetune.remotePython', 'remoteFinetune.ssh.configFile', 'remoteFinetune.lambda.apiUrl',
  'remoteFinetune.aws.region', 'remoteFinetune.gcp.project', 'remoteFinetune.gcp.zone', 'remoteFinetune.cloud.sshPort',
  'remoteFinetune.cloud.reconcileOnStartup', 'remoteFinetune.notify.webhookUrl', 'remoteFinetune.notify.ntfyTopic',
  'remoteFinetune.notify.ntfyServer',
] as const;

/** `section.key` from the user's (global) settings, else its default; workspace and folder values are ignored. */
export function userSetting<T>(section: string, key: string): T | undefined {
  const i = vscode.workspace.getConfiguration(section).inspect<T>(key);
  return i?.globalValue ?? i?.defaultValue;
}
