// Settings that decide where credentials or commands go are read from the user's own settings only: a
// repository's .vscode/settings.json (workspace or folder value) must never point the W&B key at another
// server, swap the interpreter that runs on a host, or pick the ssh_config. They are also declared with
// scope "machine" and listed in capabilities.untrustedWorkspaces.restrictedConfigurations (package.json);
// reading inspect().globalValue here holds even where VS Code would still merge a workspace value.
import * as vscode from 'vscode';

/** The extension's user-only settings and their types (package.json declares the same, machine-scoped). */
interface UserSettingTypes {
  'wandb.baseUrl': string;
  remotePython: string;
  'ssh.configFile': string;
  'lambda.apiUrl': string;
  'aws.region': string;
  'gcp.project': string;
  'gcp.zone': string;
  'cloud.sshPort': number;
  'cloud.reconcileOnStartup': boolean;
  'notify.webhookUrl': string;
  'notify.ntfyTopic': string;
  'notify.ntfyServer': string;
  'mlflow.trackingUri': string;
  'tryAdapter.localPython': string;
}
type UserSettingKey = keyof UserSettingTypes;

const USER_SETTING_KEYS: readonly UserSettingKey[] = [
  'wandb.baseUrl',
  'remotePython',
  'ssh.configFile',
  'lambda.apiUrl',
  'aws.region',
  'gcp.project',
  'gcp.zone',
  'cloud.sshPort',
  'cloud.reconcileOnStartup',
  'notify.webhookUrl',
  'notify.ntfyTopic',
  'notify.ntfyServer',
  'mlflow.trackingUri',
  'tryAdapter.localPython',
];

export const USER_ONLY_SETTINGS: readonly string[] = USER_SETTING_KEYS.map((k) => `remoteFinetune.${k}`);

/** One of the extension's user-only settings, typed; workspace and folder values are ignored. */
export function setting<K extends UserSettingKey>(key: K): UserSettingTypes[K] | undefined {
  return userSetting<UserSettingTypes[K]>('remoteFinetune', key);
}

/** `section.key` from the user's (global) settings, else its default; workspace and folder values are ignored.
 * For another extension's setting (remote.SSH.configFile); ours go through setting(). */
export function userSetting<T>(section: string, key: string): T | undefined {
  const i = vscode.workspace.getConfiguration(section).inspect<T>(key);
  return i?.globalValue ?? i?.defaultValue;
}

/** Writes one of the extension's settings into the user's (global) settings, where setting() reads it. */
export async function setUserSetting(fullName: string, value: string): Promise<void> {
  const key = fullName.replace(/^remoteFinetune\./, '');
  if (!(USER_SETTING_KEYS as readonly string[]).includes(key)) throw new Error(`${fullName} is not a setting of this extension`);
  await vscode.workspace.getConfiguration('remoteFinetune').update(key, value, vscode.ConfigurationTarget.Global);
}
