// The Runs view item's contextValue: package.json's view/item/context menus match it, so an action is offered only
// on the runs where it can work (Stop on a live run, Terminate on one whose instance may still bill, the adapter
// actions on a run that saved its final model, Resume where a checkpoint may be picked up).
import type { RunRecord, RunStatus } from '../store/runRecord';
import { isTerminal } from '../store/runRecord';
import { mayOfferResume } from '../lifecycle/runResume';

const ENDED_WITH_OUTPUTS: ReadonlySet<RunStatus> = new Set<RunStatus>(['completed', 'stopped', 'budget-stopped']);

/** contextValue drives which actions the menu shows: run, run.live, run.done.outputs, ….instance, ….resumable */
export function runContextValue(r: RunRecord): string {
  const v = ['run'];
  v.push(isTerminal(r.status) ? 'done' : 'live');
  // A run that ended by finishing or by a graceful stop saved its final model; a failed, stalled, preempted or
  // interrupted one did not, so the adapter actions (Reveal, Try, Merge, Push) are not offered on it.
  if (ENDED_WITH_OUTPUTS.has(r.status)) v.push('outputs');
  if (r.instanceId && r.finishedAction !== 'terminated') v.push('instance');
  if (r.machines?.length) v.push('multinode');
  if (mayOfferResume(r)) v.push('resumable');
  return v.join('.');
}
