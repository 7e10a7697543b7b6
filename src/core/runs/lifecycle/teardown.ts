// The teardown guarantee. provisionGuarded records the instance in the ledger before and right after
// launch, and terminates it on every failure path (launch error, SSH never ready, cancel, bootstrap
// failure). finishGuarded applies the run's policy. reconcile() finds owned instances with no live run.
// Cleanup never uses the caller's signal: a cancelled run must still be torn down.
import { finalCost } from '../../providers/cost';
import type { FinalCost } from '../../providers/cost';
import { instanceNameFor, ProviderError } from '../../providers/provider';
import type { Instance, LaunchRequest, Provider, ProviderErrorCode, ProviderKind } from '../../providers/provider';
import { probeSshBanner } from '../../providers/sshProbe';
import { holderAlive, RECENTLY_TERMINATED_MS } from '../store/ledger';
import type { Ledger, LedgerEntry } from '../store/ledger';

export type TeardownPolicy = 'terminate' | 'stop' | 'keep';

export interface TeardownSettings {
  readonly policy: TeardownPolicy;
  /** The on-host watchdog's idle limit; 'keep' is honoured only when it is armed. */
  readonly idleMinutes?: number;
}

export interface GuardOptions {
  readonly provider: Provider;
  readonly ledger: Ledger;
  readonly request: LaunchRequest;
  readonly pricePerHour?: number;
  readonly sshTimeoutMs: number;
  readonly sshIntervalMs?: number;
  /**
   * Runs after SSH answers (sync, env, runner install). A throw tears the instance down. launchedAt: when the
   * launch call went out, where billing starts (boot and the wait for SSH are billed too).
   */
  readonly bootstrap?: (instance: Instance, signal: AbortSignal | undefined, launchedAt: number) => Promise<void>;
  readonly signal?: AbortSignal;
  readonly log?: (line: string) => void;
  /** Budget for the cleanup calls themselves. */
  readonly cleanupTimeoutMs?: number;
}

export interface GuardedInstance {
  readonly instance: Instance;
  readonly launchedAt: number;
}

/** An instance that was launched (and billed) before the step that failed: what the run's cost must count. */
export interface BilledInstance {
  readonly id: string;
  /** The launch call, where billing starts, and the teardown, ms since the epoch. */
  readonly launchedAt: number;
  readonly endedAt: number;
  /** Under the provider's billing rule; undefined when the price is unknown. */
  readonly usd?: number;
}

export class ProvisionError extends Error {
  constructor(
    readonly step: 'launch' | 'ssh' | 'bootstrap',
    override readonly cause: unknown,
    /** Whether every instance of the run is gone (or was never created). */
    readonly cleanedUp: boolean,
    /** The instance the launch created, when it got that far. */
    readonly billed?: BilledInstance,
  ) {
    super(`${step} failed: ${cause instanceof Error ? cause.message : String(cause)}${cleanedUp ? '' : ' (cleanup failed: see the orphaned instances)'}`);
    this.name = 'ProvisionError';
  }
}

function sameRun(instance: Instance, runId: string): boolean {
  return instance.runId === runId || instance.name === instanceNameFor(runId);
}

/**
 * A launch call that failed without saying whether it made an instance: Stop pressed while it was out, a
 * timeout, an answer lost. The instance may exist and bill while the provider's listings do not show it yet.
 */
export interface UnknownLaunch {
  readonly request: LaunchRequest;
}

/** Refusals that say no instance was made; any other failure of a launch call leaves its outcome unknown. */
const LAUNCH_REFUSED: ReadonlySet<ProviderErrorCode> = new Set(['capacity', 'quota', 'auth', 'invalid', 'not-found', 'unsupported', 'rate-limited']);

export function launchOutcomeUnknown(err: unknown): boolean {
  return !(err instanceof ProviderError && LAUNCH_REFUSED.has(err.code));
}

async function withRetries<T>(call: () => Promise<T>, signal: AbortSignal, onError: (err: unknown) => void): Promise<T | undefined> {
  for (let attempt = 0; attempt < 4 && !signal.aborted; attempt++) {
    try {
      return await call();
    } catch (err) {
      onError(err);
      if (attempt < 3) await new Promise((r) => setTimeout(r, 200 * 2 ** attempt));
    }
  }
  return undefined;
}

/**
 * Terminates every instance of the run: the known id and whatever the tag/name listing shows (a launch
 * that timed out on our side may have created one). Retries, with its own time budget, never shorter than
 * the provider's own terminate can take. For a launch of unknown outcome it keeps looking, by the launch's
 * identity, until the provider's consistency window has passed, terminating whatever appears.
 */
export async function terminateRun(
  provider: Provider,
  runId: string,
  knownId: string | undefined,
  timeoutMs = 120_000,
  log?: (line: string) => void,
  unknown?: UnknownLaunch,
): Promise<boolean> {
  // The call may have made its instance up to the moment it failed (or after, on the cloud's side): the window counts from now.
  const pollUntil = unknown ? Date.now() + (provider.consistencyWindowMs ?? 0) : 0;
  const signal = AbortSignal.timeout(Math.max(timeoutMs, provider.terminateTimeoutMs ?? 0) + Math.max(0, pollUntil - Date.now()));
  const pollMs = Math.min(5000, Math.max(50, (provider.consistencyWindowMs ?? 0) / 8));
  const list = (): Promise<Instance[]> =>
    unknown && provider.findLaunched
      ? provider.findLaunched(unknown.request, signal)
      : provider.listOwned(signal).then((all) => all.filter((i) => sameRun(i, runId)));
  const pending = new Set<string>(knownId ? [knownId] : []);
  const done = new Set<string>();
  let listed = false;
  for (;;) {
    const last = Date.now() >= pollUntil;
    const found = await withRetries(list, signal, (err) => log?.(`listing ${provider.kind} instances for ${runId} failed: ${(err as Error).message}`));
    listed = found !== undefined;
    for (const i of found ?? []) if (i.state !== 'terminated' && i.state !== 'terminating' && !done.has(i.id)) pending.add(i.id);
    for (const id of pending) {
      if (done.has(id)) continue;
      const ended = await withRetries(
        () => provider.terminate(id, signal).then(() => true),
        signal,
        (err) => log?.(`terminating ${provider.kind} instance ${id} failed: ${(err as Error).message}`),
      );
      if (ended) {
        done.add(id);
        log?.(`terminated ${provider.kind} instance ${id} of run ${runId}`);
      }
    }
    if (last || signal.aborted) break;
    await new Promise((r) => setTimeout(r, Math.min(pollMs, Math.max(1, pollUntil - Date.now()))));
  }
  // A poll cut short by the budget has not looked through the whole window.
  return listed && Date.now() >= pollUntil && [...pending].every((id) => done.has(id));
}

/**
 * After a multi-node run's instances are gone: what the provider made for its nodes (placement group, security
 * group, firewall rule). Whether that is done (true for a run of one instance, which has none).
 */
export async function releaseClusterOf(provider: Provider, ledger: Ledger, runId: string, log?: (line: string) => void): Promise<boolean> {
  if (!provider.releaseCluster || ((await ledger.get(runId))?.nodes ?? 1) < 2) return true;
  const signal = AbortSignal.timeout(Math.max(240_000, provider.terminateTimeoutMs ?? 0));
  const done = await withRetries(
    () => provider.releaseCluster!(runId, signal).then(() => true),
    signal,
    (err) => log?.(`deleting the ${provider.kind} network of run ${runId}'s nodes failed: ${(err as Error).message}`),
  );
  if (done) log?.(`deleted the ${provider.kind} placement and network rules of run ${runId}'s nodes`);
  return done === true;
}

async function failAndClean(
  opts: GuardOptions,
  step: 'launch' | 'ssh' | 'bootstrap',
  cause: unknown,
  instanceId: string | undefined,
  launchedAt: number | undefined,
  unknown?: UnknownLaunch,
): Promise<never> {
  const { provider, ledger, request } = opts;
  const why = cause instanceof Error ? cause.message : String(cause);
  opts.log?.(`${step} of ${request.runId} on ${provider.kind} failed: ${why}; tearing down`);
  // "May be running" until cleanup has looked through the consistency window: a crash meanwhile leaves this for the sweep.
  if (unknown) await ledger.update(request.runId, { state: 'launch-unknown', note: `launch outcome unknown (${why}): may be running` });
  const cleaned = await terminateRun(provider, request.runId, instanceId, opts.cleanupTimeoutMs, opts.log, unknown);
  const endedAt = Date.now();
  const usd =
    launchedAt !== undefined && opts.pricePerHour !== undefined
      ? finalCost(provider.kind, request.instanceType, opts.pricePerHour, launchedAt, endedAt).usd
      : undefined;
  await ledger.update(request.runId, {
    state: cleaned ? 'terminated' : 'cleanup-failed',
    endedAt,
    finalUsd: usd,
    note: `${step} failed: ${cause instanceof Error ? cause.message : String(cause)}`,
  });
  const billed =
    instanceId !== undefined && launchedAt !== undefined ? { id: instanceId, launchedAt, endedAt, ...(usd !== undefined ? { usd } : {}) } : undefined;
  throw new ProvisionError(step, cause, cleaned, billed);
}

/** Launch, wait for SSH, bootstrap; on any failure the run's instances are terminated before this rejects. */
export async function provisionGuarded(opts: GuardOptions): Promise<GuardedInstance> {
  const { provider, ledger, request, signal } = opts;
  // Written before the launch call: if we crash inside it, reconcile still knows the run id to look for.
  await ledger.update(request.runId, {
    provider: provider.kind,
    region: request.region,
    zone: request.zone,
    instanceType: request.instanceType,
    spot: request.spot,
    state: 'launching',
    pricePerHour: opts.pricePerHour,
    holderPid: process.pid,
  });
  let instance: Instance;
  const launchedAt = Date.now();
  if (signal?.aborted) return failAndClean(opts, 'launch', new ProviderError('aborted', 'cancelled before launch', provider.kind), undefined, launchedAt);
  try {
    instance = await provider.launch(request, signal);
  } catch (err) {
    return failAndClean(opts, 'launch', err, undefined, launchedAt, launchOutcomeUnknown(err) ? { request } : undefined);
  }
  await ledger.update(request.runId, {
    instanceId: instance.id,
    state: 'active',
    launchedAt,
    zone: instance.zone ?? request.zone,
    pricePerHour: opts.pricePerHour ?? instance.pricePerHour,
  });
  try {
    instance = await provider.waitForSsh(instance.id, { timeoutMs: opts.sshTimeoutMs, intervalMs: opts.sshIntervalMs, signal });
  } catch (err) {
    return failAndClean(opts, 'ssh', err, instance.id, launchedAt);
  }
  if (opts.bootstrap) {
    try {
      if (signal?.aborted) throw new ProviderError('aborted', 'cancelled before bootstrap', provider.kind);
      await opts.bootstrap(instance, signal, launchedAt);
    } catch (err) {
      return failAndClean(opts, 'bootstrap', err, instance.id, launchedAt);
    }
  }
  return { instance, launchedAt };
}

export type FinishAction = 'terminated' | 'stopped' | 'kept';

export interface FinishResult {
  readonly action: FinishAction;
  /** Why the action differs from the policy, when it does. */
  readonly reason?: string;
  /** For the run record. Kept and stopped instances get their cost up to now. */
  readonly cost?: FinalCost;
}

/**
 * Applies the teardown policy when the run finished or failed. 'keep' needs the watchdog armed
 * (idleMinutes > 0) and 'stop' needs a provider that can stop a non-spot instance; otherwise terminate.
 */
export async function finishGuarded(
  provider: Provider,
  ledger: Ledger,
  runId: string,
  instance: Instance,
  launchedAt: number,
  settings: TeardownSettings,
  pricePerHour = instance.pricePerHour,
): Promise<FinishResult> {
  const cost = (): FinalCost | undefined =>
    pricePerHour !== undefined ? finalCost(provider.kind, instance.instanceType, pricePerHour, launchedAt, Date.now()) : undefined;
  if (settings.policy === 'keep') {
    if (settings.idleMinutes !== undefined && settings.idleMinutes > 0) {
      await ledger.update(runId, { state: 'kept', policy: 'keep', idleMinutes: settings.idleMinutes });
      return { action: 'kept', cost: cost() };
    }
  }
  if (settings.policy === 'stop' && provider.canStop && !instance.spot) {
    try {
      await provider.stop(instance.id, AbortSignal.timeout(120_000));
      const c = cost();
      await ledger.update(runId, { state: 'stopped', policy: 'stop', endedAt: Date.now(), finalUsd: c?.usd });
      return { action: 'stopped', cost: c };
    } catch {
      // A stop that fails falls through to terminate: never leave it running.
    }
  }
  const reason =
    settings.policy === 'keep'
      ? 'keep needs the idle watchdog armed (teardown.idle_minutes > 0); terminated instead'
      : settings.policy === 'stop'
        ? instance.spot
          ? 'spot instances cannot be stopped; terminated instead'
          : `${provider.kind} cannot stop instances; terminated instead`
        : undefined;
  const ok = (await terminateRun(provider, runId, instance.id)) && (await releaseClusterOf(provider, ledger, runId));
  const c = cost();
  await ledger.update(runId, { state: ok ? 'terminated' : 'cleanup-failed', policy: settings.policy, endedAt: Date.now(), finalUsd: c?.usd });
  if (!ok) throw new ProviderError('server', `could not terminate ${instance.id}; it is listed under orphaned instances`, provider.kind);
  return { action: 'terminated', reason, cost: c };
}

export interface InstanceCheck {
  readonly alive: boolean;
  /** The cloud reclaimed it (spot/preemption): the run is interrupted (runRelaunch.ts decides whether it goes on elsewhere). */
  readonly interrupted: boolean;
  /** A running instance's public address now: EC2 gives an instance a new one when it starts again after a stop. */
  readonly address?: string;
}

/** One look at a running instance; the run monitor calls it on a timer. */
export async function checkInstance(provider: Provider, ledger: Ledger, runId: string, instanceId: string, signal?: AbortSignal): Promise<InstanceCheck> {
  const i = await provider.describe(instanceId, signal);
  const gone = !i || i.state === 'terminated' || i.state === 'terminating';
  if (!gone) return { alive: true, interrupted: false, ...(i.state === 'running' && i.publicIp ? { address: i.publicIp } : {}) };
  const interrupted = !!i?.interrupted || (!i && provider.kind === 'gcp');
  await ledger.update(runId, {
    state: interrupted ? 'interrupted' : 'terminated',
    endedAt: Date.now(),
    note: interrupted ? 'reclaimed by the cloud (spot or preemption)' : 'instance ended',
  });
  return { alive: false, interrupted };
}

export interface Orphan {
  readonly instance: Instance;
  readonly entry?: LedgerEntry;
  readonly reason: string;
}

export interface ReconcileResult {
  readonly orphans: Orphan[];
  /**
   * Launched by Remote Fine-Tune but not by this installation (another owner id, or none: an older version or
   * a colleague on the same account). Shown, never offered for termination.
   */
  readonly others: Instance[];
  /** Owned, alive, and intentionally kept (policy keep with the watchdog armed) or driven by a live process. */
  readonly live: Instance[];
  readonly errors: ReadonlyArray<{ readonly provider: ProviderKind; readonly message: string }>;
}

export type LivenessCheck = (entry: LedgerEntry) => boolean;

/** A run is live when the process that drives it still runs, or its instance was kept on purpose. */
export const defaultLiveness: LivenessCheck = (entry) =>
  entry.state === 'kept' ||
  entry.state === 'stopped' ||
  ((entry.state === 'active' || entry.state === 'launching' || entry.state === 'launch-unknown') && holderAlive(entry));

/** Whether something answers SSH on the instance's address (a TCP connect and the SSH-2.0- banner). */
export type SshAnswers = (instance: Instance, signal?: AbortSignal) => Promise<boolean>;

export const sshAnswers: SshAnswers = async (instance, signal) =>
  !!instance.publicIp && (await probeSshBanner(instance.publicIp, instance.sshPort, 5000, signal).catch(() => undefined)) !== undefined;

/**
 * Why an instance kept on purpose (policy keep, the on-host watchdog armed) is no longer worth keeping: the
 * watchdog powers an idle instance off, which ends billing only on EC2 (InstanceInitiatedShutdownBehavior
 * terminate). Compute Engine keeps the VM stopped with its disk billing; Lambda bills until an API terminate.
 * So a kept instance that is stopped, or that nothing answers on, is offered for termination.
 */
async function keptButOff(instance: Instance, answers: SshAnswers, signal?: AbortSignal): Promise<string | undefined> {
  if (instance.state === 'stopped' || instance.state === 'stopping') return 'kept for its watchdog, which powered it off: stopped, its disk still bills';
  if (instance.state === 'running' && !(await answers(instance, signal)))
    return 'kept for its watchdog, but SSH does not answer (powered off or broken) while it still bills';
  return undefined;
}

/** Lists owned instances on every provider and returns those with no live run behind them. */
export async function reconcile(
  providers: readonly Provider[],
  ledger: Ledger,
  isLive: LivenessCheck = defaultLiveness,
  signal?: AbortSignal,
  ownerId?: string,
  answers: SshAnswers = sshAnswers,
): Promise<ReconcileResult> {
  const entries = await ledger.entries();
  const orphans: Orphan[] = [];
  const others: Instance[] = [];
  const live: Instance[] = [];
  const errors: Array<{ provider: ProviderKind; message: string }> = [];
  for (const provider of providers) {
    let owned: Instance[];
    try {
      owned = await provider.listOwned(signal);
    } catch (err) {
      errors.push({ provider: provider.kind, message: (err as Error).message });
      continue;
    }
    for (const instance of owned) {
      if (instance.state === 'terminated' || instance.state === 'terminating') continue;
      const entry = entries.find((e) => e.provider === provider.kind && (e.instanceId === instance.id || sameRun(instance, e.runId)));
      if (!entry) {
        // Not in our ledger: ours only when it carries our owner id (the ledger was lost); else someone else's.
        if (ownerId !== undefined && instance.ownerId === ownerId) orphans.push({ instance, reason: 'not in the ownership ledger (the ledger was lost)' });
        else others.push(instance);
      } else if (isLive(entry)) {
        const off = entry.state === 'kept' ? await keptButOff(instance, answers, signal) : undefined;
        if (off) orphans.push({ instance, entry, reason: off });
        else live.push(instance);
      } else if (entry.state === 'launching') orphans.push({ instance, entry, reason: 'launched but never recorded (crash during launch)' });
      else if (entry.state === 'active') orphans.push({ instance, entry, reason: 'the process driving its run is gone' });
      else if (entry.state === 'launch-unknown')
        orphans.push({ instance, entry, reason: 'launch outcome unknown (cancelled, timed out or its answer lost), and it is running' });
      else orphans.push({ instance, entry, reason: `its run is ${entry.state} but the instance still runs` });
    }
  }
  return { orphans, others, live, errors };
}

/**
 * Launches of unknown outcome whose process is gone and for which no listing turned anything up long after any
 * lag could hide it: recorded as never made, so the sweep stops running for them. Entries of providers that
 * could not be listed stay as they are.
 */
export async function settleUnknownLaunches(
  ledger: Ledger,
  result: ReconcileResult,
  isLive: LivenessCheck = defaultLiveness,
  now = Date.now(),
): Promise<number> {
  const seen = [...result.orphans.map((o) => o.instance), ...result.others, ...result.live];
  const failed = new Set(result.errors.map((e) => e.provider));
  let n = 0;
  for (const e of await ledger.entries()) {
    if (e.state !== 'launch-unknown' || isLive(e) || failed.has(e.provider) || now - e.updatedAt < RECENTLY_TERMINATED_MS) continue;
    if (seen.some((i) => i.provider === e.provider && (i.id === e.instanceId || sameRun(i, e.runId)))) continue;
    await ledger.update(e.runId, { state: 'terminated', note: `${e.note ?? 'launch outcome unknown'}; no instance appeared in the listings since` });
    n++;
  }
  return n;
}

/** Terminates the given orphans; returns how many are gone. */
export async function terminateOrphans(
  providers: readonly Provider[],
  ledger: Ledger,
  orphans: readonly Orphan[],
  log?: (line: string) => void,
): Promise<number> {
  let n = 0;
  for (const o of orphans) {
    const provider = providers.find((p) => p.kind === o.instance.provider);
    if (!provider) continue;
    const runId = o.entry?.runId ?? o.instance.runId;
    const ok = runId
      ? (await terminateRun(provider, runId, o.instance.id, 120_000, log)) && (await releaseClusterOf(provider, ledger, runId, log))
      : await provider.terminate(o.instance.id).then(
          () => true,
          () => false,
        );
    if (ok) n++;
    if (runId) {
      await ledger.update(runId, {
        provider: provider.kind,
        region: o.entry?.region ?? o.instance.region,
        instanceType: o.entry?.instanceType ?? o.instance.instanceType,
        spot: o.entry?.spot ?? o.instance.spot,
        instanceId: o.instance.id,
        state: ok ? 'terminated' : 'cleanup-failed',
        endedAt: Date.now(),
        note: `orphan: ${o.reason}`,
      });
    }
  }
  return n;
}
