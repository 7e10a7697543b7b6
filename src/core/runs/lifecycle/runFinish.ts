// Finishing a run: how it ended (events.jsonl's finished and error lines, then the wrapper's exit code), its
// artifacts downloaded into the workspace, its instance torn down per policy, the listeners told.
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { runStatus } from '../../ssh/detachedJob';
import { MIRRORED_NAMES, readRunEvents, runFile } from '../store/runFolder';
import type { RunEvent } from '../../telemetry/events';
import { mayActOn } from '../../telemetry/eventAuth';
import { finishGuarded, terminateRun } from './teardown';
import { endedAttemptsCost } from './runAttempts';
import type { AttemptEnd } from './runAttempts';
import { closeAttempt } from './runRelaunch';
import type { RunRecord, RunStatus } from '../store/runRecord';
import { isTerminal } from '../store/runRecord';
import { artifactPlan, localOutputsDir } from '../sync/artifactPlan';
import { rootOf } from '../store/runPaths';
import { fetchHostHistory, finalMetricsOf } from '../store/runHistory';
import type { HistoryFile } from '../store/runFolder';
import { decisiveFailure } from './multiNode';
import { explainFailure, readTail } from '../view/failureReason';
import type { RunManagerContext, RunFinished } from './runTypes';
import type { RunMeasured } from '../store/runMeasuredSchema';

/** Reads how the run ended (events.jsonl's finished and error lines, then the wrapper's exit code). */
const DOWNLOAD_ATTEMPTS = 2;

/** How a run (or, with `dir`, one machine of a multi-node run mirrored there) ended. */
export function runOutcome(
  ctx: RunManagerContext,
  rec: RunRecord,
  exitCode: number | undefined,
  dir?: string,
): { status: RunStatus; failure?: RunFinished['failure']; adapterPath?: string; spotNotice?: string; measured?: RunMeasured } {
  const folder = dir ?? rec.localDir ?? ctx.localDirOf(rec.id);
  let finished: Extract<RunEvent, { type: 'finished' }> | undefined;
  let firstError: Extract<RunEvent, { type: 'error' }> | undefined;
  let spotNotice: string | undefined;
  for (const { line, event: e } of readRunEvents(folder).events) {
    // A finished line or a spot notice the training script wrote is no say in how the run ended.
    if (!mayActOn(line, e, rec.controlKey)) continue;
    if (e.type === 'finished') finished = e;
    if (e.type === 'warning' && e.code === 'spot-notice') spotNotice = e.message;
    if (e.type === 'error' && (!firstError || (!firstError.signature && e.signature))) firstError = e;
  }
  const stopped = ctx.isStopping(rec.id);
  let status: RunStatus = finished?.status ?? (exitCode === 0 ? 'completed' : 'failed');
  if (stopped && status !== 'completed') status = 'stopped';
  // Only a failure (or a signal of no known cause) carries an error: a preempted, stalled or budget-stopped run
  // ended the way its word says, and its first warning-like error is not what ended it.
  const failure =
    status !== 'failed' && status !== 'interrupted'
      ? undefined
      : firstError
        ? {
            message: firstError.message,
            ...(firstError.signature ? { signature: firstError.signature } : {}),
            ...(firstError.hint ? { hint: firstError.hint } : {}),
          }
        : { message: `the run exited with code ${exitCode ?? finished?.exit_code ?? '?'}; see its log` };
  // The log says more than an exit code: the exception's line and where in the workspace's code it was raised.
  const explained = failure && explainFailure(failure, readTail(runFile(folder, 'log')), rec.workspaceDir);
  return {
    status,
    ...(explained ? { failure: explained } : {}),
    ...(finished?.adapter_path ? { adapterPath: finished.adapter_path } : {}),
    ...(spotNotice && !stopped ? { spotNotice } : {}),
    ...(finished ? measuredOf(finished) : {}),
  };
}

/** The runner's measurements (issue 32.4) in the record's shape; nothing when it measured nothing. */
function measuredOf(f: Extract<RunEvent, { type: 'finished' }>): { measured?: RunMeasured } {
  const m = f.measured;
  if (!m) return {};
  const gpus = (m.gpus ?? []).map((g) => ({
    index: g.index,
    ...(g.torch_peak_allocated_mib !== undefined ? { torchPeakAllocatedMib: g.torch_peak_allocated_mib } : {}),
    ...(g.torch_peak_reserved_mib !== undefined ? { torchPeakReservedMib: g.torch_peak_reserved_mib } : {}),
    ...(g.smi_peak_mib !== undefined ? { smiPeakMib: g.smi_peak_mib } : {}),
  }));
  return {
    measured: {
      ...(gpus.length ? { gpus } : {}),
      ...(m.tokens_per_second !== undefined ? { tokensPerSecond: m.tokens_per_second } : {}),
      ...(m.first_step_s !== undefined ? { firstStepS: m.first_step_s } : {}),
      ...(f.runtime_s !== undefined ? { runtimeS: f.runtime_s } : {}),
    },
  };
}

/**
 * A multi-node run that did not complete ends with the failure that decided it (multiNode.ts): the rank that
 * died of a known failure, or the first to die, not rank 0 stopped because its peer was gone.
 */
function machinesOutcome(ctx: RunManagerContext, runId: string, out: ReturnType<typeof runOutcome>, rank0EndedAt: number): ReturnType<typeof runOutcome> {
  const rec = ctx.deps.store.get(runId);
  if (!rec?.machines?.length || out.status === 'completed' || ctx.isStopping(runId)) return out;
  // Rank 0's host ended it on purpose (its stall or budget limit, the cloud's notice); the other ranks then died
  // of being stopped, which is no failure of the run.
  if (out.status === 'stalled' || out.status === 'budget-stopped' || out.status === 'preempted') return out;
  const pick = decisiveFailure([{ rank: 0, host: rec.host ?? '', ...(out.failure ? { failure: out.failure } : {}), endedAt: rank0EndedAt }, ...rec.machines]);
  if (!pick?.failure) return out;
  const where = pick.rank === 0 ? 'machine rank 0' : `machine rank ${pick.rank} (${pick.host})`;
  return { ...out, status: 'failed', failure: { ...pick.failure, message: `${where}: ${pick.failure.message}` } };
}

export async function finishRun(ctx: RunManagerContext, runId: string, rank0EndedAt = Date.now()): Promise<void> {
  const { store } = ctx.deps;
  const rec = store.get(runId);
  if (!rec || isTerminal(rec.status) || !rec.remoteDir) return;
  const host = ctx.hostFor(rec);
  const st = await host.use((s) => runStatus(s, runId, rootOf(rec.remoteDir!)));
  // The tails ended but the wrapper still lives (a pid file rewritten, a tail cut short): follow again.
  if (st.state === 'running') throw new Error('the run is still running');
  const out = machinesOutcome(ctx, runId, runOutcome(ctx, rec, st.exitCode), rank0EndedAt);
  // The runner stopped on the cloud's reclaim notice (it saved and uploaded a checkpoint): the instance is about
  // to go, and the run goes on elsewhere. The attempt's instance is ended now rather than at the cloud's time.
  if ((out.status === 'preempted' || out.status === 'interrupted') && out.spotNotice && rec.maxAttempts) {
    const provider = ctx.deps.providerFor?.(rec);
    if (provider && rec.instanceId) await terminateRun(provider, rec.id, rec.instanceId, 120_000, (l) => ctx.deps.log?.(`[${rec.id}] ${l}`));
    ctx.reclaimed(runId, { firstLook: false, detail: out.spotNotice });
    return;
  }
  const localDir = rec.localDir ?? ctx.localDirOf(runId);
  // The resolved config and the lock are small; they come back whatever the outcome (a failed run is compared too).
  let fetched: HistoryFile[] = [];
  try {
    fetched = await host.use((s) => fetchHostHistory(s, rec.remoteDir!, localDir));
  } catch (err) {
    ctx.deps.log?.(`[${runId}] resolved config and lock not fetched: ${(err as Error).message}`);
  }
  const finalMetrics = finalMetricsOf(localDir);
  const historyFiles = [...new Set([...(rec.historyFiles ?? []), ...fetched])];
  let updated = store.update(runId, {
    ...(historyFiles.length ? { historyFiles } : {}),
    ...(Object.keys(finalMetrics).length ? { finalMetrics } : {}),
    status: out.status,
    exitCode: st.exitCode ?? null,
    ...(out.failure ? { failure: out.failure } : {}),
    ...(out.measured ? { measured: out.measured } : {}),
  });
  if (out.status === 'completed' && rec.workspaceDir) {
    for (const f of artifactPlan(rec.outputs, runId, rec.workspaceDir, out.adapterPath)) {
      // Twice at most: a channel cut mid-transfer (a dropped link, a connection the host closed) is worth one
      // more try on a fresh connection; the unpacking writes into the same folder, file by file.
      for (let attempt = 1; attempt <= DOWNLOAD_ATTEMPTS; attempt++) {
        try {
          const { bytes } = await ctx.downloadArtifacts(runId, f.remote, f.local);
          ctx.deps.log?.(`[${runId}] downloaded ${f.item} ${f.remote} to ${f.local} (${(bytes / 1e6).toFixed(1)} MB)`);
          if (f.item === 'adapter') updated = store.update(runId, { artifactsDir: f.local });
          break;
        } catch (err) {
          const last = attempt === DOWNLOAD_ATTEMPTS;
          ctx.deps.log?.(`[${runId}] ${f.item} download failed${last ? '' : ', trying once more'}: ${(err as Error).message}`);
          if (!last) await new Promise((r) => setTimeout(r, 1000));
        }
      }
    }
    if (rec.outputs?.download?.includes('logs'))
      copyLogs(rec.localDir ?? ctx.localDirOf(runId), join(rec.workspaceDir, localOutputsDir(rec.outputs.dir), runId, 'logs'));
  }
  updated = await teardownRun(ctx, updated);
  ctx.emitFinished({ record: updated, ...(out.failure ? { failure: out.failure } : {}) });
}

async function teardownRun(ctx: RunManagerContext, rec: RunRecord): Promise<RunRecord> {
  if (!rec.instanceId || rec.finishedAction) return rec;
  const provider = ctx.deps.providerFor?.(rec);
  if (!provider) {
    ctx.deps.log?.(`[${rec.id}] no provider to tear down ${rec.instanceId}; it shows under orphaned instances`);
    return rec;
  }
  const instance = await provider.describe(rec.instanceId);
  if (!instance) {
    const attempts = closeAttempt(rec, attemptEndOf(rec.status), Date.now());
    return ctx.deps.store.update(rec.id, { finishedAction: 'terminated', ...(attempts ? { attempts, costUsd: endedAttemptsCost(attempts) } : {}) });
  }
  const r = await finishGuarded(
    provider,
    ctx.deps.ledger,
    rec.id,
    instance,
    rec.launchedAt ?? Date.now(),
    {
      policy: rec.teardownPolicy ?? 'terminate',
      ...(rec.idleMinutes ? { idleMinutes: rec.idleMinutes } : {}),
    },
    rec.pricePerHour,
  );
  if (r.reason) ctx.deps.log?.(`[${rec.id}] ${r.reason}`);
  const prior = endedAttemptsCost(rec.attempts);
  const attempts = closeAttempt(rec, attemptEndOf(rec.status), Date.now(), r.cost?.usd);
  return ctx.deps.store.update(rec.id, {
    finishedAction: r.action,
    ...(r.cost ? { costUsd: prior + r.cost.usd } : {}),
    ...(attempts ? { attempts } : {}),
  });
}

function attemptEndOf(status: RunStatus): AttemptEnd | 'interrupted' {
  if (status === 'preempted') return 'reclaimed';
  // The host stopped the run itself (its stall or budget limit): the instance ended as on a Stop, not in a failure.
  if (status === 'stalled' || status === 'budget-stopped') return 'stopped';
  return status === 'completed' || status === 'failed' || status === 'stopped' || status === 'cancelled' || status === 'interrupted' ? status : 'failed';
}

/** The mirrored logs (already local) copied next to the downloaded adapter. */
function copyLogs(from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  for (const name of MIRRORED_NAMES) {
    if (existsSync(join(from, name))) copyFileSync(join(from, name), join(to, name));
  }
}
