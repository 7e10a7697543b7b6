// The values of the runs' context keys, apart from VS Code so they are tested without it.
import type { RunStore } from '../../core/runs/store/runStore';

export const RUNS_CONTEXT = {
  hasRuns: 'remoteFinetune.hasRuns',
  hasLiveRuns: 'remoteFinetune.hasLiveRuns',
} as const;

export interface RunsContextState {
  readonly hasRuns: boolean;
  readonly hasLiveRuns: boolean;
}

export function runsContextState(store: Pick<RunStore, 'all' | 'live'>): RunsContextState {
  return { hasRuns: store.all().length > 0, hasLiveRuns: store.live().length > 0 };
}
