// Following a running run: its files mirrored by byte offset (runMirror.ts), events handed to listeners and
// summarised in the record (step, loss, W&B link), a heartbeat for the on-host watchdog, the cost so far
// kept current, a cloud instance checked for a spot reclaim; when the run's files end, runFinish.ts.
import { shellQuote } from '../../ssh/quote';
import { runStatus, stopRun } from '../../ssh/detachedJob';
import { MAX_PENDING } from '../../ssh/tail';
import { EventLines } from '../store/runFolder';
import { mayActOn } from '../../telemetry/eventAuth';
import type { RunEvent } from '../../telemetry/events';
import { runningCost } from '../../providers/cost';
import { checkInstance } from './teardown';
import type { RunRecord } from '../store/runRecord';
import { isTerminal } from '../store/runRecord';
import { endedAttemptsCost } from './runAttempts';
import { localOffsets, mirrorRun } from '../sync/runMirror';
import { HostLinkTracker, linkCallbacks } from '../sync/hostLink';
import { finishRun, runOutcome } from './runFinish';
import { machineLocalDir } from './multiNode';
import { rootOf } from '../store/runPaths';
import { GpuCsvBoards, hardwareFromNames } from '../view/runHardware';
import { nextProgress } from '../view/runProgress';
import type { RunManagerContext } from './runTypes';

const HEARTBEAT_MS = 60_000;
const COST_MS = 30_000;

export async function followRun(ctx: RunManagerContext, runId: string, signal: AbortSignal): Promise<void> {
  const { store } = ctx.deps;
  const rec = store.get(runId);
  // Only a running run has files to follow (a relaunching one still names its reclaimed host).
  if (!rec?.remoteDir || !rec.host || rec.status !== 'running') return;
  const localDir = rec.localDir ?? ctx.localDirOf(runId);
  const host = ctx.hostFor(rec);
  const eventLines = new EventLines({ keep: false, maxPending: MAX_PENDING });
  const boards = new GpuCsvBoards();
  // Aborted when the instance answers at a new address: this follow ends with an error and the watch starts
  // again at the record's new host (the old address may hang rather than refuse).
  const moved = new AbortController();
  const followSignal = AbortSignal.any([signal, moved.signal]);
  const instanceTimer = startInstanceCheck(ctx, rec, signal, () => moved.abort());
  // The on-host watchdog powers an idle provisioned host off only when nobody is watching: say we are.
  const beat = (): void => {
    void host
      .use(
        (s) =>
          s.exec(`mkdir -p ${shellQuote(rootOf(rec.remoteDir!))} && date +%s > ${shellQuote(`${rootOf(rec.remoteDir!)}/heartbeat`)}`, {
            what: 'writing the heartbeat',
          }),
        followSignal,
      )
      .catch(() => undefined);
  };
  beat();
  const heartbeat = setInterval(beat, HEARTBEAT_MS);
  heartbeat.unref?.();
  const clock = ctx.deps.now ?? Date.now;
  // The cost so far moves with the clock, not with the log: a quiet run (a long eval, a stall) still bills.
  const costNow = (): void => {
    const cur = store.get(runId);
    if (cur?.pricePerHour !== undefined && cur.launchedAt && !isTerminal(cur.status))
      store.update(runId, { costUsd: endedAttemptsCost(cur.attempts) + runningCost(cur.pricePerHour, cur.launchedAt, clock(), cur.provider) });
  };
  costNow();
  const costTimer = setInterval(costNow, ctx.deps.costIntervalMs ?? COST_MS);
  costTimer.unref?.();
  // A multi-node run's other machines are mirrored beside rank 0's files, each until its wrapper exits.
  const machines = (rec.machines ?? []).filter((m) => m.remoteDir && !(m.status && isTerminal(m.status)));
  const others = machines.map((m) => followMachine(ctx, runId, m.rank, localDir, signal));
  let rank0EndedAt = Date.now();
  const link = new HostLinkTracker(
    (state) => ctx.emitHostLink(runId, state),
    ctx.deps.hostUnreachableMs !== undefined ? { unreachableAfterMs: ctx.deps.hostUnreachableMs } : {},
  );
  ctx.emitHostLink(runId, link.current);
  try {
    const status = await host.use((s) => runStatus(s, runId, rootOf(rec.remoteDir!)), followSignal);
    const pid = status.pid ?? rec.pid;
    const base = rec.attempts?.[rec.attempts.length - 1]?.mirrorBase;
    await mirrorRun(host, rec.remoteDir, localDir, {
      ...(pid !== undefined ? { pid } : {}),
      ...(base ? { base } : {}),
      signal: followSignal,
      callbacks: {
        ...linkCallbacks(link, rec.host),
        onTruncated: (file) => {
          if (file === 'output_log') ctx.emitLog(runId, { offset: localOffsets(localDir).output_log, bytes: new Uint8Array(0) });
        },
        onData: (file, data, offsets) => {
          if (file === 'output_log') ctx.emitLog(runId, { offset: offsets.output_log - data.length, bytes: data });
          const patch: Partial<RunRecord> = {};
          // The boards the runner samples are the hardware the run has (a probe before the start may be stale).
          if (file === 'gpu' && boards.feed(data.toString('utf8'))) {
            const h = boards.hardware(store.get(runId)?.gpuIndices);
            if (h) patch.hardware = h;
          }
          if (file === 'events') {
            // An event line is a few hundred bytes; an unterminated one past MAX_PENDING is damage and is dropped.
            const read = eventLines.push(data.toString('utf8'));
            const events: RunEvent[] = read.map((r) => r.event);
            const key = store.get(runId)?.controlKey;
            // Shown whoever wrote it; the record changes only on the runner's own control events.
            const acted = read.filter((r) => mayActOn(r.line, r.event, key)).map((r) => r.event);
            // Step, total and rate for "step N of M, ≈ T left" (runProgress.ts), carried through the batch.
            const before = store.get(runId);
            let progress = before?.progress;
            let lastStep = before?.lastStep;
            let restart = false;
            for (const e of acted) {
              if (e.type === 'queued') patch.queuePosition = e.position;
              if (e.type === 'assigned') {
                patch.queuePosition = undefined;
                patch.gpuIndices = [...e.gpus];
                const h = boards.hardware(e.gpus);
                if (h) patch.hardware = h;
              }
              if (e.type === 'staging')
                patch.staging = e.done
                  ? undefined
                  : { uri: e.uri, bytesDone: e.bytes_done, ...(e.bytes_total !== undefined ? { bytesTotal: e.bytes_total } : {}) };
              if (e.type === 'resumed' || (e.type === 'warning' && e.code === 'checkpoint-restored')) restart = true;
              if (e.type === 'metrics') {
                progress = nextProgress(progress, lastStep, { step: e.step, tsMs: e.ts * 1000, maxSteps: e.max_steps }, Date.now(), restart);
                restart = false;
                lastStep = e.step;
                patch.progress = progress;
                patch.lastStep = e.step;
                if (e.loss !== undefined) patch.lastLoss = e.loss;
              }
              // The runner found no nvidia-smi: the run trains on the CPU, whatever the spec asked for.
              if (e.type === 'warning' && e.code === 'no-gpu') patch.hardware = hardwareFromNames([], 'runner');
              if (e.type === 'warning' && e.code === 'checkpoint-restored') {
                const step = /\(step (\d+)\)/.exec(e.message)?.[1];
                const cur = store.get(runId);
                const attempts = cur?.attempts;
                if (step && attempts?.length) patch.attempts = [...attempts.slice(0, -1), { ...attempts[attempts.length - 1]!, resumedFromStep: Number(step) }];
              }
              // The host restarted the run by itself after a reboot (boot_resume.py): kept like a Resume from here.
              if (e.type === 'resumed') {
                const cur = store.get(runId);
                patch.resumes = [
                  ...(patch.resumes ?? cur?.resumes ?? []),
                  { at: new Date(e.ts * 1000).toISOString(), from: 'interrupted', by: 'host', ...(e.from_step !== undefined ? { fromStep: e.from_step } : {}) },
                ];
              }
              if (e.type === 'started' && e.wandb_run_id) {
                patch.wandbRunId = e.wandb_run_id;
                if (e.wandb_url) patch.wandbUrl = e.wandb_url;
              }
            }
            if (events.length > 0) ctx.emitEvents(runId, events);
          }
          // Only what the record shows is written (the local files are the truth for how far the mirror got); the
          // cost so far moves on its own timer.
          if (Object.keys(patch).length > 0) store.update(runId, patch);
        },
      },
    });
    rank0EndedAt = Date.now();
    if (machines.length > 0 && !signal.aborted) {
      // Rank 0 ended: if it failed, the others are waiting in a collective that will never complete.
      const st = await host.use((s) => runStatus(s, runId, rootOf(rec.remoteDir!)), signal);
      if (st.exitCode !== 0 && !ctx.isStopping(runId)) await stopMachines(ctx, runId, 0);
    }
    await Promise.all(others);
  } finally {
    link.ended();
    if (instanceTimer) clearInterval(instanceTimer);
    clearInterval(heartbeat);
    clearInterval(costTimer);
  }
  if (signal.aborted) return;
  if (moved.signal.aborted) throw new Error(`instance ${rec.instanceId ?? ''} answers at a new address`);
  await finishRun(ctx, runId, rank0EndedAt);
}

/** Grace for ranks stopped because another failed: they are stuck in a collective, no checkpoint can be saved. */
const PEER_FAILED_GRACE_MS = 15_000;

/** Mirrors machine rank `rank` into rank-<rank>/; when it ends badly, the other machines are stopped. */
async function followMachine(ctx: RunManagerContext, runId: string, rank: number, localDir: string, signal: AbortSignal): Promise<void> {
  const { store } = ctx.deps;
  const m = store.get(runId)?.machines?.find((x) => x.rank === rank);
  if (!m?.remoteDir) return;
  const host = ctx.hostFor(m);
  const dir = machineLocalDir(localDir, rank);
  await mirrorRun(host, m.remoteDir, dir, { ...(m.pid !== undefined ? { pid: m.pid } : {}), signal });
  if (signal.aborted) return;
  const st = await host.use((s) => runStatus(s, runId, rootOf(m.remoteDir!)), signal);
  const rec = store.get(runId)!;
  const out = runOutcome(ctx, rec, st.exitCode, dir);
  const endedAt = Date.now();
  store.update(runId, {
    machines: (rec.machines ?? []).map((x) =>
      x.rank === rank ? { ...x, status: out.status, exitCode: st.exitCode ?? null, endedAt, ...(out.failure ? { failure: out.failure } : {}) } : x,
    ),
  });
  ctx.deps.log?.(`[${runId}] machine rank ${rank} (${m.host}) ended: ${out.status}${out.failure ? ` (${out.failure.signature ?? out.failure.message})` : ''}`);
  if (out.status !== 'completed' && !ctx.isStopping(runId)) await stopMachines(ctx, runId, rank);
}

/** Stops every machine of the run but `except` (rank 0 is the record's own host). Errors are logged, not thrown. */
export async function stopMachines(ctx: RunManagerContext, runId: string, except: number, graceMs = PEER_FAILED_GRACE_MS): Promise<void> {
  const rec = ctx.deps.store.get(runId);
  if (!rec?.remoteDir) return;
  const all = [{ rank: 0, ...rec, remoteDir: rec.remoteDir }, ...(rec.machines ?? [])].filter((m) => m.rank !== except && m.remoteDir);
  await Promise.all(
    all.map((m) =>
      ctx
        .hostFor(m)
        .use((s) => stopRun(s, runId, { graceMs, root: rootOf(m.remoteDir!) }))
        .catch((err: unknown) => ctx.deps.log?.(`[${runId}] could not stop machine rank ${m.rank} on ${m.host}: ${(err as Error).message}`)),
    ),
  );
}

function startInstanceCheck(ctx: RunManagerContext, rec: RunRecord, signal: AbortSignal, onMoved: () => void): NodeJS.Timeout | undefined {
  const provider = rec.instanceId ? ctx.deps.providerFor?.(rec) : undefined;
  if (!provider || !rec.instanceId) return undefined;
  let first = true;
  const look = (): void => {
    const firstLook = first;
    first = false;
    void checkInstance(provider, ctx.deps.ledger, rec.id, rec.instanceId!, signal)
      .then((c) => {
        const cur = ctx.deps.store.get(rec.id);
        // A reclaim, not a stop or a crash: the cloud ended the instance under a run that was still running.
        if (!c.alive && c.interrupted && cur?.status === 'running' && cur.instanceId === rec.instanceId)
          ctx.reclaimed(rec.id, { firstLook, detail: `the cloud reclaimed the spot instance ${rec.instanceId}` });
        // The same instance started again under a new address (EC2 after a spot stop, target.spot_recovery: cloud):
        // the next watch follows it there; its host key is pinned by instance id, not by address.
        if (c.address && cur?.status === 'running' && cur.instanceId === rec.instanceId && cur.host !== c.address) {
          ctx.deps.store.update(rec.id, { host: c.address });
          ctx.deps.log?.(`[${rec.id}] instance ${rec.instanceId} now answers at ${c.address}; following it there`);
          onMoved();
        }
      })
      .catch(() => undefined);
  };
  // At once too: a run reattached after VS Code was closed may have lost its instance meanwhile.
  look();
  const t = setInterval(look, ctx.deps.instanceCheckMs ?? 30_000);
  t.unref?.();
  return t;
}
