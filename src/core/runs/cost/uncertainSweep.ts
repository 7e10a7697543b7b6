// The orphan sweep beyond activation: while the ownership ledger holds an entry whose instance may still bill
// unseen (uncertainEntries: a launch of unknown outcome, a failed cleanup, a recent teardown), the sweep runs
// every intervalMs; with none, a tick only reads the ledger file.
import { uncertainEntries } from '../store/ledger';
import type { LedgerEntry } from '../store/ledger';

export interface UncertainSweep {
  stop(): void;
}

export function startUncertainSweep(
  entries: () => Promise<readonly LedgerEntry[]>,
  sweep: () => Promise<void>,
  intervalMs: number,
  onError?: (err: unknown) => void,
): UncertainSweep {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    void entries()
      .then((all) => (uncertainEntries(all).length > 0 ? sweep() : undefined))
      .catch((err: unknown) => onError?.(err))
      .finally(() => {
        running = false;
      });
  }, intervalMs);
  timer.unref?.();
  return { stop: () => clearInterval(timer) };
}
