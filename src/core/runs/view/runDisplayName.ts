// Runs of one spec share its name; where several can sit side by side (panel tabs, Compare columns, chart
// legends) the name carries the start time, as the Runs view's rows do, so "sft · 16:41:05" and "sft · 17:02:31"
// are two runs. A record without a readable start time falls back to the tail of its id.
import type { RunRecord } from '../store/runRecord';
import { startLabel } from './runSummary';

export function runDisplayName(r: Pick<RunRecord, 'name' | 'createdAt' | 'id'>, now: number = Date.now()): string {
  return `${r.name} · ${startLabel(r, now) ?? r.id.slice(-6)}`;
}
