// The run lifecycle as a state machine: every status change goes through `transition`, so an
// impossible jump (a finished run that starts syncing again) is a bug caught here, not a UI oddity.
import type { RunStatus } from '../store/runRecord';

const NEXT: Readonly<Record<RunStatus, readonly RunStatus[]>> = {
  planned: ['provisioning', 'connecting', 'cancelled', 'failed'],
  provisioning: ['connecting', 'cancelled', 'failed'],
  connecting: ['syncing', 'running', 'cancelled', 'failed'],
  syncing: ['bootstrapping', 'running', 'cancelled', 'failed'],
  bootstrapping: ['running', 'cancelled', 'failed'],
  // A reattached run may learn its end from the host: each way it can end has its own word (events.ts FINISHED_STATUSES).
  running: ['completed', 'failed', 'stopped', 'interrupted', 'preempted', 'stalled', 'budget-stopped'],
  completed: [],
  // Resume (runResume.ts) starts a run that did not complete again in its own folder, as the same run; a
  // preempted or interrupted one may need a new instance first.
  failed: ['connecting'],
  stopped: ['connecting'],
  stalled: ['connecting'],
  'budget-stopped': ['connecting'],
  interrupted: ['provisioning', 'connecting'],
  preempted: ['provisioning', 'connecting'],
  cancelled: [],
};

export function canTransition(from: RunStatus, to: RunStatus): boolean {
  return NEXT[from].includes(to);
}

export function transition(from: RunStatus, to: RunStatus): RunStatus {
  if (from === to) return to;
  if (!canTransition(from, to)) throw new Error(`a run cannot go from ${from} to ${to}`);
  return to;
}
