// Starting a run: the record, a cloud instance when the target is one (provisioned under the teardown
// guarantee: a failure before the detached start terminates it), the runner and workspace synced, the spec
// and the 0600 env file written, the run started detached (on every machine of a multi-node run). Watching
// then goes on in runFollow.ts; a spot run's replacement instances come from launchAttempt (runRelaunch.ts).
import { shellCommand, shellQuote } from '../../ssh/quote';
import { detectLauncher, startDetached, remoteRoot, stopRun } from '../../ssh/detachedJob';
import { perConnection } from '../../ssh/perConnection';
import type { SshSession } from '../../ssh/session';
import type { Instance } from '../../providers/provider';
import type { TargetSpec } from '../../providers/targetSpec';
import { generateInstanceHostKey } from '../../providers/instanceHostKey';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { provisionGuarded, ProvisionError } from './teardown';
import { provisionClusterGuarded } from './clusterLaunch';
import type { RunAttempt, RunRecord, RunStatus } from '../store/runRecord';
import { localOffsets, MIRRORED_FILES } from '../sync/runMirror';
import { relaunchPolicyOf } from './runAttempts';
import { isTerminal } from '../store/runRecord';
import { newRunId } from '../store/runId';
import type { DownloadItem, RunOutputs } from '../sync/artifactPlan';
import { launchRequestFor } from '../hosts/targetOffers';
import { placementSummary } from '../../providers/zoneFailover';
import { withoutNotifyTargets } from '../hosts/hostNotify';
import { controlVariablesRefusal } from '../../config/controlVariables';
import { newControlKey } from '../../telemetry/eventAuth';
import { hashText, remoteWorkspaceName, rootOf } from '../store/runPaths';
import { recordStartHistory } from '../store/runHistory';
import { specWithBudgetBilling } from '../cost/runBudget';
import { readyWait, specReadyTimeout } from '../../providers/readyWait';
import { linkOutputsScript, volumeEnv, volumeOf } from '../hosts/runVolume';
import { mountVolumeScript } from '../../providers/ec2/volume';
import {
  cloudMultiNodeProblem,
  fixedRendezvous,
  hostsOf,
  machinesOf,
  multiNodeProblem,
  parseRendezvousProbe,
  rendezvousProbe,
  specForMachine,
} from './multiNode';
import type { Rendezvous } from './multiNode';
import type { HostRef, RunManagerContext, StartRequest } from './runTypes';
import { HISTORY_FILES, RUN_FILES, runFile } from '../store/runFolder';
import { runSpecSchema } from '../../config/schemas/runSpec';
import { looseRunSpec, RUN_SPEC_DEFAULTS } from '../../config/runSpecDefaults';
import type { LooseRunSpec, RunSpec } from '../../config/runSpecDefaults';

type AttachedVolume = { readonly volumeId: string };

/** The spec's target block, as the launch reads it. */
/**
 * The spec's fields as written, typed (no defaults filled in): where "unset" means something (no target of its own,
 * no rendezvous port fixed, no outputs named), the start reads this. The spec already passed the schema (typedSpec).
 */
function writtenSpec(req: StartRequest): LooseRunSpec {
  return looseRunSpec(req.spec);
}

function specTarget(req: StartRequest): Partial<TargetSpec> | undefined {
  return writtenSpec(req).target;
}

/** Starts a run and returns once it is running on the host; watching goes on in the background. */
export async function startRun(ctx: RunManagerContext, req: StartRequest): Promise<RunRecord> {
  // Before any record, instance or sync: the workspace may not choose the host's interpreter or the runner's settings.
  const refused = controlVariablesRefusal(req.env);
  if (refused) throw new Error(refused);
  const id = newRunId();
  const now = new Date().toISOString();
  const { store } = ctx.deps;
  const target = req.target;
  const runSpec = typedSpec(req);
  const machineCount = machinesOf(runSpec);
  const hosts = machineCount > 1 ? hostsOf(runSpec) : undefined;
  if (machineCount > 1) {
    // On SSH hosts, one listed host per machine rank; on a cloud, N instances of the offer launched here.
    const problem =
      target.kind === 'ssh'
        ? multiNodeProblem(runSpec, hosts, true)
        : cloudMultiNodeProblem(runSpec, target.offer.spot, req.teardown.policy, target.provider.kind);
    if (problem) throw new Error(problem);
  }
  const policy = target.kind === 'cloud' && target.offer.spot ? relaunchPolicyOf(runSpec) : undefined;
  const identity = target.identityFile ? { identityFile: target.identityFile } : {};
  store.add({
    id,
    name: req.name,
    specPath: req.specPath,
    specHash: hashText(req.specText),
    createdAt: now,
    updatedAt: now,
    status: 'planned',
    provider: target.kind === 'ssh' ? (target.provider ?? 'ssh') : target.provider.kind,
    ...(target.kind === 'ssh'
      ? { host: hosts?.[0] ?? target.host, ...identity }
      : { region: target.offer.region, pricePerHour: target.offer.pricePerHour, identityFile: target.identityFile, sshPublicKey: target.sshPublicKey }),
    ...(req.gpu ? { gpu: req.gpu } : {}),
    ...(req.hardware ? { hardware: req.hardware } : {}),
    localDir: ctx.localDirOf(id),
    workspaceDir: req.workspaceDir,
    ...(req.envFileRel ? { envFileRel: req.envFileRel } : {}),
    origin: 'here',
    controlKey: newControlKey(),
    teardownPolicy: req.teardown.policy,
    ...(req.teardown.idleMinutes ? { idleMinutes: req.teardown.idleMinutes } : {}),
    ...(policy ? { maxAttempts: policy.maxAttempts } : {}),
    ...(req.estimated ? { estimated: req.estimated } : {}),
    ...spreadOutputs(outputsOf(writtenSpec(req))),
    ...(hosts ? { machines: hosts.slice(1).map((host, i) => ({ rank: i + 1, host, ...identity })) } : {}),
  });
  ctx.rememberEnv(id, req.env);
  try {
    // Before anything is billed or synced: what exactly this run is (spec text, git commit and diff).
    const history = await recordStartHistory({
      localDir: ctx.localDirOf(id),
      specText: req.specText,
      spec: req.spec,
      workspaceDir: req.workspaceDir,
      env: { ...req.env, ...(ctx.deps.notifyEnv?.() ?? {}) },
      ...(req.envFileRel ? { excludes: [req.envFileRel.replace(/\\/g, '/')] } : {}),
      ...(req.signal ? { signal: req.signal } : {}),
    });
    store.update(id, { git: history.git, historyFiles: history.files });
    // A replacement instance needs the spec again (its spec.json went with the reclaimed host): the history's
    // copy serves when it was written, else one is kept for the purpose.
    if (policy && !history.files.includes(HISTORY_FILES.specJson)) saveLocalSpec(ctx.localDirOf(id), req.spec);
    if (target.kind === 'cloud' && machineCount > 1) {
      const rec = await launchCluster(ctx, id, req, target, machineCount);
      ctx.watch(id);
      return rec;
    }
    if (target.kind === 'cloud') {
      const rec = await launchAttempt(ctx, id, req, target, {
        n: 1,
        spot: target.offer.spot,
        pricePerHour: target.offer.pricePerHour,
        ...(target.offer.zone ? { zone: target.offer.zone } : {}),
      });
      ctx.watch(id);
      return rec;
    }
    const rec = await startOnHost(ctx, id, req, store.get(id)!, req.signal, undefined, undefined);
    ctx.watch(id);
    return rec;
  } catch (err) {
    const cancelled = req.signal?.aborted === true;
    const cur = store.get(id);
    if (cur && !isTerminal(cur.status)) {
      store.update(id, {
        status: cancelled ? 'cancelled' : 'failed',
        failure: { message: err instanceof Error ? err.message : String(err) },
        ...(cur.instanceId && !(err instanceof ProvisionError) ? { finishedAction: 'terminated' as const } : {}),
      });
    }
    throw err;
  }
}

/** One instance for a run: the first, or a replacement after a reclaim (runRelaunch.ts). */
export interface AttemptLaunch {
  readonly n: number;
  readonly spot: boolean;
  readonly zone?: string;
  readonly pricePerHour: number;
  /** Distinguishes this launch's idempotency token from the run's other launches. */
  readonly launchKey?: string;
}

/**
 * Provisions an instance under the teardown guarantee (a failure before the detached start terminates it),
 * records it as the run's current attempt, and starts the run on it.
 */
export async function launchAttempt(
  ctx: RunManagerContext,
  id: string,
  req: StartRequest,
  target: Extract<StartRequest['target'], { kind: 'cloud' }>,
  a: AttemptLaunch,
): Promise<RunRecord> {
  const { store } = ctx.deps;
  store.update(id, { status: 'provisioning' });
  const say = sayFor(ctx, id, req);
  say(
    'provisioning',
    `launching ${target.offer.instanceType} (${a.spot ? 'spot' : 'on-demand'}${a.n > 1 ? `, attempt ${a.n}` : ''}) on ${target.provider.kind} in ${a.zone ?? target.offer.region} at $${a.pricePerHour.toFixed(2)}/h`,
  );
  let result: RunRecord | undefined;
  const provider = target.provider;
  const volume = volumeOf(typedSpec(req));
  if (volume && !provider.attachVolume) throw new Error(`target.volume: persistent volumes are supported on EC2 only, not on ${provider.kind}`);
  // An EBS volume attaches only in its own zone: an existing one decides where the instance goes (a replacement too).
  const volumeZone = volume ? await provider.volumeZone?.(volume.name, req.signal) : undefined;
  let attached: AttachedVolume | undefined;
  // Where the provider can install it, the instance gets a host key made here: its first connection is checked.
  const hostKey = target.provider.deliversHostKey ? generateInstanceHostKey() : undefined;
  const pins = [...(hostKey ? [hostKey.publicKey] : [])];
  const zone = volumeZone ?? a.zone;
  const offer = { ...target.offer, spot: a.spot, pricePerHour: a.pricePerHour, ...(zone ? { zone } : { zone: undefined }) };
  await provisionGuarded({
    provider: target.provider,
    ledger: ctx.deps.ledger,
    // The offer (zone, spot, type) and the spec's target (disk) decide the launch.
    request: {
      ...launchRequestFor(id, offer, specTarget(req), target.sshPublicKey),
      ...(target.diskGiB ? { diskGiB: target.diskGiB } : {}),
      ...(hostKey ? { hostKey } : {}),
      ...(ctx.deps.ownerId ? { ownerId: ctx.deps.ownerId } : {}),
      ...(a.launchKey ? { launchKey: a.launchKey } : {}),
      // A volume's zone is where the instance must go, and a replacement's named zone is the relaunch policy's own
      // choice (it tries the same zone, then any zone, then on-demand: runAttempts.ts): no other zone is tried.
      // The first launch's zone is only the cheapest offer's, and a replacement for "any zone" may go anywhere.
      ...(volumeZone || (a.n > 1 && a.zone) ? { zonePinned: true } : {}),
      progress: (line: string) => say('provisioning', line),
    },
    pricePerHour: a.pricePerHour,
    // An 8-GPU instance may take half an hour to answer SSH: the wait scales with it (or the spec's own).
    sshTimeoutMs: target.sshTimeoutMs ?? readyWait(provider.kind, target.offer.gpuCount, specReadyTimeout(writtenSpec(req))).timeoutMinutes * 60_000,
    ...(req.signal ? { signal: req.signal } : {}),
    log: (l) => ctx.deps.log?.(`[${id}] ${l}`),
    // Everything up to the detached start counts as bootstrap: a failure there terminates the instance.
    bootstrap: async (instance, signal, launchedAt) => {
      const cur = store.get(id)!;
      // Landed elsewhere than asked (zone failover): that zone's price, and the refusals, go in the record.
      const placed = instance.placement;
      const price = placed?.pricePerHour ?? a.pricePerHour;
      if (placed?.refused.length) say('provisioning', placementSummary(placed));
      // The mirror's sizes now are where this attempt's files (which start at 0 on the new host) append.
      const attempt: RunAttempt = {
        n: a.n,
        instanceId: instance.id,
        instanceType: instance.instanceType || target.offer.instanceType,
        region: instance.region || target.offer.region,
        ...((instance.zone ?? a.zone) ? { zone: instance.zone ?? a.zone } : {}),
        spot: a.spot,
        pricePerHour: price,
        ...(placed?.priceSource ? { priceSource: placed.priceSource } : {}),
        ...(placed?.refused.length ? { refused: placed.refused.map((r) => ({ ...r, message: r.message.slice(0, 500) })) } : {}),
        startedAt: launchedAt,
        mirrorBase: localOffsets(cur.localDir ?? ctx.localDirOf(id)),
      };
      // Billing began at the launch call: the cost so far counts boot and the wait for SSH too.
      const rec = store.update(id, {
        host: instance.publicIp ?? '',
        sshUser: instance.sshUser,
        sshPort: instance.sshPort,
        instanceId: instance.id,
        launchedAt,
        // SSH answered just now: launchedAt to readyAt is this instance's provisioning wait (issue 32.4).
        readyAt: Date.now(),
        pricePerHour: price,
        ...((instance.region || target.offer.region) !== target.offer.region ? { region: instance.region } : {}),
        pinnedHostKeys: pins.length || instance.hostKeys?.length ? [...pins, ...(instance.hostKeys ?? [])] : undefined,
        ...(a.spot || a.n > 1 || cur.maxAttempts || placed?.refused.length ? { attempts: [...(cur.attempts ?? []), attempt] } : {}),
      });
      if (volume && provider.attachVolume) {
        attached = await provider.attachVolume(instance, volume, signal);
        say('provisioning', `volume "${volume.name}" (${attached.volumeId}) attached`);
      }
      result = await startOnHost(ctx, id, req, rec, signal, instance, attached);
    },
  });
  if (!result) throw new Error('the instance came up but the run did not start');
  return result;
}

/**
 * A multi-node cloud run: `n` instances of the offer in one zone (clusterLaunch.ts), then the ranks started on
 * them as on SSH hosts, rendezvousing at node 0's private address (the nodes' own network, which the provider's
 * cluster rule opens between them). Teardown ends every node: they all carry the run id.
 */
async function launchCluster(
  ctx: RunManagerContext,
  id: string,
  req: StartRequest,
  target: Extract<StartRequest['target'], { kind: 'cloud' }>,
  n: number,
): Promise<RunRecord> {
  const { store } = ctx.deps;
  const provider = target.provider;
  const say = sayFor(ctx, id, req);
  store.update(id, { status: 'provisioning' });
  say(
    'provisioning',
    `launching ${n} × ${target.offer.instanceType} (on-demand) on ${provider.kind} in ${target.offer.zone ?? target.offer.region} at $${(target.offer.pricePerHour * n).toFixed(2)}/h in all`,
  );
  const hostKeys = provider.deliversHostKey ? Array.from({ length: n }, () => generateInstanceHostKey()) : undefined;
  const pins = (i: number, inst: Instance): string[] | undefined => {
    const all = [...(hostKeys?.[i] ? [hostKeys[i].publicKey] : []), ...(inst.hostKeys ?? [])];
    return all.length ? all : undefined;
  };
  let result: RunRecord | undefined;
  await provisionClusterGuarded({
    provider,
    ledger: ctx.deps.ledger,
    size: n,
    request: {
      ...launchRequestFor(id, target.offer, specTarget(req), target.sshPublicKey),
      ...(target.diskGiB ? { diskGiB: target.diskGiB } : {}),
      ...(ctx.deps.ownerId ? { ownerId: ctx.deps.ownerId } : {}),
      progress: (line: string) => say('provisioning', line),
    },
    ...(hostKeys ? { hostKeys } : {}),
    pricePerHour: target.offer.pricePerHour,
    sshTimeoutMs: target.sshTimeoutMs ?? readyWait(provider.kind, target.offer.gpuCount, specReadyTimeout(writtenSpec(req))).timeoutMinutes * 60_000,
    ...(req.signal ? { signal: req.signal } : {}),
    log: (l) => ctx.deps.log?.(`[${id}] ${l}`),
    bootstrap: async (instances, signal, launchedAt) => {
      const [first, ...rest] = instances;
      const pin0 = pins(0, first!);
      const rec = store.update(id, {
        host: first!.publicIp ?? '',
        sshUser: first!.sshUser,
        sshPort: first!.sshPort,
        instanceId: first!.id,
        launchedAt,
        readyAt: Date.now(),
        pricePerHour: target.offer.pricePerHour * n,
        ...(pin0 ? { pinnedHostKeys: pin0 } : {}),
        machines: rest.map((inst, k) => {
          const pin = pins(k + 1, inst);
          return {
            rank: k + 1,
            host: inst.publicIp ?? '',
            sshUser: inst.sshUser,
            sshPort: inst.sshPort,
            instanceId: inst.id,
            ...(target.identityFile ? { identityFile: target.identityFile } : {}),
            ...(pin ? { pinnedHostKeys: pin } : {}),
          };
        }),
      });
      store.update(id, { status: 'connecting' });
      say('connecting', `connecting to ${rec.host} and ${rest.length} more`);
      result = await startOnMachines(ctx, id, req, rec, signal, first!.privateIp);
    },
  });
  if (!result) throw new Error('the instances came up but the run did not start');
  return result;
}

function sayFor(ctx: RunManagerContext, id: string, req: StartRequest): (status: RunStatus, message: string) => void {
  return (status, message) => {
    ctx.deps.log?.(`[${id}] ${message}`);
    req.progress?.(status, message);
  };
}

/** Connects, then starts the run on its host, or on every machine of a multi-node run. */
export async function startOnHost(
  ctx: RunManagerContext,
  id: string,
  req: StartRequest,
  rec: RunRecord,
  signal: AbortSignal | undefined,
  instance: Instance | undefined,
  attached: AttachedVolume | undefined,
): Promise<RunRecord> {
  const { store } = ctx.deps;
  store.update(id, { status: 'connecting' });
  sayFor(ctx, id, req)('connecting', `connecting to ${rec.host}`);
  if (rec.machines?.length) return await startOnMachines(ctx, id, req, rec, signal);
  const started = await startOn(ctx, id, req, { hostRef: rec, spec: req.spec, signal, rank: undefined, instance, attached });
  return store.update(id, { status: 'running', remoteDir: started.runDir, pid: started.pid });
}

/**
 * Syncs the runner and the workspace to one machine (rank 0's host, or another rank's), writes spec.json and
 * the 0600 env file and starts the run detached there; returns its folder and pid.
 */
async function startOn(
  ctx: RunManagerContext,
  id: string,
  req: StartRequest,
  m: {
    readonly hostRef: HostRef;
    readonly spec: Readonly<Record<string, unknown>>;
    readonly signal: AbortSignal | undefined;
    readonly rank: number | undefined;
    readonly instance?: Instance | undefined;
    readonly attached?: AttachedVolume | undefined;
  },
): Promise<{ runDir: string; pid: number; launcher: string }> {
  const { store } = ctx.deps;
  const { signal, rank, instance, attached } = m;
  const on = rank ? ` (machine rank ${rank})` : '';
  const say = (status: RunStatus, message: string): void => sayFor(ctx, id, req)(status, `${message}${on}`);
  const session = await ctx.hostFor(m.hostRef).session(signal);
  if (!rank) store.update(id, { status: 'syncing' });
  const root = await remoteRoot(session);
  const wsRemote = `${root}/workspaces/${remoteWorkspaceName(req.workspaceDir)}`;
  // Asked now, while the syncs run: the launch needs it at the end.
  detectLauncher(session).catch(() => undefined);
  // As before, a host where this fails is left to fail in the sync that follows, which says why.
  await workspacesFolder(session).catch(() => undefined);
  const runnerRemote = `${root}/runner/${ctx.deps.runnerVersion}`;
  say('syncing', `syncing the runner to ${runnerRemote} and ${req.workspaceDir} to ${wsRemote}`);
  // .env files never travel as workspace files: their values go, when the run needs them, in the 0600 env file.
  const excludes = ['.env', '.env.*', ...(req.envFileRel ? [`/${req.envFileRel.replace(/\\/g, '/')}`] : [])];
  // Two trees to two folders, over channels of the same connection (the session opens a sibling connection past
  // the host's MaxSessions): neither waits for the other's round trips.
  const [, synced] = await Promise.all([
    ctx.deps.sync(session, ctx.deps.runnerDir, runnerRemote, { ...(signal ? { signal } : {}), ignoreFiles: false }),
    ctx.deps.sync(session, req.workspaceDir, wsRemote, {
      ...(signal ? { signal } : {}),
      excludes,
      onProgress: (msg) => say('syncing', msg),
    }),
  ]);
  say('syncing', `synced: ${synced.filesSent} files, ${(synced.bytesSent / 1e6).toFixed(1)} MB sent`);
  if (attached) {
    const mounted = await session.exec(mountVolumeScript(attached.volumeId), { what: `mounting the volume ${attached.volumeId}` });
    if (!mounted.stdout.toString('utf8').includes('RFT_VOLUME_MOUNTED'))
      throw new Error(`the volume ${attached.volumeId} could not be mounted (exit ${mounted.code}): ${mounted.stderr.toString('utf8').trim().slice(0, 300)}`);
    const out = typedSpec(req).outputs?.dir ?? RUN_SPEC_DEFAULTS.outputs.dir;
    await session.run(linkOutputsScript(wsRemote, remoteWorkspaceName(req.workspaceDir), out), {
      what: 'linking the outputs onto the volume',
    });
    say('syncing', `volume ${attached.volumeId} mounted: data, the Hugging Face cache and outputs live on it`);
  }
  if (signal?.aborted) throw new Error('cancelled');
  if (!rank) store.update(id, { status: 'bootstrapping' });
  say('bootstrapping', `writing ${RUN_FILES.spec} and the 0600 env file, starting the run detached`);
  const command = runnerCommand(ctx.deps.remotePython ?? 'python3', runnerRemote, wsRemote, typedSpec(req).command !== undefined);
  const p = instance?.provider;
  const launch = instance && (p === 'lambda' || p === 'ec2' || p === 'gcp') ? { provider: p, instanceId: instance.id } : undefined;
  const env = { ...withoutNotifyTargets(req.env), ...(ctx.deps.notifyEnv?.() ?? {}), ...(attached ? volumeEnv(req.env) : {}) };
  const controlKey = store.get(id)?.controlKey;
  const billed = store.get(id);
  // The host enforces the spec's budget by itself: it gets this instance's price and when billing began.
  const spec = specWithBudgetBilling(m.spec, {
    ...(billed?.pricePerHour !== undefined ? { pricePerHour: billed.pricePerHour } : {}),
    ...(billed?.launchedAt !== undefined ? { launchedAtMs: billed.launchedAt } : {}),
    ...(billed?.attempts ? { attempts: billed.attempts } : {}),
  });
  const started = await startDetached(session, {
    runId: id,
    command,
    env,
    cwd: wsRemote,
    spec,
    ...(launch ? { launch } : {}),
    ...(controlKey ? { controlKey } : {}),
    ...(req.resume ? { reuse: true } : {}),
    // The mirror tails these from the first byte: made before the run starts, tail -F follows them at once.
    followed: MIRRORED_FILES.map((f) => f.name),
  });
  say('running', `running on ${m.hostRef.host} (pid ${started.pid}, ${started.launcher})`);
  return started;
}

/**
 * `<root>/workspaces`, made and closed to other users (synced code, the runner and run folders are the user's
 * alone on a shared host), once per connection: a second Start in the same window does not wait for it again.
 */
const workspacesFolder = perConnection(async (session: SshSession): Promise<void> => {
  const root = await remoteRoot(session);
  const r = await session.exec(`umask 077; mkdir -p ${shellQuote(`${root}/workspaces`)} && chmod 700 ${shellQuote(root)} ${shellQuote(`${root}/workspaces`)}`, {
    what: `creating ${root}/workspaces`,
  });
  if (r.code !== 0) throw new Error(`creating ${root}/workspaces failed (exit ${r.code ?? r.signal})`);
});

/**
 * Every machine of a multi-node run: rank 0's address and a free port there first (the rendezvous every
 * rank's spec names), then all machines synced and started together. If one cannot start, those already
 * started are stopped: a rank waiting alone at the rendezvous would hold its host for torchrun's timeout.
 */
async function startOnMachines(
  ctx: RunManagerContext,
  id: string,
  req: StartRequest,
  rec: RunRecord,
  signal: AbortSignal | undefined,
  /** Rank 0's address on the nodes' own network, where the provider knows it (a cloud instance's private address). */
  privateAddress?: string,
): Promise<RunRecord> {
  const spec = fixedRendezvous(writtenSpec(req));
  const fixed = { ...spec, ...(spec.address || !privateAddress ? {} : { address: privateAddress }) };
  let rdv: Rendezvous;
  if (fixed.address && fixed.port) rdv = { address: fixed.address, port: fixed.port };
  else {
    const probe = await ctx
      .hostFor(rec)
      .use((s) => s.exec(rendezvousProbe(shellQuote(ctx.deps.remotePython ?? 'python3')), { what: 'finding an address for the rendezvous' }), signal);
    const got = parseRendezvousProbe(probe.stdout.toString());
    const address = fixed.address ?? got.address;
    const port = fixed.port ?? got.port;
    if (!address || !port) throw new Error(`could not learn rank 0's address and a free port on ${rec.host}: ${probe.stderr.toString().trim()}`);
    rdv = { address, port };
  }
  sayFor(ctx, id, req)('syncing', `rendezvous at ${rdv.address}:${rdv.port} on ${rec.host} for ${1 + rec.machines!.length} machines`);
  const refs: Array<HostRef & { rank: number }> = [{ ...rec, rank: 0 }, ...rec.machines!.map((m) => ({ ...m, provider: rec.provider }))];
  const results = await Promise.allSettled(
    refs.map((ref) => startOn(ctx, id, req, { hostRef: ref, spec: specForMachine(req.spec, ref.rank, rdv), signal, rank: ref.rank || undefined })),
  );
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await Promise.all(
      results.map(async (r, i) => {
        if (r.status !== 'fulfilled') return;
        await ctx
          .hostFor(refs[i]!)
          .use((s) => stopRun(s, id, { graceMs: 5_000, root: rootOf(r.value.runDir) }))
          .catch(() => undefined);
      }),
    );
    throw failed.reason;
  }
  const started = results.map((r) => (r as PromiseFulfilledResult<{ runDir: string; pid: number }>).value);
  return ctx.deps.store.update(id, {
    status: 'running',
    remoteDir: started[0]!.runDir,
    pid: started[0]!.pid,
    machines: rec.machines!.map((m, i) => ({ ...m, remoteDir: started[i + 1]!.runDir, pid: started[i + 1]!.pid, status: 'running' as const })),
  });
}

function saveLocalSpec(localDir: string, spec: Readonly<Record<string, unknown>>): void {
  mkdirSync(localDir, { recursive: true });
  writeFileSync(runFile(localDir, 'spec'), JSON.stringify(spec), { mode: 0o600 });
}

/** A stored spec as the schema types it; undefined when the schema refuses it (a spec from another version). */
export function runSpecOf(spec: unknown): RunSpec | undefined {
  const r = runSpecSchema.safeParse(spec);
  return r.success ? r.data : undefined;
}

/** The request's spec as the schema types it (the plan's, or typed from the spec sent). */
function typedSpec(req: StartRequest): RunSpec {
  const typed = req.runSpec ?? runSpecOf(req.spec);
  if (!typed) throw new Error(`${req.name}: the run spec is not one the schema accepts; check it in the editor`);
  return typed;
}

/** The spec a spot run started with, kept in its local folder for a replacement instance. */
export function loadLocalSpec(localDir: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(readFileSync(runFile(localDir, 'spec'), 'utf8')) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What command.sh runs on the host. The built-in trainer first lets the runner's bootstrap pick a Python
 * with CUDA torch (and build the venv on it); an own script runs under the host's python, as the person
 * would run it. PYTHONPATH lives in command.sh, and secrets only in the env file.
 * The runner starts in the run dir with PYTHONSAFEPATH=1: `python -m` puts the working directory first on
 * sys.path, and in the synced workspace a repo's own `remote_finetune/` or `json.py` would run in its place,
 * with the tokens in its environment. The run dir holds only our files; Pythons before 3.11 ignore the flag.
 */
export function runnerCommand(python: string, runnerDir: string, workdir: string, ownScript: boolean): string {
  const pp = `cd "$RFT_RUN_DIR" && PYTHONSAFEPATH=1 PYTHONPATH=${shellQuote(runnerDir)}`;
  const run = (py: string): string => `${pp} exec ${py} -m remote_finetune run --workdir ${shellQuote(workdir)} --run-dir "$RFT_RUN_DIR"`;
  if (ownScript) return run(shellQuote(python));
  return [
    `${pp} ${shellCommand([python, '-m', 'remote_finetune', 'bootstrap', '--workdir', workdir])} --run-dir "$RFT_RUN_DIR" > "$RFT_RUN_DIR/${RUN_FILES.bootstrap}" || { cat "$RFT_RUN_DIR/${RUN_FILES.bootstrap}"; exit 1; }`,
    `py=$(sed -n 's/.*"python": *"\\([^"]*\\)".*/\\1/p' "$RFT_RUN_DIR/${RUN_FILES.bootstrap}"); [ -n "$py" ] || { echo 'bootstrap chose no python' >&2; exit 1; }`,
    run('"$py"'),
  ].join('\n');
}

/** The spec's outputs section, if it says anything about what comes back. */
function outputsOf(spec: LooseRunSpec): RunOutputs | undefined {
  const { dir, download } = spec.outputs ?? {};
  if (dir === undefined && download === undefined) return undefined;
  return { ...(dir !== undefined ? { dir } : {}), ...(download ? { download } : {}) };
}

function spreadOutputs(o: RunOutputs | undefined): { outputs?: { dir?: string; download?: DownloadItem[] } } {
  if (!o) return {};
  return { outputs: { ...(o.dir !== undefined ? { dir: o.dir } : {}), ...(o.download ? { download: [...o.download] } : {}) } };
}
