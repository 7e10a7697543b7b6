// The variables a run's 0600 env file gets, decided before the Start confirmation: the spec's env_file, the
// user's stored tokens the run uses, the MLflow setting. A stored token that a workspace variable would send to
// a server the person has not approved (HF_ENDPOINT, WANDB_BASE_URL, a proxy, …) is held back, and the
// confirmation names the variable and its host; approving remembers the origin and builds the env again.
import { isShellName, parseDotenv } from '../../config/dotenv';
import { carriedSecrets, endpointRedirects } from '../../config/endpointVariables';
import type { EndpointRedirect } from '../../config/endpointVariables';
import { collectEnv, dropUnneededSecrets } from './runPlan';
import { withTrackingSettings } from '../hosts/trackingEnv';
import type { RunSpec } from '../../config/runSpecDefaults';

export interface RunEnvInput {
  /** The spec's env_file text (workspace content), when it has one. */
  readonly envFileText?: string;
  /** The user's stored tokens by env name (SecretStorage), undefined where none is stored. */
  readonly stored: Readonly<Record<string, string | undefined>>;
  /** The run's spec; absent when none is kept (a relaunch of a run whose spec is gone): read as one that asks for nothing. */
  readonly spec?: RunSpec;
  /** The user's remoteFinetune.mlflow.trackingUri setting, '' when unset. */
  readonly mlflowTrackingUri?: string;
  /** True when the person has approved sending the stored `secret` to `origin`. */
  readonly approved: (secret: string, origin: string) => boolean;
}

export interface HeldSecrets {
  readonly redirect: EndpointRedirect;
  /** Stored tokens (env names) that would go to the redirect's origin and are not approved for it. */
  readonly secrets: readonly string[];
}

export interface RunEnv {
  /** What the host's env file gets: held tokens are not in it. */
  readonly env: Record<string, string>;
  /** Tokens the run does not use (dropUnneededSecrets). */
  readonly dropped: readonly string[];
  /** Every server the workspace's variables point credentials or data at, approved or not. */
  readonly redirects: readonly EndpointRedirect[];
  /** The redirects that need the person's approval before a stored token goes with the run. */
  readonly held: readonly HeldSecrets[];
  /** The stored tokens (env names) that `env` carries to the host. */
  readonly sent: readonly string[];
}

function workspaceVariables(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (text !== undefined) for (const e of parseDotenv(text).entries) if (isShellName(e.key)) out[e.key] = e.value;
  return out;
}

export function runEnv(input: RunEnvInput): RunEnv {
  const redirects = endpointRedirects(workspaceVariables(input.envFileText));
  const all = dropUnneededSecrets(collectEnv(input.envFileText, input.stored), input.spec);
  // The stored tokens that would really reach the host (the run uses them).
  const travelling = Object.entries(input.stored)
    .filter(([k, v]) => v && all.env[k] === v)
    .map(([k]) => k);
  const held: HeldSecrets[] = [];
  for (const redirect of redirects) {
    const secrets = carriedSecrets(redirect, travelling).filter((s) => !input.approved(s, redirect.origin));
    if (secrets.length > 0) held.push({ redirect, secrets });
  }
  const holding = new Set(held.flatMap((h) => h.secrets));
  // Without the held tokens the workspace's own value of that name (if it has one) is what the run gets.
  const stored = Object.fromEntries(Object.entries(input.stored).filter(([k]) => !holding.has(k)));
  const env = holding.size > 0 ? dropUnneededSecrets(collectEnv(input.envFileText, stored), input.spec).env : all.env;
  const sent = travelling.filter((k) => !holding.has(k));
  return { env: withTrackingSettings(env, input.mlflowTrackingUri ?? ''), dropped: all.dropped, redirects, held, sent };
}

/** The confirmation's sentences, one per redirect: the variable, its host, and which stored tokens go there. */
export function redirectLines(r: RunEnv, envFileName: string): string[] {
  return r.redirects.map((d) => {
    const points = `${d.variable} in ${envFileName} points ${d.what} at ${d.host}`;
    const h = r.held.find((x) => x.redirect === d);
    if (h) return `${points}: your stored ${h.secrets.join(' and ')} would go there, and you have not approved that host.`;
    const goes = carriedSecrets(d, r.sent);
    return goes.length > 0 ? `${points}, with your stored ${goes.join(' and ')} (host approved before).` : `${points}.`;
  });
}
