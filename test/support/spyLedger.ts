// A ledger that remembers every state it was given, so a test can check the path of a run's entry (launching,
// launch-unknown, terminated) as well as where it ended.
import { Ledger } from '../../src/core/runs/store/ledger';
import type { LedgerEntry } from '../../src/core/runs/store/ledger';

export class SpyLedger extends Ledger {
  readonly states: string[] = [];

  override update(runId: string, patch: Partial<Omit<LedgerEntry, 'runId' | 'updatedAt'>>): Promise<LedgerEntry> {
    if (patch.state) this.states.push(patch.state);
    return super.update(runId, patch);
  }
}
