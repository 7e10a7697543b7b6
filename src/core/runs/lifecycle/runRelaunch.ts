// A spot run moved to a replacement instance after the cloud reclaimed its instance: the attempt that ended is
// closed with its cost, the spec's rules (runAttempts.ts) decide whether another instance is allowed and which
// launches to try, and the run starts again under the same run id on the new host. The runner there restores
// the newest checkpoint from outputs.checkpoints (checkpoint_restore.py), so the steps go on; the local
// mirror appends the new host's files after the old ones (each attempt's mirrorBase). The extension decides
// this, so a reclaim while VS Code is closed is acted on at the next activation (the follower's first look).
import { finalCost } from '../../providers/cost';
import { ProviderError } from '../../providers/provider';
import type { Offer, Provider } from '../../providers/provider';
import { ProvisionError } from './teardown';
import type { RunAttempt, RunRecord } from '../store/runRecord';
import { decideRelaunch, endedAttemptsCost, launchChoices, relaunchPolicyOf } from './runAttempts';
import type { AttemptEnd } from './runAttempts';
import { launchAttempt, loadLocalSpec, runSpecOf } from './runStart';
import { afterReclaimAdvice, relaunchStartNote } from './runResume';
import { localOffsets } from '../sync/runMirror';
import type { RunManagerContext, RunRelaunched, StartRequest } from './runTypes';

/** The current attempt closed: when it ended, why, and what it cost under the provider's billing rule. */
export function closeAttempt(rec: RunRecord, reason: AttemptEnd | 'interrupted', endedAt: number, costUsd?: number): RunAttempt[] | undefined {
  const attempts = rec.attempts;
  const last = attempts?.[attempts.length - 1];
  if (!attempts || !last || last.endedAt !== undefined) return attempts;
  const cost =
    costUsd ??
    (last.pricePerHour !== undefined && rec.provider !== 'ssh' && rec.provider !== 'local'
      ? finalCost(rec.provider, last.instanceType, last.pricePerHour, last.startedAt, endedAt).usd
      : undefined);
  return [...attempts.slice(0, -1), { ...last, endedAt, reason, ...(cost !== undefined ? { costUsd: cost } : {}) }];
}

/**
 * The attempts after a replacement failed or was stopped. An attempt row exists once its host answered SSH; a
 * replacement that ended before that (SSH never came, Stop pressed while it booted) still ran and billed from its
 * launch call, so it gets its row here, with the cost its teardown computed.
 */
function attemptsAfterFailedLaunch(
  failed: RunRecord,
  err: unknown,
  launch: {
    readonly n: number;
    readonly spot: boolean;
    readonly pricePerHour: number;
    readonly instanceType: string;
    readonly region: string;
    readonly zone?: string;
  },
  reason: AttemptEnd,
  mirrorBase: RunAttempt['mirrorBase'],
): RunAttempt[] | undefined {
  const last = failed.attempts?.[failed.attempts.length - 1];
  if (last?.n === launch.n) return closeAttempt(failed, reason, Date.now());
  const billed = err instanceof ProvisionError ? err.billed : undefined;
  if (!billed) return undefined;
  const row: RunAttempt = {
    n: launch.n,
    instanceId: billed.id,
    instanceType: launch.instanceType,
    region: launch.region,
    ...(launch.zone ? { zone: launch.zone } : {}),
    spot: launch.spot,
    pricePerHour: launch.pricePerHour,
    startedAt: billed.launchedAt,
    endedAt: billed.endedAt,
    reason,
    ...(billed.usd !== undefined ? { costUsd: billed.usd } : {}),
    // Nothing of this attempt reached the mirror: its files would have started where the mirror is now.
    mirrorBase,
  };
  return [...(failed.attempts ?? []), row];
}

/** The on-demand price of the type, for a replacement that falls back to on-demand; the last price if unknown. */
async function onDemandPrice(provider: Provider, last: RunAttempt): Promise<number> {
  try {
    const offers = await provider.listOffers({ instanceType: last.instanceType, region: last.region, spot: false }, AbortSignal.timeout(30_000));
    const o = offers.find((x) => !x.spot && x.instanceType === last.instanceType);
    if (o) return o.pricePerHour;
  } catch {
    // The price shown is then the spot one; the launch itself does not depend on it.
  }
  return last.pricePerHour ?? 0;
}

/**
 * Handles a reclaim of the run's current instance. Returns what was relaunched, or undefined when the run
 * ends here (interrupted: no attempt left, not a spot spec, no provider or variables; failed: the
 * replacement could not start). Either way the record says why.
 */
export async function relaunchRun(
  ctx: RunManagerContext,
  runId: string,
  how: { readonly detail: string; readonly atActivation: boolean; readonly signal?: AbortSignal },
): Promise<RunRelaunched | undefined> {
  const { store } = ctx.deps;
  const rec = store.get(runId);
  if (!rec || rec.status !== 'running') return undefined;
  const now = (ctx.deps.now ?? Date.now)();
  const attempts = closeAttempt(rec, 'reclaimed', now) ?? [];
  let cur = store.update(runId, {
    status: 'interrupted',
    attempts,
    ...(attempts.length ? { costUsd: endedAttemptsCost(attempts) } : {}),
    failure: { message: how.detail },
  });
  const spec = runSpecOf(loadLocalSpec(rec.localDir ?? ctx.localDirOf(runId)));
  const end = (why: string): undefined => {
    cur = store.update(runId, {
      failure: { message: `${how.detail}; not relaunched: ${why}. ${afterReclaimAdvice(spec, runId)}` },
      finishedAction: 'terminated',
    });
    ctx.deps.log?.(`[${runId}] ${cur.failure!.message}`);
    ctx.emitFinished({ record: cur, failure: cur.failure! });
    return undefined;
  };
  const policy = spec ? relaunchPolicyOf(spec) : undefined;
  const decision = decideRelaunch('reclaimed', attempts, policy, ctx.isStopping(runId));
  if (!decision.relaunch) return end(decision.why);
  if (how.atActivation && ctx.deps.relaunchAtActivation?.() === false) return end('relaunching at startup is off (remoteFinetune.cloud.reconcileOnStartup)');
  const provider = ctx.deps.providerFor?.(rec);
  if (!provider) return end(`no ${rec.provider} credentials to launch a replacement`);
  if (!rec.sshPublicKey || !rec.identityFile || !rec.workspaceDir || !spec || !policy) return end('the run record lacks its key or workspace');
  let env = ctx.envFor(runId);
  if (!env && ctx.deps.relaunchEnv) {
    try {
      env = await ctx.deps.relaunchEnv(rec);
    } catch (err) {
      return end(`its variables could not be read again (${(err as Error).message})`);
    }
  }
  if (!env) return end('its variables (env file, secrets) are not available here');
  if (how.signal?.aborted) return end('you stopped the run');
  const last = attempts[attempts.length - 1];
  const choices = last ? launchChoices(policy, attempts) : [{ spot: true }];
  const lastPrice = last?.pricePerHour ?? rec.pricePerHour ?? 0;
  const baseOffer: Offer = {
    provider: provider.kind,
    instanceType: last?.instanceType ?? '',
    gpu: rec.gpu ?? '',
    gpuCount: 1,
    vramGiB: 0,
    region: last?.region ?? rec.region ?? '',
    pricePerHour: lastPrice,
    spot: true,
    capacity: 'unknown',
  };
  const req: StartRequest = {
    specPath: rec.specPath,
    specText: '',
    spec,
    name: rec.name,
    workspaceDir: rec.workspaceDir,
    env,
    ...(rec.envFileRel ? { envFileRel: rec.envFileRel } : {}),
    target: { kind: 'cloud', provider, offer: baseOffer, sshPublicKey: rec.sshPublicKey, identityFile: rec.identityFile },
    ...(rec.gpu ? { gpu: rec.gpu } : {}),
    teardown: { policy: rec.teardownPolicy ?? 'terminate', ...(rec.idleMinutes ? { idleMinutes: rec.idleMinutes } : {}) },
    ...(how.signal ? { signal: how.signal } : {}),
  };
  const n = decision.attempt;
  ctx.deps.log?.(`[${runId}] ${how.detail}; launching attempt ${n} of ${policy.maxAttempts}`);
  store.update(runId, { status: 'provisioning', finishedAt: undefined, failure: undefined, exitCode: undefined });
  let price: number | undefined;
  const launchOf = (c: (typeof choices)[number]) => ({
    n,
    spot: c.spot,
    pricePerHour: c.spot ? lastPrice : (price ?? lastPrice),
    instanceType: baseOffer.instanceType,
    region: baseOffer.region,
    ...(c.zone ? { zone: c.zone } : {}),
  });
  for (const [i, c] of choices.entries()) {
    if (!c.spot && price === undefined) price = last && last.spot ? await onDemandPrice(provider, last) : lastPrice;
    try {
      const started = await launchAttempt(ctx, runId, req, req.target as Extract<StartRequest['target'], { kind: 'cloud' }>, {
        n,
        spot: c.spot,
        pricePerHour: c.spot ? lastPrice : (price ?? lastPrice),
        ...(c.zone ? { zone: c.zone } : {}),
        launchKey: `attempt-${n}.${i}`,
      });
      const a = started.attempts?.[started.attempts.length - 1];
      const where = a ? `${a.instanceId ?? ''} (${a.zone ?? a.region}, ${a.spot ? 'spot' : 'on-demand'})` : 'a new instance';
      const message = how.atActivation
        ? `${rec.name}: its spot instance was reclaimed while VS Code was closed; relaunched on ${where}, attempt ${n}/${policy.maxAttempts}, ${relaunchStartNote(spec)}.`
        : `${rec.name}: its spot instance was reclaimed; relaunched on ${where}, attempt ${n}/${policy.maxAttempts}, ${relaunchStartNote(spec)}.`;
      return { record: started, attempt: n, maxAttempts: policy.maxAttempts, atActivation: how.atActivation, message };
    } catch (err) {
      const failed = store.get(runId)!;
      if (how.signal?.aborted) {
        // Stop pressed while the replacement was launching: the launch is abandoned and its instance terminated.
        // The run ends cancelled, as a start stopped before its command ran does.
        const cleaned = !(err instanceof ProvisionError) || err.cleanedUp;
        const message = `${how.detail}; stopped while its replacement (attempt ${n}) was launching${cleaned ? ', which was terminated' : `: ${(err as Error).message}`}`;
        const attemptsNow = attemptsAfterFailedLaunch(failed, err, launchOf(c), 'cancelled', localOffsets(failed.localDir ?? ctx.localDirOf(runId)));
        const done = store.update(runId, {
          status: 'cancelled',
          failure: { message },
          ...(cleaned ? { finishedAction: 'terminated' as const } : {}),
          ...(attemptsNow ? { attempts: attemptsNow, costUsd: endedAttemptsCost(attemptsNow) } : {}),
        });
        ctx.deps.log?.(`[${runId}] ${message}`);
        ctx.emitFinished({ record: done, failure: { message } });
        return undefined;
      }
      const capacity = err instanceof ProvisionError && err.step === 'launch' && err.cause instanceof ProviderError && err.cause.code === 'capacity';
      if (capacity && i < choices.length - 1) {
        const next = choices[i + 1]!;
        ctx.deps.log?.(
          `[${runId}] no ${c.spot ? 'spot' : 'on-demand'} capacity in ${c.zone ?? 'the region'}; trying ${next.spot ? 'spot' : 'on-demand'} in ${next.zone ?? 'any zone'}`,
        );
        continue;
      }
      const message = `${how.detail}; the replacement (attempt ${n}) did not start: ${err instanceof Error ? err.message : String(err)}`;
      const attemptsNow = attemptsAfterFailedLaunch(failed, err, launchOf(c), 'failed', localOffsets(failed.localDir ?? ctx.localDirOf(runId)));
      const done = store.update(runId, {
        status: 'failed',
        failure: { message },
        ...(err instanceof ProvisionError && err.cleanedUp ? { finishedAction: 'terminated' as const } : {}),
        ...(attemptsNow ? { attempts: attemptsNow, costUsd: endedAttemptsCost(attemptsNow) } : {}),
      });
      ctx.deps.log?.(`[${runId}] ${message}`);
      ctx.emitFinished({ record: done, failure: { message } });
      return undefined;
    }
  }
  return undefined;
}
