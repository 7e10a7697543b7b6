// Start Training's one question about the run's variables: the confirmation sees which stored tokens a workspace
// variable would send to an unapproved host, and its answer either starts nothing, or approves those hosts
// (remembered) and starts with the tokens. There is no "start anyway without them": the workspace's server
// would still receive the run's requests, and the person has just been told they do not know it.
import { approveHeld, isOriginApproved } from '../store/originApprovals';
import type { ApprovalState } from '../store/originApprovals';
import { runEnv } from './runEnv';
import type { RunEnv, RunEnvInput } from './runEnv';

/** The env the run starts with, or undefined when the person did not confirm (nothing is written anywhere). */
export async function confirmRunEnv(
  input: Omit<RunEnvInput, 'approved'>,
  state: ApprovalState,
  confirm: (r: RunEnv) => PromiseLike<boolean>,
): Promise<RunEnv | undefined> {
  const approved = (secret: string, origin: string): boolean => isOriginApproved(state, secret, origin);
  const first = runEnv({ ...input, approved });
  if (!(await confirm(first))) return undefined;
  if (first.held.length === 0) return first;
  await approveHeld(state, first.held);
  return runEnv({ ...input, approved });
}
