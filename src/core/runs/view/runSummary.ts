// The words a run is shown with (Runs view, status bar, end-of-run notification). Pure, so tested
// without VS Code.
import type { RunRecord, RunStatus } from '../store/runRecord';
import type { RunEvent } from '../../telemetry/events';
import { isTerminal } from '../store/runRecord';
import { describeAttempt } from '../lifecycle/runAttempts';
import { estimateVsActualLines } from '../cost/estimateVsActual';
import { usedHardwareLabel } from './runHardware';
import { failureShort } from './failureReason';
import { liveProgressLine, stepWords } from './runProgress';
import { formatDuration } from '../cost/duration';

function parseTime(iso: string | undefined): number | undefined {
  if (!iso) return undefined;
  const t = Date.parse(iso);
  return Number.isFinite(t) ? t : undefined;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const p2 = (n: number): string => String(n).padStart(2, '0');
const hhmm = (d: Date): string => `${p2(d.getHours())}:${p2(d.getMinutes())}`;

/**
 * When the run started, in local time: "16:41:05" today (runs of one spec started within a minute still
 * differ), "Nov 24 16:41" on another day. Several runs of one spec share a name; the start time is what
 * tells them apart in a list.
 */
export function startLabel(r: Pick<RunRecord, 'createdAt'>, now: number = Date.now()): string | undefined {
  const t = parseTime(r.createdAt);
  if (t === undefined) return undefined;
  const d = new Date(t);
  const n = new Date(now);
  const sameDay = d.getFullYear() === n.getFullYear() && d.getMonth() === n.getMonth() && d.getDate() === n.getDate();
  return sameDay ? `${hhmm(d)}:${p2(d.getSeconds())}` : `${MONTHS[d.getMonth()]} ${d.getDate()} ${hhmm(d)}`;
}

/** Wall time from the start to the end (or to now while it runs). */
export function runDurationMs(r: Pick<RunRecord, 'createdAt' | 'updatedAt' | 'finishedAt' | 'status'>, now: number = Date.now()): number | undefined {
  const start = parseTime(r.createdAt);
  if (start === undefined) return undefined;
  // Records written before finishedAt existed end at their last update, which is close to the end.
  const end = isTerminal(r.status) ? (parseTime(r.finishedAt) ?? parseTime(r.updatedAt)) : now;
  return end === undefined ? undefined : Math.max(0, end - start);
}

/** The Runs view row: start time, status, step, loss, duration, GPU, cost. */
/** The status as the row says it: a run waiting in its host's queue says so, with its place. */
/** "attempt 2/3" once a spot run is on a replacement instance. */
export function attemptLabel(r: RunRecord): string | undefined {
  const n = r.attempts?.length ?? 0;
  return n > 1 ? `attempt ${n}${r.maxAttempts ? `/${r.maxAttempts}` : ''}` : undefined;
}

function statusWords(r: RunRecord): string {
  if (r.status === 'running' && r.queuePosition !== undefined) return r.queuePosition === 1 ? 'queued (next)' : `queued (#${r.queuePosition})`;
  if (r.status === 'running' && r.staging) {
    const gb = (n: number): string => (n >= 1e9 ? `${(n / 1e9).toFixed(1)} GB` : `${(n / 1e6).toFixed(0)} MB`);
    return `staging data ${gb(r.staging.bytesDone)}${r.staging.bytesTotal !== undefined ? ` of ${gb(r.staging.bytesTotal)}` : ''}`;
  }
  // A failure the runner recognised is named with the word, so a glance tells an OOM from a crash.
  const why = r.status === 'failed' ? failureShort(r.failure) : undefined;
  if (why) return `failed (${why})`;
  return r.status;
}

/**
 * The run's ends and restarts in order, one word each: "interrupted → resumed → completed" for a run its host
 * restarted by itself, "stopped → resumed → running" for one resumed by hand. Undefined for a run that never resumed.
 */
export function endStatesLine(r: Pick<RunRecord, 'resumes' | 'status'>): string | undefined {
  if (!r.resumes?.length) return undefined;
  return [...r.resumes.flatMap((x) => [x.from, 'resumed']), r.status].join(' → ');
}

export function runDescription(r: RunRecord, now: number = Date.now()): string {
  const parts: string[] = [];
  const start = startLabel(r, now);
  if (start) parts.push(start);
  parts.push(statusWords(r));
  const attempt = attemptLabel(r);
  if (attempt) parts.push(attempt);
  const steps = stepWords(r, now);
  if (steps) parts.push(steps);
  if (r.lastLoss !== undefined) parts.push(`loss ${r.lastLoss.toFixed(4)}`);
  const ms = runDurationMs(r, now);
  if (ms !== undefined) parts.push(formatDuration(ms));
  const hardware = usedHardwareLabel(r);
  if (hardware) parts.push(hardware);
  if (r.costUsd !== undefined) parts.push(`$${r.costUsd.toFixed(2)}`);
  if (r.origin === 'found') parts.push('started elsewhere');
  return parts.join(' · ');
}

/** The Runs view tooltip, one fact a line: what the row says and where things are. */
export function runTooltipLines(r: RunRecord, now: number = Date.now()): string[] {
  const lines = [r.name === r.id ? r.id : `${r.name} (${r.id})`];
  lines.push(
    `${r.provider}${r.instanceId ? ` ${r.instanceId}` : ''}${r.host ? ` · ${r.host}` : ''}${usedHardwareLabel(r) ? ` · ${usedHardwareLabel(r)}` : ''}`,
  );
  const started = parseTime(r.createdAt);
  if (started !== undefined) lines.push(`Started ${new Date(started).toLocaleString()}`);
  const ms = runDurationMs(r, now);
  if (ms !== undefined) lines.push(`Duration ${formatDuration(ms)}${isTerminal(r.status) ? '' : ' so far'}`);
  const progress = [
    statusWords(r),
    ...(r.lastStep !== undefined ? [`step ${r.lastStep}`] : []),
    ...(r.lastLoss !== undefined ? [`loss ${r.lastLoss.toFixed(4)}`] : []),
    ...(r.costUsd !== undefined ? [`$${r.costUsd.toFixed(2)}`] : []),
  ];
  lines.push(progress.join(' · '));
  // Step of total, time left at the measured rate and, for a billed run, the cost so far and at the end.
  const live = isTerminal(r.status) ? undefined : liveProgressLine(r, now);
  if (live) lines.push(`Progress: ${live}`);
  if (r.gpuIndices && r.gpuIndices.length > 0)
    lines.push(`GPU${r.gpuIndices.length > 1 ? 's' : ''} ${r.gpuIndices.join(', ')} of the host (CUDA_VISIBLE_DEVICES)`);
  // One line per instance the run used: where, when, how it ended, what it cost.
  if (r.attempts && (r.attempts.length > 1 || r.maxAttempts)) for (const a of r.attempts) lines.push(describeAttempt(a, r.maxAttempts));
  // Each Resume (runResume.ts): the same run went on from its checkpoint.
  for (const x of r.resumes ?? [])
    lines.push(
      `Resumed${x.by === 'host' ? ' by the host after a restart' : ''} (was ${x.from})${x.fromStep !== undefined ? ` from checkpoint-${x.fromStep}` : ''} at ${new Date(x.at).toLocaleString()}`,
    );
  const history = endStatesLine(r);
  if (history) lines.push(`History: ${history}`);
  // Estimated against measured VRAM, time and cost, with the error (issue 32.4).
  if (isTerminal(r.status)) lines.push(...estimateVsActualLines(r));
  if (r.artifactsDir) lines.push(`Adapter ${r.artifactsDir}`);
  const git = gitLine(r);
  if (git) lines.push(git);
  if (r.failure) lines.push(`${r.failure.message}${r.failure.hint ? `\nFix: ${r.failure.hint}` : ''}`);
  return lines;
}

/** Where the synced folder stood in git at the start (runHistory.ts), in one line. */
function gitLine(r: RunRecord): string | undefined {
  if (!r.git) return undefined;
  if (!r.git.repo) return 'Git: not a repository';
  const state = r.git.dirty === undefined ? '' : r.git.dirty ? ' (uncommitted changes)' : ' (clean)';
  return `Git ${r.git.commit ? r.git.commit.slice(0, 10) : 'no commit'}${r.git.branch ? ` on ${r.git.branch}` : ''}${state}`;
}

/** How long a finished run stays in the status bar after it ends. */
export const FINISHED_LINGER_MS = 5 * 60_000;

const END_ICONS: Partial<Record<RunStatus, string>> = {
  completed: '$(pass)',
  failed: '$(error)',
  stopped: '$(debug-stop)',
  interrupted: '$(debug-pause)',
  preempted: '$(cloud)',
  stalled: '$(watch)',
  'budget-stopped': '$(credit-card)',
  cancelled: '$(circle-slash)',
};

/**
 * The status bar entry for a run: live, its progress; ended less than `lingerMs` ago, "finished" (or how it
 * ended) with its last step, loss and length; otherwise nothing.
 */
export function statusBarState(
  r: RunRecord,
  gpuUtil: number | undefined,
  now: number = Date.now(),
  lingerMs = FINISHED_LINGER_MS,
): { text: string; tooltip: string } | undefined {
  const where = r.host ?? r.provider;
  if (!isTerminal(r.status)) {
    const live = liveProgressLine(r, now);
    return {
      text: statusBarText(r, gpuUtil, now),
      tooltip: `${r.name} on ${where}: ${r.status}.${live ? ` ${live}.` : ''} Click to open its logs, GPU and metrics.`,
    };
  }
  const end = parseTime(r.finishedAt) ?? parseTime(r.updatedAt);
  if (end === undefined || now - end > lingerMs || now < end - 60_000) return undefined;
  const parts = [`${END_ICONS[r.status] ?? ''} ${r.name} ${r.status === 'completed' ? 'finished' : r.status}`.trim()];
  if (r.lastStep !== undefined) parts.push(`step ${r.lastStep}`);
  if (r.lastLoss !== undefined) parts.push(`loss ${r.lastLoss.toFixed(3)}`);
  const ms = runDurationMs(r, now);
  if (ms !== undefined) parts.push(formatDuration(ms));
  const adapter = r.artifactsDir ? ` Adapter in ${r.artifactsDir}.` : '';
  return { text: parts.join(' · '), tooltip: `${r.name} on ${where}: ${r.status}.${adapter} Click to open its logs, GPU and metrics.` };
}

export function statusBarText(r: RunRecord, gpuUtil: number | undefined, now: number = Date.now()): string {
  const parts = [`$(pulse) ${r.name}`];
  const steps = stepWords(r, now);
  if (steps) parts.push(steps);
  if (r.lastLoss !== undefined) parts.push(`loss ${r.lastLoss.toFixed(3)}`);
  if (gpuUtil !== undefined) parts.push(`GPU ${Math.round(gpuUtil)}%`);
  if (r.costUsd !== undefined) parts.push(`$${r.costUsd.toFixed(2)}`);
  return parts.join(' · ');
}

export interface FinishedSummary {
  readonly record: RunRecord;
  readonly failure?: { readonly signature?: string; readonly message: string; readonly hint?: string };
}

const END_WORDS: Partial<Record<RunStatus, string>> = {
  preempted: 'the cloud took the instance back',
  stalled: 'no training step for the stall limit, so the host stopped it',
  'budget-stopped': 'the budget was reached, so the host stopped it',
  interrupted: 'it was ended by a signal',
};

function step(r: RunRecord): string {
  return r.lastStep !== undefined ? ` at step ${r.lastStep}` : '';
}

/** One sentence for the end of a run: outcome, recognised failure and fix, cost, what became of the instance. */
export function finishedMessage(f: FinishedSummary, extraAdvice?: string): { text: string; error: boolean } {
  const r = f.record;
  const cost = r.costUsd !== undefined ? ` Cost $${r.costUsd.toFixed(2)}.` : '';
  const teardown = r.finishedAction ? ` Instance ${r.finishedAction}.` : '';
  if (r.status === 'completed')
    return { text: `${r.name} completed${r.artifactsDir ? `; adapter downloaded to ${r.artifactsDir}` : ''}.${cost}${teardown}`, error: false };
  if (r.status === 'stopped') return { text: `${r.name} stopped.${cost}${teardown}`, error: false };
  // Neither failed nor completed: the words say what ended it and that its checkpoint is there to resume from.
  const ended = END_WORDS[r.status];
  if (ended) return { text: `${r.name} ${r.status}: ${ended}${step(r)}.${cost}${teardown}`, error: r.status === 'stalled' };
  const why = f.failure ? ` ${f.failure.message.slice(0, 300)}` : '';
  const fix = f.failure?.hint ? ` Fix: ${f.failure.hint}` : '';
  const advice = extraAdvice ? ` ${extraAdvice}` : '';
  return { text: `${r.name} ${r.status}.${why}${fix}${advice}${cost}${teardown}`, error: true };
}

/** The warning for a `stalled` event (python-runner stall.py): what the host saw and what it does about it. */
export function stalledMessage(r: Pick<RunRecord, 'name'>, e: Extract<RunEvent, { type: 'stalled' }>): string {
  const seen = [
    ...(e.process_state ? [`the training process is ${e.process_state}`] : []),
    ...(e.gpu_util_pct !== undefined ? [`GPU ${Math.round(e.gpu_util_pct)}% busy`] : []),
  ];
  const what = e.action === 'stop' ? 'the host is saving what it can and stopping the run' : 'the run goes on (watchdog.on_stall: stop would end it)';
  return (
    `${r.name} stalled${e.last_step !== undefined ? ` at step ${e.last_step}` : ''}: no optimizer step for ` +
    `${formatDuration(e.stalled_s * 1000)} (limit ${formatDuration(e.threshold_s * 1000)})${seen.length ? `; ${seen.join(', ')}` : ''}; ${what}.`
  );
}

/** One line for the extension log when a run ends: outcome, step, loss, length, cost and where the adapter went. */
export function endLogLine(f: FinishedSummary, now: number = Date.now()): string {
  const r = f.record;
  const ms = runDurationMs(r, now);
  const facts = [
    ...(r.lastStep !== undefined ? [`step ${r.lastStep}`] : []),
    ...(r.lastLoss !== undefined ? [`loss ${r.lastLoss.toFixed(4)}`] : []),
    ...(ms !== undefined ? [formatDuration(ms)] : []),
    ...(r.costUsd !== undefined ? [`$${r.costUsd.toFixed(2)}`] : []),
  ];
  const adapter = r.artifactsDir ? `; adapter at ${r.artifactsDir}` : r.status === 'completed' ? '; no adapter downloaded' : '';
  const why = f.failure ? `: ${f.failure.message.slice(0, 300)}` : '';
  return `[${r.id}] ${r.name} ${r.status}${why}${facts.length ? ` (${facts.join(', ')})` : ''}${adapter}`;
}
