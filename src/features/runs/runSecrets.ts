// The run tokens kept in VS Code's SecretStorage, by the env name the host gets them as: read by Start
// Training and again by a spot relaunch after a reload (runServices.ts), which never stores them.
import type * as vscode from 'vscode';

/** Secret-store names of the tokens a run's env file gets. */
export const SECRET_NAMES: Readonly<Record<string, string>> = {
  HF_TOKEN: 'remoteFinetune.hf.token',
  WANDB_API_KEY: 'remoteFinetune.wandb.apiKey',
};

export async function gatherSecrets(context: vscode.ExtensionContext): Promise<Record<string, string | undefined>> {
  const out: Record<string, string | undefined> = {};
  for (const [envName, secretName] of Object.entries(SECRET_NAMES)) out[envName] = await context.secrets.get(secretName);
  return out;
}
