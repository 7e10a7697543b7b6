// The modal that starts a run: where, fit, price and budget, what is billed, what is synced, where the
// variables and outputs go, and — when a workspace variable would send a stored token to a host the person has
// not approved — a warning whose button approves those hosts. Text only: the command shows it.
import { outputDestinations } from './runPlan';
import { redirectLines } from './runEnv';
import type { RunEnv } from './runEnv';
import type { StartReady } from './startSteps';
import { billedResources } from '../cost/billedResources';
import { sessionCredentialsWarning } from '../hosts/awsSessionCredentials';

export interface StartConfirmation {
  readonly title: string;
  readonly detail: string;
  readonly button: string;
  /** A warning (hosts to approve), not an information message. */
  readonly warn: boolean;
}

/** `hardwareLine`: what the host's probe found when it is not what the spec asks for (after Start Anyway): said first. */
export function startConfirmation(ready: StartReady, r: RunEnv, hardwareLine: string | undefined): StartConfirmation {
  const { plan, runSpec, choice, envRead, envName } = ready;
  const held = r.held.length > 0;
  const variables = [...new Set(r.held.map((h) => h.redirect.variable))].join(', ');
  const hosts = [...new Set(r.held.map((h) => h.redirect.host))];
  const tokens = [...new Set(r.held.flatMap((h) => h.secrets))].join(' and ');
  const button = held ? `Approve ${hosts.length > 1 ? 'Hosts' : 'Host'} and Start` : 'Start';
  const detail = [
    ...(hardwareLine ? [hardwareLine] : []),
    ready.fitText + ready.measuredLine,
    ready.priceLine,
    ...(ready.budgetText ? [ready.budgetText] : []),
    ...(choice.kind === 'cloud' ? billedResources({ offer: choice.offer, spec: runSpec, teardown: plan.teardown, canStop: choice.provider.canStop }) : []),
    `The folder ${ready.folderName} is synced (.gitignore and .finetuneignore respected).`,
    ...(envRead ? [`The variables of ${envName} are written to the host as a 0600 file (never on a command line).`] : []),
    ...[sessionCredentialsWarning(r.env, runSpec, ready.estimated?.hours)].filter((w): w is string => w !== undefined),
    ...redirectLines(r, envName),
    ...outputDestinations(runSpec),
    ...(held ? [`${button} remembers ${hosts.length > 1 ? 'these hosts' : 'this host'} for your ${tokens}. Without it nothing starts.`] : []),
  ].join('\n');
  const title = held
    ? `Start ${plan.name} on ${ready.where}? ${variables} in ${envName} would send your stored ${tokens} to ${hosts.join(', ')}, ${hosts.length > 1 ? 'hosts' : 'a host'} you have not approved.`
    : `Start ${plan.name} on ${ready.where}?`;
  return { title, detail, button, warn: held };
}
