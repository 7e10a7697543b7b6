// Starting a run: the record, a cloud instance when the target is one (provisioned under the teardown
// guarantee: a failure before the detached start terminates it), the runner and workspace synced, the spec
// and the 0600 env file written, the run started detached. Watching then goes on in runFollow.ts.
import { shellCommand, shellQuote } from '../ssh/quote';
import { startDetached, remoteRoot, stopRun } from '../ssh/runs';
import type { Instance } from '../providers/types';
import type { TargetSpec } from '../providers/targetSpec';
import { generateInstanceHostKey } from '../providers/instanceHostKey';
import { provisionGuarded } from './teardown';
import type { RunRecord, RunStatus } from './runRecord';
import { isTerminal } from './runRecord';
import { newRunId } from './runId';
import type { DownloadItem, RunOutputs } from './artifactPlan';
import { launchRequestFor } from './targetOffers';
import { withoutNotifyTargets } from './hostNotify';
import { hashText, remoteWorkspaceName, rootOf } from './runPaths';
import { recordStartHistory } from './runHistory';
import { linkOutputsScript, volumeEnv, volumeOf } from './runVolume';
import { mountVolumeScript } from '../providers/ec2Volume';
import { fixedRendezvous, hostsOf, machinesOf, multiNodeProblem, parseRendezvousProbe, rendezvousProbe, specForMachine } from './multiNode';
import type { Rendezvous } from './multiNode';
import type { HostRef, RunManagerContext, StartRequest } from './runTypes';

/** The spec's target block, as the launch reads it. */
function specTarget(spec: Readonly<Record<string, unknown>>): Partial<TargetSpec> | undefined {
  return typeof spec.target === 'object' && spec.target !== null ? (spec.target as Partial<TargetSpec>) : undefined;
}

/** Starts a run and returns once it is running on the host; watching goes on in the background. */
export async function startRun(ctx: RunManagerContext, req: StartRequest): Promise<RunRecord> {
  const id = newRunId();
  const now = new Date().toISOString();
  const { store } = ctx.deps;
  const target = req.target;
  const machineCount = machinesOf(req.spec);
  const hosts = machineCount > 1 ? hostsOf(req.spec) : undefined;
  if (machineCount > 1) {
    // Several machines are the person's own SSH hosts: provisioning N instances is not supported yet.
    if (target.kind !== 'ssh')
      throw new Error(`launcher.num_machines is ${machineCount}: multi-node runs go to SSH hosts (target.hosts), not to a new instance`);
    const problem = multiNodeProblem(req.spec, hosts);
    if (problem) throw new Error(problem);
  }
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
      : { region: target.offer.region, pricePerHour: target.offer.pricePerHour, identityFile: target.identityFile }),
    ...(req.gpu ? { gpu: req.gpu } : {}),
    offsets: { output_log: 0, events: 0, gpu: 0 },
    localDir: ctx.localDirOf(id),
    workspaceDir: req.workspaceDir,
    origin: 'here',
    teardownPolicy: req.teardown.policy,
    ...(req.teardown.idleMinutes ? { idleMinutes: req.teardown.idleMinutes } : {}),
    ...spreadOutputs(outputsOf(req.spec)),
    ...(hosts ? { machines: hosts.slice(1).map((host, i) => ({ rank: i + 1, host, ...identity })) } : {}),
  });
  const say = (status: RunStatus, message: string): void => {
    ctx.deps.log?.(`[${id}] ${message}`);
    req.progress?.(status, message);
  };
  let launched: { instance: Instance; launchedAt: number } | undefined;
  const volume = volumeOf(req.spec);
  let attached: { readonly volumeId: string } | undefined;
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
    /** Syncs and starts the run on one machine (rank 0's host, or another rank's); returns its folder and pid. */
    const startOn = async (
      hostRef: HostRef,
      spec: Readonly<Record<string, unknown>>,
      signal: AbortSignal | undefined,
      rank: number | undefined,
    ): Promise<{ runDir: string; pid: number; launcher: string }> => {
      const on = rank ? ` (machine rank ${rank})` : '';
      const say2 = (status: RunStatus, message: string): void => say(status, `${message}${on}`);
      const session = await ctx.hostFor(hostRef).session(signal);
      if (!rank) store.update(id, { status: 'syncing' });
      const root = await remoteRoot(session);
      const wsRemote = `${root}/workspaces/${remoteWorkspaceName(req.workspaceDir)}`;
      // Synced code, the runner and run folders are the user's alone on a shared host.
      await session.exec(`umask 077; mkdir -p ${shellQuote(`${root}/workspaces`)} && chmod 700 ${shellQuote(root)} ${shellQuote(`${root}/workspaces`)}`);
      const runnerRemote = `${root}/runner/${ctx.deps.runnerVersion}`;
      say2('syncing', `syncing the runner to ${runnerRemote}`);
      await ctx.deps.sync(session, ctx.deps.runnerDir, runnerRemote, { ...(signal ? { signal } : {}), ignoreFiles: false });
      say2('syncing', `syncing ${req.workspaceDir} to ${wsRemote}`);
      // .env files never travel as workspace files: their values go, when the run needs them, in the 0600 env file.
      const excludes = ['.env', '.env.*', ...(req.envFileRel ? [`/${req.envFileRel.replace(/\\/g, '/')}`] : [])];
      const synced = await ctx.deps.sync(session, req.workspaceDir, wsRemote, {
        ...(signal ? { signal } : {}),
        excludes,
        onProgress: (m) => say2('syncing', m),
      });
      say2('syncing', `synced: ${synced.filesSent} files, ${(synced.bytesSent / 1e6).toFixed(1)} MB sent`);
      if (attached && !rank) {
        const m = await session.exec(mountVolumeScript(attached.volumeId));
        if (!m.stdout.toString('utf8').includes('RFT_VOLUME_MOUNTED'))
          throw new Error(`the volume ${attached.volumeId} could not be mounted (exit ${m.code}): ${m.stderr.toString('utf8').trim().slice(0, 300)}`);
        const out = (req.spec.outputs as { dir?: unknown } | undefined)?.dir;
        await session.run(linkOutputsScript(wsRemote, remoteWorkspaceName(req.workspaceDir), typeof out === 'string' ? out : 'outputs'));
        say('syncing', `volume ${attached.volumeId} mounted: data, the Hugging Face cache and outputs live on it`);
      }
      if (signal?.aborted) throw new Error('cancelled');
      if (!rank) store.update(id, { status: 'bootstrapping' });
      say2('bootstrapping', 'writing spec.json and the 0600 env file, starting the run detached');
      const command = runnerCommand(ctx.deps.remotePython ?? 'python3', runnerRemote, wsRemote, typeof req.spec.command === 'string');
      const p = launched?.instance.provider;
      const launch = launched && (p === 'lambda' || p === 'ec2' || p === 'gcp') ? { provider: p, instanceId: launched.instance.id } : undefined;
      const env = { ...withoutNotifyTargets(req.env), ...(ctx.deps.notifyEnv?.() ?? {}), ...(attached ? volumeEnv(req.env) : {}) };
      const started = await startDetached(session, { runId: id, command, env, cwd: wsRemote, spec, ...(launch ? { launch } : {}) });
      say2('running', `running on ${hostRef.host} (pid ${started.pid}, ${started.launcher})`);
      return started;
    };

    const runOnHost = async (rec: RunRecord, signal: AbortSignal | undefined): Promise<RunRecord> => {
      store.update(id, { status: 'connecting' });
      say('connecting', `connecting to ${rec.host}`);
      if (rec.machines?.length) return await runOnMachines(rec, signal);
      const started = await startOn(rec, req.spec, signal, undefined);
      return store.update(id, { status: 'running', remoteDir: started.runDir, pid: started.pid });
    };

    /**
     * Every machine of a multi-node run: rank 0's address and a free port there first (the rendezvous every
     * rank's spec names), then all machines synced and started together. If one cannot start, those already
     * started are stopped: a rank waiting alone at the rendezvous would hold its host for torchrun's timeout.
     */
    const runOnMachines = async (rec: RunRecord, signal: AbortSignal | undefined): Promise<RunRecord> => {
      const fixed = fixedRendezvous(req.spec);
      let rdv: Rendezvous;
      if (fixed.address && fixed.port) rdv = { address: fixed.address, port: fixed.port };
      else {
        const probe = await ctx.hostFor(rec).use((s) => s.exec(rendezvousProbe(shellQuote(ctx.deps.remotePython ?? 'python3'))), signal);
        const got = parseRendezvousProbe(probe.stdout.toString());
        const address = fixed.address ?? got.address;
        const port = fixed.port ?? got.port;
        if (!address || !port) throw new Error(`could not learn rank 0's address and a free port on ${rec.host}: ${probe.stderr.toString().trim()}`);
        rdv = { address, port };
      }
      say('syncing', `rendezvous at ${rdv.address}:${rdv.port} on ${rec.host} for ${1 + rec.machines!.length} machines`);
      const refs: Array<HostRef & { rank: number }> = [{ ...rec, rank: 0 }, ...rec.machines!.map((m) => ({ ...m, provider: rec.provider }))];
      const results = await Promise.allSettled(refs.map((ref) => startOn(ref, specForMachine(req.spec, ref.rank, rdv), signal, ref.rank || undefined)));
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
      return store.update(id, {
        status: 'running',
        remoteDir: started[0]!.runDir,
        pid: started[0]!.pid,
        machines: rec.machines!.map((m, i) => ({ ...m, remoteDir: started[i + 1]!.runDir, pid: started[i + 1]!.pid, status: 'running' as const })),
      });
    };

    if (target.kind === 'cloud') {
      store.update(id, { status: 'provisioning' });
      say(
        'provisioning',
        `launching ${target.offer.instanceType} on ${target.provider.kind} in ${target.offer.region} at $${target.offer.pricePerHour.toFixed(2)}/h`,
      );
      let result: RunRecord | undefined;
      const provider = target.provider;
      if (volume && !provider.attachVolume) throw new Error(`target.volume: persistent volumes are supported on EC2 only, not on ${provider.kind}`);
      // An EBS volume attaches only in its own zone: an existing one decides where the instance goes.
      const volumeZone = volume ? await provider.volumeZone?.(volume.name, req.signal) : undefined;
      // Where the provider can install it, the instance gets a host key made here: its first connection is checked.
      const hostKey = target.provider.deliversHostKey ? generateInstanceHostKey() : undefined;
      const pins = [...(hostKey ? [hostKey.publicKey] : [])];
      launched = await provisionGuarded({
        provider: target.provider,
        ledger: ctx.deps.ledger,
        // The offer (zone, spot, type) and the spec's target (disk) decide the launch.
        request: {
          ...launchRequestFor(id, target.offer, specTarget(req.spec), target.sshPublicKey),
          ...(target.diskGiB ? { diskGiB: target.diskGiB } : {}),
          ...(hostKey ? { hostKey } : {}),
          ...(ctx.deps.ownerId ? { ownerId: ctx.deps.ownerId } : {}),
          ...(volumeZone ? { zone: volumeZone } : {}),
        },
        pricePerHour: target.offer.pricePerHour,
        sshTimeoutMs: target.sshTimeoutMs ?? 15 * 60_000,
        ...(req.signal ? { signal: req.signal } : {}),
        log: (l) => ctx.deps.log?.(`[${id}] ${l}`),
        // Everything up to the detached start counts as bootstrap: a failure there terminates the instance.
        bootstrap: async (instance, signal, launchedAt) => {
          const host = instance.publicIp ?? '';
          // Billing began at the launch call: the cost so far counts boot and the wait for SSH too.
          const rec = store.update(id, {
            host,
            sshUser: instance.sshUser,
            sshPort: instance.sshPort,
            instanceId: instance.id,
            launchedAt,
            ...(pins.length || instance.hostKeys?.length ? { pinnedHostKeys: [...pins, ...(instance.hostKeys ?? [])] } : {}),
          });
          if (volume && provider.attachVolume) {
            attached = await provider.attachVolume(instance, volume, signal);
            say('provisioning', `volume "${volume.name}" (${attached.volumeId}) attached`);
          }
          result = await runOnHost(rec, signal);
        },
      });
      if (!result) throw new Error('the instance came up but the run did not start');
      ctx.watch(id);
      return result;
    }
    const rec = await runOnHost(store.get(id)!, req.signal);
    ctx.watch(id);
    return rec;
  } catch (err) {
    const cancelled = req.signal?.aborted === true;
    const cur = store.get(id);
    if (cur && !isTerminal(cur.status)) {
      store.update(id, {
        status: cancelled ? 'cancelled' : 'failed',
        failure: { message: err instanceof Error ? err.message : String(err) },
        ...(launched ? { finishedAction: 'terminated' as const } : {}),
      });
    }
    throw err;
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
    `${pp} ${shellCommand([python, '-m', 'remote_finetune', 'bootstrap', '--workdir', workdir])} --run-dir "$RFT_RUN_DIR" > "$RFT_RUN_DIR/bootstrap.json" || { cat "$RFT_RUN_DIR/bootstrap.json"; exit 1; }`,
    `py=$(sed -n 's/.*"python": *"\\([^"]*\\)".*/\\1/p' "$RFT_RUN_DIR/bootstrap.json"); [ -n "$py" ] || { echo 'bootstrap chose no python' >&2; exit 1; }`,
    run('"$py"'),
  ].join('\n');
}

/** The spec's outputs section, if it says anything about what comes back. */
function outputsOf(spec: Readonly<Record<string, unknown>>): RunOutputs | undefined {
  const o = spec.outputs;
  if (!o || typeof o !== 'object') return undefined;
  const { dir, download } = o as { dir?: unknown; download?: unknown };
  const items = Array.isArray(download)
    ? download.filter((d): d is 'adapter' | 'checkpoints' | 'logs' => d === 'adapter' || d === 'checkpoints' || d === 'logs')
    : undefined;
  if (typeof dir !== 'string' && !items) return undefined;
  return { ...(typeof dir === 'string' ? { dir } : {}), ...(items ? { download: items } : {}) };
}

function spreadOutputs(o: RunOutputs | undefined): { outputs?: { dir?: string; download?: DownloadItem[] } } {
  if (!o) return {};
  return { outputs: { ...(o.dir !== undefined ? { dir: o.dir } : {}), ...(o.download ? { download: [...o.download] } : {}) } };
}
