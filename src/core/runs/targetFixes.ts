// A cloud the target picker cannot offer yet (no API key, no region, no project) is an item that sets what is
// missing, not a dead-end warning row: picking it opens the prompt, then the picker comes back with offers.
// The problems are cloudProviders()'s texts; their "<Cloud>:" prefix names the cloud.

export type TargetFix =
  /** Run an extension command that prompts for the credential (Set Lambda Cloud API Key). */
  | { readonly kind: 'command'; readonly command: string }
  /** Ask for a setting's value in an input box and store it in the user settings. */
  | { readonly kind: 'setting'; readonly setting: string; readonly prompt: string; readonly placeHolder: string }
  /** Open the Settings editor at these settings (more than one value is needed). */
  | { readonly kind: 'openSettings'; readonly query: string };

export interface TargetFixItem {
  readonly label: string;
  readonly detail: string;
  readonly fix: TargetFix;
}

export const SET_LAMBDA_KEY_COMMAND_ID = 'remoteFinetune.setLambdaApiKey';

export function fixForProblem(problem: string): TargetFixItem | undefined {
  if (/^Lambda Cloud:.*API key/i.test(problem)) {
    return {
      label: 'Lambda Cloud: set API key…',
      detail: 'Its offers appear once the key is stored (VS Code secret storage).',
      fix: { kind: 'command', command: SET_LAMBDA_KEY_COMMAND_ID },
    };
  }
  if (/^AWS EC2:.*region/i.test(problem)) {
    return {
      label: 'AWS EC2: set region…',
      detail: "Credentials come from the AWS SDK's default chain (env, ~/.aws); the region is asked here.",
      fix: { kind: 'setting', setting: 'remoteFinetune.aws.region', prompt: 'AWS region for EC2 offers and launches', placeHolder: 'us-east-1' },
    };
  }
  if (/^GCP:/i.test(problem)) {
    return {
      label: 'GCP: set project…',
      detail: 'Also needs Application Default Credentials (gcloud auth application-default login).',
      fix: {
        kind: 'setting',
        setting: 'remoteFinetune.gcp.project',
        prompt: 'Google Cloud project id for GPU offers and launches',
        placeHolder: 'my-project-123',
      },
    };
  }
  return undefined;
}

/** A region or project id as the clouds spell them; anything else is refused in the input box. */
export function validateSettingValue(setting: string, value: string): string | undefined {
  const v = value.trim();
  if (setting === 'remoteFinetune.aws.region') return /^[a-z]{2}(-[a-z]+)+-\d+$/.test(v) ? undefined : 'An AWS region such as us-east-1';
  if (setting === 'remoteFinetune.gcp.project')
    return /^[a-z][a-z0-9-]{4,28}[a-z0-9]$/.test(v) ? undefined : 'A project id: 6–30 lowercase letters, digits or hyphens';
  return v ? undefined : 'A value is needed';
}
