// "<run> is running" is said once after a start, as a notification that goes away on its own: when the run ends
// (so the end's notification never sits beside it) or after a short while, whichever comes first. A plain
// information message cannot be taken back, which is how "is running" stayed next to "failed".

/** The run manager's end event, as much of it as the notice needs. */
export interface RunEnds {
  onFinished(l: (f: { readonly record: { readonly id: string } }) => void): { dispose(): void };
}

export const RUNNING_NOTICE_MS = 12_000;

/** Resolves when run `runId` ends or after `ms`, whichever is first; what keeps a progress notification shown. */
export function runningNoticeLifetime(runs: RunEnds, runId: string, ms: number = RUNNING_NOTICE_MS): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      sub.dispose();
      resolve();
    };
    const sub = runs.onFinished((f) => {
      if (f.record.id === runId) done();
    });
    const timer = setTimeout(done, ms);
    timer.unref?.();
  });
}
