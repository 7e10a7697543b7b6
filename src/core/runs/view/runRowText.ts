// A Runs view row's words: the run's summary (runSummary.ts), its live link to the host (in memory, from the
// run manager) and the ledger's note on its instance. Kept apart from the view so it is tested without VS Code.
import type { RunRecord } from '../store/runRecord';
import { isTerminal } from '../store/runRecord';
import { runDescription, runTooltipLines } from './runSummary';
import { hostLinkText } from '../sync/hostLink';
import type { HostLink } from '../sync/hostLink';

export function runRowText(
  r: RunRecord,
  link: HostLink | undefined,
  note: string | undefined,
  now: number = Date.now(),
): { description: string; tooltip: string } {
  // An ended run's last link says nothing about it any more.
  const host = isTerminal(r.status) ? '' : hostLinkText(link);
  return {
    description: [runDescription(r, now), host, note].filter((x) => x).join(' · '),
    tooltip: [...runTooltipLines(r, now), ...(host ? [`Host: ${host}`] : []), ...(note ? [`Instance: ${note}`] : [])].join('\n'),
  };
}
