// The run lifecycle as a state machine: every status change goes through `transition`, so an
// impossible jump (a finished run that starts syncing again) is a bug caught here, not a UI oddity.
import type { RunStatus } from './runRecord';

const NEXT: Readonly<Record<RunStatus, readonly RunStatus[]>> = {
  planned: ['provisioning', 'connecting', 'cancelled', 'failed'],
  provisioning: ['connecting', 'cancelled', 'failed'],
  connecting: ['syncing', 'running', 'cancelled', 'failed'],
  syncing: ['bootstrapping', 'running', 'cancelled', 'failed'],
  bootstrapping: ['running', 'cancelled', 'failed'],
  // A reattached run may learn its end from the host; interrupted covers spot reclaims and SIGTERM.
  running: ['completed', 'failed', 'stopped', 'interrupted'],
  completed: [],
  // Resume (runResume.ts) starts a stopped, failed or interrupted run again in its own folder, as the same run.
  failed: ['connecting'],
  stopped: ['connecting'],
  interrupted: ['provisioning', 'connecting'],
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
