// A cloud the target picker cannot offer yet (no API key, no region, no project) is an item that sets what is
// missing, not a dead-end warning row: picking it opens the prompt, then the picker comes back with offers.
// The problems are cloudProviders()'s texts; their "<Cloud>:" prefix names the cloud.

import type { ProviderKind } from '../../providers/provider';

export type TargetFix =
  /** Run an extension command that prompts for the credential (Set Lambda Cloud API Key). */
  | { readonly kind: 'command'; readonly command: string }
  /** Ask for a setting's value in an input box and store it in the user settings. */
  | { readonly kind: 'setting'; readonly setting: string; readonly prompt: string; readonly placeHolder: string }
  /** Open the Settings editor at these settings (more than one value is needed). */
  | { readonly kind: 'openSettings'; readonly query: string }
  /** Run a sign-in command in a terminal the person sees (it opens a browser and waits for them). */
  | { readonly kind: 'terminal'; readonly name: string; readonly command: string };

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
  // The setup line only ("GCP: needs …"): "gcp: HTTP 503 …" from an offers call is no missing setting.
  if (/^GCP: needs/.test(problem)) {
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

const GCP_SIGN_IN: TargetFixItem = {
  label: 'GCP: sign in (Application Default Credentials)…',
  detail: 'Runs gcloud auth application-default login in a terminal; pick Start Training again when it is done.',
  fix: { kind: 'terminal', name: 'GCP sign-in', command: 'gcloud auth application-default login' },
};

/** Which cloud a problem line is about: its "<Cloud>:" or "<kind>:" prefix (offersForTarget's lines). */
export function cloudOfProblem(problem: string): ProviderKind | undefined {
  const m = /^(Lambda Cloud|AWS EC2|GCP|lambda|ec2|gcp):/.exec(problem);
  if (!m) return undefined;
  return m[1] === 'Lambda Cloud' ? 'lambda' : m[1] === 'AWS EC2' ? 'ec2' : m[1] === 'GCP' ? 'gcp' : (m[1] as ProviderKind);
}

/** What GCP lacks, when known: the project setting and Application Default Credentials are two settings. */
export interface GcpSetupState {
  readonly project: boolean;
  readonly credentials: boolean;
}

/**
 * The picker's setup rows: one per missing setting, and only the spec's cloud when it names one (a GCP spec is
 * not offered Lambda's key). A line about a cloud that already has a setup row ("gcp: not configured (the run
 * spec's target.provider)") says nothing more and is dropped; other lines (an offers call that failed) stay as notes.
 */
export function setupRows(
  problems: readonly string[],
  specCloud: ProviderKind | undefined,
  gcp?: GcpSetupState,
): { readonly fixes: readonly TargetFixItem[]; readonly notes: readonly string[] } {
  const mine = problems.filter((p) => !specCloud || cloudOfProblem(p) === undefined || cloudOfProblem(p) === specCloud);
  const fixes: TargetFixItem[] = [];
  const add = (f: TargetFixItem): void => {
    if (!fixes.some((x) => x.label === f.label)) fixes.push(f);
  };
  for (const p of mine) {
    const f = fixForProblem(p);
    if (!f) continue;
    if (cloudOfProblem(p) === 'gcp' && gcp) {
      if (!gcp.project) add(f);
      if (!gcp.credentials) add(GCP_SIGN_IN);
    } else add(f);
  }
  const fixed = new Set(
    mine
      .filter((p) => fixForProblem(p))
      .map(cloudOfProblem)
      .filter((c) => c),
  );
  const notes = mine.filter((p) => !fixForProblem(p) && !(/not configured/.test(p) && fixed.has(cloudOfProblem(p))));
  return { fixes, notes };
}

/** A region or project id as the clouds spell them; anything else is refused in the input box. */
export function validateSettingValue(setting: string, value: string): string | undefined {
  const v = value.trim();
  if (setting === 'remoteFinetune.aws.region') return /^[a-z]{2}(-[a-z]+)+-\d+$/.test(v) ? undefined : 'An AWS region such as us-east-1';
  if (setting === 'remoteFinetune.gcp.project')
    return /^[a-z][a-z0-9-]{4,28}[a-z0-9]$/.test(v) ? undefined : 'A project id: 6–30 lowercase letters, digits or hyphens';
  return v ? undefined : 'A value is needed';
}
