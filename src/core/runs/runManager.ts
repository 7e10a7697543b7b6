// Drives runs from start to finish and back after a reload: provision (cloud) → connect → sync the
// workspace and the runner → write spec and secrets → start detached → mirror the run's files by byte
// offset → on exit, download artifacts and tear down per policy. Every step updates the run store, so a
// crash anywhere leaves a record that reattach() picks up. No `vscode` here: the features wrap it.
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ConnectOptions, SshSession } from '../ssh/session';
import { SshHost } from '../ssh/reconnect';
import { isValidRunId, startDetached, runStatus, stopRun, listRuns, remoteRoot, runDirOf } from '../ssh/runs';
import { shellCommand, shellQuote } from '../ssh/quote';
import { MAX_PENDING } from '../ssh/tail';
import { parseEventLine } from '../telemetry/events';
import type { RunEvent } from '../telemetry/events';
import type { Instance, Offer, Provider } from '../providers/types';
import { runningCost } from '../providers/cost';
import type { Ledger } from './ledger';
import { provisionGuarded, finishGuarded, checkInstance } from './teardown';
import type { TeardownSettings } from './teardown';
import type { RunStore } from './runStore';
import type { RunRecord, RunStatus } from './runRecord';
import { isTerminal } from './runRecord';
import { newRunId } from './runId';
import { mirrorRun, localOffsets } from './runMirror';
import { downloadFolder } from './artifacts';
import { artifactPlan, localOutputsDir } from './artifactPlan';
import type { DownloadItem, RunOutputs } from './artifactPlan';
import type { DownloadProgress } from './artifacts';
import { instanceHostKeyAlias, sshTargetOf } from './sshTarget';
import { generateInstanceHostKey } from '../providers/instanceHostKey';
import { launchRequestFor } from './targetOffers';
import type { TargetSpec } from '../providers/targetSpec';

/** The spec's target block, as the launch reads it. */
function specTarget(spec: Readonly<Record<string, unknown>>): Partial<TargetSpec> | undefined {
  return typeof spec.target === 'object' && spec.target !== null ? (spec.target as Partial<TargetSpec>) : undefined;
}

export type RunTarget =
  | { readonly kind: 'ssh'; readonly host: string; readonly provider?: 'ssh' | 'local'; readonly identityFile?: string }
  | {
    readonly kind: 'cloud';
    readonly provider: Provider;
    readonly offer: Offer;
    /** Key pair made for this run: the public key goes to the cloud, the private key file never leaves. */
    readonly sshPublicKey: string;
    readonly identityFile: string;
    readonly sshTimeoutMs?: number;
    readonly diskGiB?: number;
  };

/** Copies a local folder to the host incrementally (core/ssh's sync). */
export type SyncFn = (
  session: SshSession,
  localDir: string,
  remoteDir: string,
  options: { readonly signal?: AbortSignal; readonly onProgress?: (message: string) => void; readonly ignoreFiles?: boolean; readonly excludes?: readonly string[] },
) => Promise<{ readonly filesSent: number; readonly bytesSent: number }>;

export interface StartRequest {
  readonly specPath: string;
  /** The spec file's text, for the spec hash in the record. */
  readonly specText: string;
  /** The parsed spec, uploaded as spec.json. */
  readonly spec: Readonly<Record<string, unknown>>;
  readonly name: string;
  /** The folder synced to the host (the spec's folder or the workspace). */
  readonly workspaceDir: string;
  /** Variables for the run's 0600 env file (secrets included). Never logged, never stored. */
  readonly env: Readonly<Record<string, string>>;
  /** The env file, relative to workspaceDir: its values travel only in the 0600 env file, never as a synced file. */
  readonly envFileRel?: string;
  readonly target: RunTarget;
  readonly gpu?: string;
  readonly teardown: TeardownSettings;
  readonly progress?: (status: RunStatus, message: string) => void;
  readonly signal?: AbortSignal;
}

export interface RunManagerDeps {
  readonly store: RunStore;
  /** Put on every launched instance (ownerId.ts): the orphan sweep offers only instances with this id. */
  readonly ownerId?: string;
  /** Local mirrors go under storageDir/runs/<id>. */
  readonly storageDir: string;
  /** The extension's python-runner folder, copied to the host once per version. */
  readonly runnerDir: string;
  readonly runnerVersion: string;
  readonly connectOptions: ConnectOptions;
  readonly ledger: Ledger;
  readonly sync: SyncFn;
  /** The cloud provider that owns a record's instance (recreated after a reload from settings/secrets). */
  readonly providerFor?: (record: RunRecord) => Provider | undefined;
  /** Interpreter on the host for the runner. */
  readonly remotePython?: string;
  readonly log?: (line: string) => void;
  /** How often a cloud run's instance is checked for a spot reclaim. */
  readonly instanceCheckMs?: number;
  /** How often a cloud run's cost so far is brought up to date (default 30 s). */
  readonly costIntervalMs?: number;
  /** The clock the cost so far is read against (tests move it past billing minimums). */
  readonly now?: () => number;
}

export interface RunFinished {
  readonly record: RunRecord;
  readonly failure?: { readonly signature?: string; readonly message: string; readonly hint?: string };
}

interface Watch {
  readonly abort: AbortController;
  readonly done: Promise<void>;
}

function hashText(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

/** The remote folder a workspace syncs to: stable per local folder, so re-runs send only changes. */
export function remoteWorkspaceName(localDir: string): string {
  const base = localDir.replace(/[\\/]+$/, '').split(/[\\/]/).pop() ?? 'workspace';
  return `${base.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 40) || 'workspace'}-${hashText(localDir).slice(0, 8)}`;
}

export class RunManager {
  private readonly hosts = new Map<string, SshHost>();
  private readonly watches = new Map<string, Watch>();
  private readonly eventListeners = new Set<(runId: string, events: readonly RunEvent[]) => void>();
  private readonly finishedListeners = new Set<(f: RunFinished) => void>();
  private readonly stopping = new Set<string>();
  private disposed = false;

  constructor(private readonly deps: RunManagerDeps) {}

  get store(): RunStore {
    return this.deps.store;
  }

  onEvents(l: (runId: string, events: readonly RunEvent[]) => void): { dispose(): void } {
    this.eventListeners.add(l);
    return { dispose: () => this.eventListeners.delete(l) };
  }

  onFinished(l: (f: RunFinished) => void): { dispose(): void } {
    this.finishedListeners.add(l);
    return { dispose: () => this.finishedListeners.delete(l) };
  }

  localDirOf(runId: string): string {
    if (!isValidRunId(runId)) throw new Error(`invalid run id ${JSON.stringify(runId)}`);
    return join(this.deps.storageDir, 'runs', runId);
  }

  private hostFor(record: Pick<RunRecord, 'host' | 'sshUser' | 'sshPort' | 'identityFile' | 'instanceId' | 'pinnedHostKeys'> & { readonly provider?: string }): SshHost {
    if (!record.host) throw new Error('the run has no host');
    const key = `${record.sshUser ?? ''}@${record.host}:${record.sshPort ?? ''}#${record.identityFile ?? ''}#${record.instanceId ?? ''}`;
    let h = this.hosts.get(key);
    if (!h) {
      // A provisioned instance's user and port are the image's defaults: the user's ssh_config may override
      // them for that address (as OpenSSH would), so they are passed as defaults, not pinned.
      const target = sshTargetOf(record.host, {
        ...(record.sshUser ? (record.instanceId ? { defaultUser: record.sshUser } : { user: record.sshUser }) : {}),
        ...(record.sshPort && !(record.instanceId && record.sshPort === 22) ? { port: record.sshPort } : {}),
        ...(record.identityFile ? { identityFile: record.identityFile } : {}),
        ...(record.instanceId && record.provider ? { hostKeyAlias: instanceHostKeyAlias(record.provider, record.instanceId) } : {}),
        ...(record.pinnedHostKeys ? { pinnedHostKeys: record.pinnedHostKeys } : {}),
      });
      h = new SshHost(target, this.deps.connectOptions, { maxMs: 15_000 });
      this.hosts.set(key, h);
    }
    return h;
  }

  /** Starts a run and returns once it is running on the host; watching goes on in the background. */
  async start(req: StartRequest): Promise<RunRecord> {
    const id = newRunId();
    const now = new Date().toISOString();
    const { store } = this.deps;
    const target = req.target;
    store.add({
      id, name: req.name, specPath: req.specPath, specHash: hashText(req.specText), createdAt: now, updatedAt: now,
      status: 'planned', provider: target.kind === 'ssh' ? (target.provider ?? 'ssh') : target.provider.kind,
      ...(target.kind === 'ssh' ? { host: target.host, ...(target.identityFile ? { identityFile: target.identityFile } : {}) } : { region: target.offer.region, pricePerHour: target.offer.pricePerHour, identityFile: target.identityFile }),
      ...(req.gpu ? { gpu: req.gpu } : {}),
      offsets: { output_log: 0, events: 0, gpu: 0 },
      localDir: this.localDirOf(id), workspaceDir: req.workspaceDir, origin: 'here',
      teardownPolicy: req.teardown.policy, ...(req.teardown.idleMinutes ? { idleMinutes: req.teardown.idleMinutes } : {}),
      ...spreadOutputs(outputsOf(req.spec)),
    });
    const say = (status: RunStatus, message: string): void => {
      this.deps.log?.(`[${id}] ${message}`);
      req.progress?.(status, message);
    };
    let launched: { instance: Instance; launchedAt: number } | undefined;
    try {
      const runOnHost = async (rec: RunRecord, signal: AbortSignal | undefined): Promise<RunRecord> => {
        store.update(id, { status: 'connecting' });
        say('connecting', `connecting to ${rec.host}`);
        const host = this.hostFor(rec);
        const session = await host.session(signal);
        store.update(id, { status: 'syncing' });
        const root = await remoteRoot(session);
        const wsRemote = `${root}/workspaces/${remoteWorkspaceName(req.workspaceDir)}`;
        // Synced code, the runner and run folders are the user's alone on a shared host.
        await session.exec(`umask 077; mkdir -p ${shellQuote(`${root}/workspaces`)} && chmod 700 ${shellQuote(root)} ${shellQuote(`${root}/workspaces`)}`);
        const runnerRemote = `${root}/runner/${this.deps.runnerVersion}`;
        say('syncing', `syncing the runner to ${runnerRemote}`);
        await this.deps.sync(session, this.deps.runnerDir, runnerRemote, { ...(signal ? { signal } : {}), ignoreFiles: false });
        say('syncing', `syncing ${req.workspaceDir} to ${wsRemote}`);
        // .env files never travel as workspace files: their values go, when the run needs them, in the 0600 env file.
        const excludes = ['.env', '.env.*', ...(req.envFileRel ? [`/${req.envFileRel.replace(/\\/g, '/')}`] : [])];
        const synced = await this.deps.sync(session, req.workspaceDir, wsRemote, { ...(signal ? { signal } : {}), excludes, onProgress: (m) => say('syncing', m) });
        say('syncing', `synced: ${synced.filesSent} files, ${(synced.bytesSent / 1e6).toFixed(1)} MB sent`);
        if (signal?.aborted) throw new Error('cancelled');
        store.update(id, { status: 'bootstrapping' });
        say('bootstrapping', 'writing spec.json and the 0600 env file, starting the run detached');
        const command = runnerCommand(this.deps.remotePython ?? 'python3', runnerRemote, wsRemote, typeof req.spec.command === 'string');
        const p = launched?.instance.provider;
        const launch = launched && (p === 'lambda' || p === 'ec2' || p === 'gcp') ? { provider: p, instanceId: launched.instance.id } : undefined;
        const started = await startDetached(session, { runId: id, command, env: req.env, cwd: wsRemote, spec: req.spec, ...(launch ? { launch } : {}) });
        const rec2 = store.update(id, { status: 'running', remoteDir: started.runDir, pid: started.pid });
        say('running', `running on ${rec.host} (pid ${started.pid}, ${started.launcher})`);
        return rec2;
      };

      if (target.kind === 'cloud') {
        store.update(id, { status: 'provisioning' });
        say('provisioning', `launching ${target.offer.instanceType} on ${target.provider.kind} in ${target.offer.region} at $${target.offer.pricePerHour.toFixed(2)}/h`);
        let result: RunRecord | undefined;
        // Where the provider can install it, the instance gets a host key made here: its first connection is checked.
        const hostKey = target.provider.deliversHostKey ? generateInstanceHostKey() : undefined;
        const pins = [...(hostKey ? [hostKey.publicKey] : [])];
        launched = await provisionGuarded({
          provider: target.provider,
          ledger: this.deps.ledger,
          // The offer (zone, spot, type) and the spec's target (disk) decide the launch.
          request: {
            ...launchRequestFor(id, target.offer, specTarget(req.spec), target.sshPublicKey),
            ...(target.diskGiB ? { diskGiB: target.diskGiB } : {}),
            ...(hostKey ? { hostKey } : {}),
            ...(this.deps.ownerId ? { ownerId: this.deps.ownerId } : {}),
          },
          pricePerHour: target.offer.pricePerHour,
          sshTimeoutMs: target.sshTimeoutMs ?? 15 * 60_000,
          ...(req.signal ? { signal: req.signal } : {}),
          log: (l) => this.deps.log?.(`[${id}] ${l}`),
          // Everything up to the detached start counts as bootstrap: a failure there terminates the instance.
          bootstrap: async (instance, signal, launchedAt) => {
            const host = instance.publicIp ?? '';
            // Billing began at the launch call: the cost so far counts boot and the wait for SSH too.
            const rec = store.update(id, { host, sshUser: instance.sshUser, sshPort: instance.sshPort, instanceId: instance.id, launchedAt,
              ...(pins.length || instance.hostKeys?.length ? { pinnedHostKeys: [...pins, ...(instance.hostKeys ?? [])] } : {}) });
            result = await runOnHost(rec, signal);
          },
        });
        if (!result) throw new Error('the instance came up but the run did not start');
        this.watch(id);
        return result;
      }
      const rec = await runOnHost(store.get(id)!, req.signal);
      this.watch(id);
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

  /** Reattaches to every live run in the store (after a reload or a crash); returns how many. */
  reattachAll(): number {
    let n = 0;
    for (const r of this.deps.store.live()) {
      if (r.status === 'running' && r.host && r.remoteDir) { this.watch(r.id); n++; }
    }
    return n;
  }

  /** Follows a running run's files until it ends, then finishes it. Idempotent. */
  watch(runId: string): void {
    if (this.watches.has(runId) || this.disposed) return;
    const abort = new AbortController();
    const done = this.follow(runId, abort.signal)
      .catch((err: unknown) => {
        if (abort.signal.aborted || this.disposed) return;
        // A broken tail or a status read that failed must not leave a live run unwatched until the next reload.
        this.deps.log?.(`[${runId}] watching interrupted (${(err as Error).message}); following again in 5 s`);
        setTimeout(() => this.watch(runId), REWATCH_MS).unref?.();
      })
      .finally(() => { this.watches.delete(runId); });
    this.watches.set(runId, { abort, done });
  }

  isWatching(runId: string): boolean {
    return this.watches.has(runId);
  }

  private async follow(runId: string, signal: AbortSignal): Promise<void> {
    const { store } = this.deps;
    const rec = store.get(runId);
    if (!rec?.remoteDir || !rec.host) return;
    const localDir = rec.localDir ?? this.localDirOf(runId);
    const host = this.hostFor(rec);
    let pending = '';
    let lastFlush = 0;
    const instanceTimer = this.startInstanceCheck(rec, signal);
    // The on-host watchdog powers an idle provisioned host off only when nobody is watching: say we are.
    const beat = (): void => { void host.use((s) => s.exec(`mkdir -p ${shellQuote(rootOf(rec.remoteDir!))} && date +%s > ${shellQuote(`${rootOf(rec.remoteDir!)}/heartbeat`)}`), signal).catch(() => undefined); };
    beat();
    const heartbeat = setInterval(beat, HEARTBEAT_MS);
    heartbeat.unref?.();
    const clock = this.deps.now ?? Date.now;
    // The cost so far moves with the clock, not with the log: a quiet run (a long eval, a stall) still bills.
    const costNow = (): void => {
      const cur = store.get(runId);
      if (cur?.pricePerHour !== undefined && cur.launchedAt && !isTerminal(cur.status)) store.update(runId, { costUsd: runningCost(cur.pricePerHour, cur.launchedAt, clock(), cur.provider) });
    };
    costNow();
    const costTimer = setInterval(costNow, this.deps.costIntervalMs ?? COST_MS);
    costTimer.unref?.();
    try {
      const status = await host.use((s) => runStatus(s, runId, rootOf(rec.remoteDir!)), signal);
      const pid = status.pid ?? rec.pid;
      await mirrorRun(host, rec.remoteDir, localDir, {
        ...(pid !== undefined ? { pid } : {}),
        signal,
        callbacks: {
          onData: (file, data, offsets) => {
            const patch: Partial<RunRecord> = {};
            if (file === 'events') {
              const text = pending + data.toString('utf8');
              const lines = text.split('\n');
              pending = lines.pop() ?? '';
              // An event line is a few hundred bytes; one this long is damage, and keeping it would grow forever.
              if (pending.length > MAX_PENDING) pending = '';
              const events: RunEvent[] = [];
              for (const line of lines) {
                if (!line.trim()) continue;
                const p = parseEventLine(line);
                if (p.ok) events.push(p.event);
              }
              for (const e of events) {
                if (e.type === 'metrics') { patch.lastStep = e.step; if (e.loss !== undefined) patch.lastLoss = e.loss; }
                if (e.type === 'started' && e.wandb_run_id) { patch.wandbRunId = e.wandb_run_id; if (e.wandb_url) patch.wandbUrl = e.wandb_url; }
              }
              if (events.length > 0) for (const l of this.eventListeners) l(runId, events);
            }
            // Offsets are persisted at most every 500 ms: the local files are the truth, this is a summary.
            const now = Date.now();
            if (now - lastFlush > 500 || Object.keys(patch).length > 0) {
              lastFlush = now;
              const cur = store.get(runId);
              const cost = cur?.pricePerHour !== undefined && cur.launchedAt ? { costUsd: runningCost(cur.pricePerHour, cur.launchedAt, clock(), cur.provider) } : {};
              store.update(runId, { ...patch, ...cost, offsets });
            }
          },
        },
      });
    } finally {
      if (instanceTimer) clearInterval(instanceTimer);
      clearInterval(heartbeat);
      clearInterval(costTimer);
    }
    if (signal.aborted) return;
    await this.finish(runId);
  }

  private startInstanceCheck(rec: RunRecord, signal: AbortSignal): NodeJS.Timeout | undefined {
    const provider = rec.instanceId ? this.deps.providerFor?.(rec) : undefined;
    if (!provider || !rec.instanceId) return undefined;
    const t = setInterval(() => {
      void checkInstance(provider, this.deps.ledger, rec.id, rec.instanceId!, signal).then((c) => {
        if (!c.alive && c.interrupted) {
          const cur = this.deps.store.get(rec.id);
          if (cur && cur.status === 'running') {
            this.deps.store.update(rec.id, { status: 'interrupted', failure: { message: 'the cloud reclaimed the spot instance; run it again to resume from the last checkpoint' } });
            this.watches.get(rec.id)?.abort.abort();
          }
        }
      }).catch(() => undefined);
    }, this.deps.instanceCheckMs ?? 30_000);
    t.unref?.();
    return t;
  }

  /** Reads how the run ended (events.jsonl's finished and error lines, then the wrapper's exit code). */
  private outcome(rec: RunRecord, exitCode: number | undefined): { status: RunStatus; failure?: RunFinished['failure']; adapterPath?: string } {
    const eventsFile = join(rec.localDir ?? this.localDirOf(rec.id), 'events.jsonl');
    let finished: Extract<RunEvent, { type: 'finished' }> | undefined;
    let firstError: Extract<RunEvent, { type: 'error' }> | undefined;
    if (existsSync(eventsFile)) {
      for (const line of readFileSync(eventsFile, 'utf8').split('\n')) {
        if (!line) continue;
        const p = parseEventLine(line);
        if (!p.ok) continue;
        if (p.event.type === 'finished') finished = p.event;
        if (p.event.type === 'error' && (!firstError || (!firstError.signature && p.event.signature))) firstError = p.event;
      }
    }
    const stopped = this.stopping.has(rec.id);
    let status: RunStatus = finished?.status ?? (exitCode === 0 ? 'completed' : 'failed');
    if (stopped && status !== 'completed') status = 'stopped';
    const failure = status === 'completed' || status === 'stopped' ? undefined
      : firstError ? { message: firstError.message, ...(firstError.signature ? { signature: firstError.signature } : {}), ...(firstError.hint ? { hint: firstError.hint } : {}) }
        : { message: `the run exited with code ${exitCode ?? finished?.exit_code ?? '?'}; see its log` };
    return { status, ...(failure ? { failure } : {}), ...(finished?.adapter_path ? { adapterPath: finished.adapter_path } : {}) };
  }

  private async finish(runId: string): Promise<void> {
    const { store } = this.deps;
    const rec = store.get(runId);
    if (!rec || isTerminal(rec.status) || !rec.remoteDir) return;
    const host = this.hostFor(rec);
    const st = await host.use((s) => runStatus(s, runId, rootOf(rec.remoteDir!)));
    // The tails ended but the wrapper still lives (a pid file rewritten, a tail cut short): follow again.
    if (st.state === 'running') throw new Error('the run is still running');
    const out = this.outcome(rec, st.exitCode);
    let updated = store.update(runId, {
      status: out.status, exitCode: st.exitCode ?? null, offsets: localOffsets(rec.localDir ?? this.localDirOf(runId)),
      ...(out.failure ? { failure: out.failure } : {}),
    });
    if (out.status === 'completed' && rec.workspaceDir) {
      for (const f of artifactPlan(rec.outputs, runId, rec.workspaceDir, out.adapterPath)) {
        try {
          const { bytes } = await this.downloadArtifacts(runId, f.remote, f.local);
          this.deps.log?.(`[${runId}] downloaded ${f.item} ${f.remote} to ${f.local} (${(bytes / 1e6).toFixed(1)} MB)`);
          if (f.item === 'adapter') updated = store.update(runId, { artifactsDir: f.local });
        } catch (err) {
          this.deps.log?.(`[${runId}] ${f.item} download failed: ${(err as Error).message}`);
        }
      }
      if (rec.outputs?.download?.includes('logs')) copyLogs(rec.localDir ?? this.localDirOf(runId), join(rec.workspaceDir, localOutputsDir(rec.outputs.dir), runId, 'logs'));
    }
    updated = await this.teardown(updated);
    for (const l of this.finishedListeners) l({ record: updated, ...(out.failure ? { failure: out.failure } : {}) });
  }

  private async teardown(rec: RunRecord): Promise<RunRecord> {
    if (!rec.instanceId || rec.finishedAction) return rec;
    const provider = this.deps.providerFor?.(rec);
    if (!provider) { this.deps.log?.(`[${rec.id}] no provider to tear down ${rec.instanceId}; it shows under orphaned instances`); return rec; }
    const instance = await provider.describe(rec.instanceId);
    if (!instance) return this.deps.store.update(rec.id, { finishedAction: 'terminated' });
    const r = await finishGuarded(provider, this.deps.ledger, rec.id, instance, rec.launchedAt ?? Date.now(), {
      policy: rec.teardownPolicy ?? 'terminate', ...(rec.idleMinutes ? { idleMinutes: rec.idleMinutes } : {}),
    }, rec.pricePerHour);
    if (r.reason) this.deps.log?.(`[${rec.id}] ${r.reason}`);
    return this.deps.store.update(rec.id, { finishedAction: r.action, ...(r.cost ? { costUsd: r.cost.usd } : {}) });
  }

  /** Downloads a folder of the run (relative to its workspace on the host, or absolute) into dest. */
  async downloadArtifacts(runId: string, remotePath: string, dest: string, onProgress?: (p: DownloadProgress) => void, signal?: AbortSignal): Promise<{ bytes: number }> {
    const rec = this.deps.store.get(runId);
    if (!rec?.remoteDir) throw new Error(`run ${runId} has no remote folder`);
    const host = this.hostFor(rec);
    return host.use(async (s) => {
      const abs = remotePath.startsWith('/') ? remotePath : `${rootOf(rec.remoteDir!)}/workspaces/${remoteWorkspaceName(rec.workspaceDir ?? '')}/${remotePath}`;
      return downloadFolder(s, abs, dest, { ...(onProgress ? { onProgress } : {}), ...(signal ? { signal } : {}) });
    });
  }

  /** SIGTERM (the runner saves a checkpoint), then SIGKILL after the grace period. */
  async stop(runId: string, graceMs = 120_000): Promise<void> {
    const rec = this.deps.store.get(runId);
    if (!rec?.remoteDir) throw new Error(`run ${runId} was never started on a host`);
    this.stopping.add(runId);
    await this.hostFor(rec).use((s) => stopRun(s, runId, { graceMs, root: rootOf(rec.remoteDir!) }));
    // The watch notices the wrapper's exit and finishes the run (download, teardown, notification).
    if (!this.watches.has(runId)) await this.finish(runId);
  }

  /** Terminates a run's instance now, whatever its policy says. */
  async terminateInstance(runId: string): Promise<void> {
    const rec = this.deps.store.get(runId);
    if (!rec?.instanceId) throw new Error('this run has no instance');
    const provider = this.deps.providerFor?.(rec);
    if (!provider) throw new Error(`no ${rec.provider} credentials to terminate ${rec.instanceId}`);
    const instance = await provider.describe(rec.instanceId);
    if (instance) await finishGuarded(provider, this.deps.ledger, rec.id, instance, rec.launchedAt ?? Date.now(), { policy: 'terminate' }, rec.pricePerHour);
    this.deps.store.update(rec.id, { finishedAction: 'terminated' });
  }

  /** Runs on a host that the store does not know (started from another machine) become records. */
  async discover(host: string, options: { readonly identityFile?: string } = {}): Promise<RunRecord[]> {
    const h = this.hostFor({ host, ...(options.identityFile ? { identityFile: options.identityFile } : {}) });
    const found = await h.use((s) => listRuns(s));
    const root = await h.use((s) => remoteRoot(s));
    const added: RunRecord[] = [];
    for (const r of found) {
      if (!isValidRunId(r.runId) || this.deps.store.get(r.runId)) continue;
      const now = new Date().toISOString();
      const status: RunStatus = r.state === 'running' ? 'running' : r.exitCode === 0 ? 'completed' : 'failed';
      const rec: RunRecord = {
        id: r.runId, name: r.runId, specPath: '', specHash: '', createdAt: r.startedAt ?? now, updatedAt: now, status,
        provider: 'ssh', host, ...(options.identityFile ? { identityFile: options.identityFile } : {}), remoteDir: runDirOf(root, r.runId), ...(r.pid ? { pid: r.pid } : {}),
        offsets: { output_log: 0, events: 0, gpu: 0 }, localDir: this.localDirOf(r.runId), origin: 'found',
        ...(r.exitCode !== undefined ? { exitCode: r.exitCode } : {}),
      };
      this.deps.store.add(rec);
      added.push(rec);
      if (status === 'running') this.watch(rec.id);
    }
    return added;
  }

  /** Stops following (runs go on on their hosts) and closes connections. */
  async dispose(): Promise<void> {
    this.disposed = true;
    for (const w of this.watches.values()) w.abort.abort();
    await Promise.all([...this.watches.values()].map((w) => w.done));
    for (const h of this.hosts.values()) h.close();
  }
}

const HEARTBEAT_MS = 60_000;
const REWATCH_MS = 5_000;
const COST_MS = 30_000;

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
  const items = Array.isArray(download) ? download.filter((d): d is 'adapter' | 'checkpoints' | 'logs' => d === 'adapter' || d === 'checkpoints' || d === 'logs') : undefined;
  if (typeof dir !== 'string' && !items) return undefined;
  return { ...(typeof dir === 'string' ? { dir } : {}), ...(items ? { download: items } : {}) };
}

function spreadOutputs(o: RunOutputs | undefined): { outputs?: { dir?: string; download?: DownloadItem[] } } {
  if (!o) return {};
  return { outputs: { ...(o.dir !== undefined ? { dir: o.dir } : {}), ...(o.download ? { download: [...o.download] } : {}) } };
}

/** The mirrored logs (already local) copied next to the downloaded adapter. */
function copyLogs(from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  for (const name of ['output.log', 'events.jsonl', 'gpu.csv']) {
    if (existsSync(join(from, name))) copyFileSync(join(from, name), join(to, name));
  }
}

/** ~/.remote-finetune/runs/<id> → ~/.remote-finetune */
function rootOf(remoteRunDir: string): string {
  return remoteRunDir.replace(/\/runs\/[^/]+\/?$/, '');
}
