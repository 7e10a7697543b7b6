// Resume: a stopped, failed or interrupted run started again as the same run, in its own folder on its host, with
// the spec it was started with. The runner's trainer resumes from the run's newest checkpoint
// (<outputs.dir>/checkpoints/<run id>, trainer_plan.resume_checkpoint), restoring the optimizer, the LR schedule,
// the RNG and the place in the data, so the steps go on at k+1; the run's files on the host are appended to, so
// the local mirror goes on from its offsets.
import { runStatus } from '../../ssh/detachedJob';
import { controlVariablesRefusal } from '../../config/controlVariables';
import { readRunEvents } from '../store/runFolder';
import type { RunRecord, RunStatus } from '../store/runRecord';
import { loadLocalSpec, runSpecOf, startOnHost } from './runStart';
import { rootOf } from '../store/runPaths';
import { volumeOf } from '../hosts/runVolume';
import type { RunManagerContext, StartRequest } from './runTypes';
import type { RunSpec } from '../../config/runSpecDefaults';

const RESUMABLE: ReadonlySet<RunStatus> = new Set<RunStatus>(['stopped', 'failed', 'interrupted', 'preempted', 'stalled', 'budget-stopped']);

export interface Checkpoint {
  readonly step: number;
  /** As the runner reported it: relative to the run's workspace on the host. */
  readonly path: string;
}

/** The newest checkpoint the run reported (its `checkpoint` events, mirrored locally), if any. */
export function newestCheckpoint(localDir: string | undefined): Checkpoint | undefined {
  let best: Checkpoint | undefined;
  for (const { event: e } of readRunEvents(localDir).events) {
    if (e.type === 'checkpoint' && (!best || e.step > best.step)) best = { step: e.step, path: e.path };
  }
  return best;
}

export type ResumeCheck = { readonly ok: true; readonly checkpoint: Checkpoint } | { readonly ok: false; readonly why: string };

/**
 * Whether Resume can continue this run, and from which checkpoint; otherwise why not, in words for the person.
 * Only a host that still holds the run's folder and checkpoints qualifies: an SSH host, or an instance that was
 * kept. A terminated instance took its disk with it.
 */
export function resumeCheck(rec: RunRecord, checkpoint: Checkpoint | undefined, hasSpec: boolean): ResumeCheck {
  if (!RESUMABLE.has(rec.status)) return { ok: false, why: `it is ${rec.status}; only a run that did not complete resumes` };
  if (!rec.remoteDir || !rec.host) return { ok: false, why: 'it never started on a host' };
  if (rec.machines?.length) return { ok: false, why: 'it ran on several machines, which Resume does not start again yet' };
  if (rec.instanceId && rec.finishedAction !== 'kept')
    return { ok: false, why: `its instance ${rec.instanceId} is ${rec.finishedAction ?? 'gone'}, and its checkpoints on that disk with it` };
  if (!hasSpec) return { ok: false, why: 'the spec it was started with was not kept here' };
  if (!checkpoint) return { ok: false, why: 'it saved no checkpoint' };
  return { ok: true, checkpoint };
}

/** Whether the Runs view offers Resume on this run (the checkpoint is looked up when the action runs). */
export function mayOfferResume(rec: RunRecord): boolean {
  return resumeCheck(rec, { step: 0, path: '' }, true).ok;
}

export type RunAgainChoice = 'resume' | 'fresh';

/** "Run Again" on a run that left a checkpoint asks first: the two answers, in the quick pick's words. */
export function runAgainChoices(checkpoint: Checkpoint): ReadonlyArray<{ readonly label: string; readonly detail: string; readonly choice: RunAgainChoice }> {
  return [
    {
      label: `Resume from checkpoint-${checkpoint.step}`,
      detail: `the same run goes on at step ${checkpoint.step + 1}, with its spec, data order and learning-rate schedule`,
      choice: 'resume',
    },
    { label: 'Start fresh', detail: 'a new run from step 0 with the spec as it is now', choice: 'fresh' },
  ];
}

function checkpointStore(spec: RunSpec | undefined): string | undefined {
  const dest = spec?.outputs?.checkpoints;
  return dest ? dest.replace(/\/+$/, '') : undefined;
}

/**
 * Where a replacement instance starts, said truthfully: from the newest checkpoint when one survives the reclaim
 * (uploaded to outputs.checkpoints, or on the run's persistent volume), else from step 0.
 */
export function relaunchStartNote(spec: RunSpec): string {
  if (checkpointStore(spec)) return 'resuming from the newest checkpoint in outputs.checkpoints';
  if (volumeOf(spec)) return 'resuming from the newest checkpoint on its volume';
  return 'starting again from step 0 (set outputs.checkpoints to keep checkpoints across a reclaim)';
}

/**
 * What a reclaimed run that is not relaunched leaves, said truthfully: its instance's disk is gone, so Resume
 * cannot take it up here; the checkpoints it uploaded (outputs.checkpoints) are where a replacement would have
 * restored from, and Run Again starts a new run from step 0.
 */
export function afterReclaimAdvice(spec: RunSpec | undefined, runId: string): string {
  const dest = checkpointStore(spec);
  return dest
    ? `Its newest uploaded checkpoint stays in ${dest}/${runId}/; Run Again starts a new run from step 0.`
    : "Its checkpoints were on the reclaimed instance's disk; Run Again starts a new run from step 0.";
}

/**
 * Starts the run again in its own folder on its host. `env`: the run's variables, read again as Start Training
 * reads them (nothing secret is stored). Returns once it runs; the caller watches it.
 */
export async function resumeRun(
  ctx: RunManagerContext,
  runId: string,
  opts: { readonly env: Readonly<Record<string, string>>; readonly signal?: AbortSignal; readonly progress?: StartRequest['progress'] },
): Promise<RunRecord> {
  // As at Start: the workspace may not choose the host's interpreter or the runner's settings.
  const refused = controlVariablesRefusal(opts.env);
  if (refused) throw new Error(refused);
  const { store } = ctx.deps;
  const rec = store.get(runId);
  if (!rec) throw new Error(`unknown run ${runId}`);
  const localDir = rec.localDir ?? ctx.localDirOf(runId);
  const spec = loadLocalSpec(localDir);
  const runSpec = runSpecOf(spec);
  const check = resumeCheck(rec, newestCheckpoint(localDir), spec !== undefined && runSpec !== undefined);
  if (!check.ok) throw new Error(`${rec.name} cannot resume: ${check.why}`);
  if (!rec.workspaceDir) throw new Error(`${rec.name} cannot resume: its workspace folder is not recorded`);
  // Its wrapper must be gone: two trainers in one checkpoint folder would write over each other.
  const st = await ctx.hostFor(rec).use((s) => runStatus(s, runId, rootOf(rec.remoteDir!)), opts.signal);
  if (st.state === 'running') throw new Error(`${rec.name} is still running on ${rec.host}`);
  const req: StartRequest = {
    specPath: rec.specPath,
    specText: '',
    spec: spec!,
    runSpec: runSpec!,
    name: rec.name,
    workspaceDir: rec.workspaceDir,
    env: opts.env,
    ...(rec.envFileRel ? { envFileRel: rec.envFileRel } : {}),
    target: {
      kind: 'ssh',
      host: rec.host!,
      ...(rec.provider === 'local' ? { provider: 'local' as const } : {}),
      ...(rec.identityFile ? { identityFile: rec.identityFile } : {}),
    },
    ...(rec.gpu ? { gpu: rec.gpu } : {}),
    teardown: { policy: rec.teardownPolicy ?? 'keep', ...(rec.idleMinutes ? { idleMinutes: rec.idleMinutes } : {}) },
    ...(opts.progress ? { progress: opts.progress } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
    resume: true,
  };
  ctx.rememberEnv(runId, opts.env);
  const from = rec.status;
  const cur = store.update(runId, {
    status: 'connecting',
    finishedAt: undefined,
    failure: undefined,
    exitCode: undefined,
    resumes: [...(rec.resumes ?? []), { at: new Date().toISOString(), from, fromStep: check.checkpoint.step }],
  });
  ctx.deps.log?.(`[${runId}] resuming the ${from} run from checkpoint-${check.checkpoint.step} in ${rec.remoteDir}`);
  try {
    return await startOnHost(ctx, runId, req, cur, opts.signal, undefined, undefined);
  } catch (err) {
    const now = store.get(runId);
    if (now && now.status !== 'running')
      store.update(runId, { status: opts.signal?.aborted ? 'cancelled' : 'failed', failure: { message: `resume failed: ${(err as Error).message}` } });
    throw err;
  }
}
