// Drives runs from start to finish and back after a reload: provision (cloud) → connect → sync the
// workspace and the runner → write spec and secrets → start detached (runStart.ts) → mirror the run's files
// by byte offset (runFollow.ts) → on exit, download artifacts and tear down per policy (runFinish.ts). Every
// step updates the run store, so a crash anywhere leaves a record that reattach() picks up. This class owns
// what the parts share: the SSH connections, the watches, the listeners. No `vscode` here.
import type { HostLink } from '../sync/hostLink';
import type { LogAppend } from '../sync/liveLog';
import { join } from 'node:path';
import { SshHost } from '../../ssh/reconnect';
import { shellQuote } from '../../ssh/quote';
import { isValidRunId, stopRun, listRuns, remoteRoot, runDirOf } from '../../ssh/detachedJob';
import type { RunEvent } from '../../telemetry/events';
import { finishGuarded } from './teardown';
import type { RunStore } from '../store/runStore';
import type { RunRecord, RunStatus } from '../store/runRecord';
import { isTerminal } from '../store/runRecord';
import { downloadFolder } from '../sync/artifacts';
import type { DownloadProgress } from '../sync/artifacts';
import { instanceHostKeyAlias, sshTargetOf } from '../hosts/sshTarget';
import { remoteWorkspaceName, rootOf } from '../store/runPaths';
import { startRun } from './runStart';
import { followRun, stopMachines } from './runFollow';
import { finishRun } from './runFinish';
import { hostAdapterPath, openRemoteGenerator } from '../outputs/tryAdapter';
import type { AdapterGenerator } from '../outputs/tryAdapter';
import type { HostRef, RunManagerContext, RunFinished, RunManagerDeps, RunRelaunched, StartRequest } from './runTypes';
import type { SshSession } from '../../ssh/session';
import type { RunHostPaths } from '../hosts/hostOps';
import { pythonFromBootstrap, workspaceFromCommandScript } from '../hosts/hostOps';
import { relaunchRun } from './runRelaunch';
import { resumeRun } from './runResume';
import { hostRunFile, RUN_FILES, runFile } from '../store/runFolder';

export type { RunFinished, RunManagerDeps, RunRelaunched, SyncFn } from './runTypes';
export { remoteWorkspaceName } from '../store/runPaths';
export { runnerCommand } from './runStart';

interface Watch {
  readonly abort: AbortController;
  readonly done: Promise<void>;
}

export class RunManager {
  private readonly hosts = new Map<string, SshHost>();
  private readonly watches = new Map<string, Watch>();
  private readonly eventListeners = new Set<(runId: string, events: readonly RunEvent[]) => void>();
  private readonly finishedListeners = new Set<(f: RunFinished) => void>();
  private readonly linkListeners = new Set<(runId: string, link: HostLink) => void>();
  private readonly logListeners = new Set<(runId: string, piece: LogAppend) => void>();
  /** Each followed run's link to its host, in memory only (host state is transient). */
  private readonly links = new Map<string, HostLink>();
  private readonly stopping = new Set<string>();
  private readonly relaunchedListeners = new Set<(r: RunRelaunched) => void>();
  /** Variables of runs started in this session, for a replacement instance; in memory only. */
  private readonly envs = new Map<string, Readonly<Record<string, string>>>();
  /** Runs whose watch began at reattachAll: a reclaim found on its first look happened while VS Code was closed. */
  private readonly reattached = new Set<string>();
  /** Runs whose replacement is being launched; Stop aborts the launch (its instance is terminated). */
  private readonly relaunching = new Map<string, { readonly abort: AbortController; readonly done: Promise<void> }>();
  private disposed = false;

  /** What runStart/runFollow/runFinish reach the manager through. */
  private readonly ctx: RunManagerContext;

  constructor(private readonly deps: RunManagerDeps) {
    this.ctx = {
      deps,
      hostFor: (r) => this.hostFor(r),
      localDirOf: (id) => this.localDirOf(id),
      watch: (id) => this.watch(id),
      abortWatch: (id) => this.watches.get(id)?.abort.abort(),
      isStopping: (id) => this.stopping.has(id),
      emitEvents: (id, events) => {
        for (const l of this.eventListeners) l(id, events);
      },
      emitHostLink: (id, link) => {
        this.links.set(id, link);
        for (const l of this.linkListeners) l(id, link);
      },
      emitLog: (id, piece) => {
        for (const l of this.logListeners) l(id, piece);
      },
      emitFinished: (f) => {
        for (const l of this.finishedListeners) l(f);
      },
      downloadArtifacts: (...a) => this.downloadArtifacts(...a),
      rememberEnv: (id, env) => this.envs.set(id, env),
      envFor: (id) => this.envs.get(id),
      reclaimed: (id, how) => void this.onReclaimed(id, how),
    };
  }

  get store(): RunStore {
    return this.deps.store;
  }

  onEvents(l: (runId: string, events: readonly RunEvent[]) => void): { dispose(): void } {
    this.eventListeners.add(l);
    return { dispose: () => this.eventListeners.delete(l) };
  }

  /** A followed run's link to its host changed: reconnecting, unreachable, connected again, ended. */
  onHostLink(l: (runId: string, link: HostLink) => void): { dispose(): void } {
    this.linkListeners.add(l);
    return { dispose: () => this.linkListeners.delete(l) };
  }

  /** Bytes appended to a followed run's local log, as the mirror writes them (the log panel's live stream). */
  onLogAppended(l: (runId: string, piece: LogAppend) => void): { dispose(): void } {
    this.logListeners.add(l);
    return { dispose: () => this.logListeners.delete(l) };
  }

  /** The run's link as its follow last saw it; undefined when it was not followed in this session. */
  hostLink(runId: string): HostLink | undefined {
    return this.links.get(runId);
  }

  onFinished(l: (f: RunFinished) => void): { dispose(): void } {
    this.finishedListeners.add(l);
    return { dispose: () => this.finishedListeners.delete(l) };
  }

  /** A spot run moved to a replacement instance (the notification says so, at activation too). */
  onRelaunched(l: (r: RunRelaunched) => void): { dispose(): void } {
    this.relaunchedListeners.add(l);
    return { dispose: () => this.relaunchedListeners.delete(l) };
  }

  /** The follower saw the cloud take the instance back: end that watch, then relaunch per the spec or end the run. */
  private async onReclaimed(runId: string, how: { readonly firstLook: boolean; readonly detail: string }): Promise<void> {
    if (this.relaunching.has(runId) || this.disposed) return;
    const abort = new AbortController();
    let settle: () => void = () => undefined;
    this.relaunching.set(runId, { abort, done: new Promise<void>((r) => (settle = r)) });
    try {
      const w = this.watches.get(runId);
      w?.abort.abort();
      await w?.done;
      if (this.disposed) return;
      const atActivation = how.firstLook && this.reattached.has(runId);
      const r = await relaunchRun(this.ctx, runId, { detail: how.detail, atActivation, signal: abort.signal });
      this.reattached.delete(runId);
      this.relaunching.delete(runId);
      if (!r) return;
      this.deps.log?.(`[${runId}] ${r.message}`);
      for (const l of this.relaunchedListeners) l(r);
      this.watch(runId);
    } catch (err) {
      this.deps.log?.(`[${runId}] relaunch failed: ${(err as Error).message}`);
    } finally {
      this.relaunching.delete(runId);
      settle();
    }
  }

  localDirOf(runId: string): string {
    if (!isValidRunId(runId)) throw new Error(`invalid run id ${JSON.stringify(runId)}`);
    return join(this.deps.storageDir, 'runs', runId);
  }

  private hostFor(record: HostRef): SshHost {
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

  /** The shared connection to a run's host, for features that open their own channels on it (TensorBoard's forward). */
  hostOf(record: HostRef): SshHost {
    return this.hostFor(record);
  }

  /** Starts a run and returns once it is running on the host; watching goes on in the background. */
  start(req: StartRequest): Promise<RunRecord> {
    return startRun(this.ctx, req);
  }

  /**
   * Resume (runResume.ts): the stopped, failed or interrupted run starts again in its own folder on its host and
   * goes on from its newest checkpoint, as the same run; watching starts again.
   */
  async resume(
    runId: string,
    opts: { readonly env?: Readonly<Record<string, string>>; readonly signal?: AbortSignal; readonly progress?: StartRequest['progress'] } = {},
  ): Promise<RunRecord> {
    const cur = this.deps.store.get(runId);
    if (!cur) throw new Error(`unknown run ${runId}`);
    if (this.relaunching.has(runId) || (this.watches.has(runId) && !isTerminal(cur.status))) throw new Error(`${cur.name} is still running`);
    // A run that just ended may still be in its watch's last steps (teardown, listeners): let that finish first.
    await this.watches.get(runId)?.done;
    // The variables it ran with (this session), else read again as Start Training reads them; never stored.
    const env = opts.env ?? this.envs.get(runId) ?? (await this.deps.relaunchEnv?.(cur));
    if (!env) throw new Error(`${cur.name} cannot resume: its variables (env file, secrets) cannot be read here`);
    // The last start's Stop is not this one's: a failure now is a failure, not "stopped".
    this.stopping.delete(runId);
    const rec = await resumeRun(this.ctx, runId, { ...opts, env });
    this.watch(runId);
    return rec;
  }

  /** Reattaches to every live run in the store (after a reload or a crash); returns how many. */
  reattachAll(): number {
    let n = 0;
    for (const r of this.deps.store.live()) {
      if (r.status === 'running' && r.host && r.remoteDir) {
        this.reattached.add(r.id);
        this.watch(r.id);
        n++;
      }
    }
    return n;
  }

  /** Follows a running run's files until it ends, then finishes it. Idempotent. */
  watch(runId: string): void {
    // While a replacement is launched the record still names the reclaimed host: nothing to follow there.
    if (this.watches.has(runId) || this.disposed || this.relaunching.has(runId)) return;
    const abort = new AbortController();
    const done = followRun(this.ctx, runId, abort.signal)
      .catch((err: unknown) => {
        if (abort.signal.aborted || this.disposed) return;
        // A broken tail or a status read that failed must not leave a live run unwatched until the next reload.
        this.deps.log?.(`[${runId}] watching interrupted (${(err as Error).message}); following again in 5 s`);
        setTimeout(() => this.watch(runId), REWATCH_MS).unref?.();
      })
      .finally(() => {
        this.watches.delete(runId);
      });
    this.watches.set(runId, { abort, done });
  }

  isWatching(runId: string): boolean {
    return this.watches.has(runId);
  }

  /** Downloads a folder of the run (relative to its workspace on the host, or absolute) into dest. */
  async downloadArtifacts(
    runId: string,
    remotePath: string,
    dest: string,
    onProgress?: (p: DownloadProgress) => void,
    signal?: AbortSignal,
  ): Promise<{ bytes: number }> {
    const rec = this.deps.store.get(runId);
    if (!rec?.remoteDir) throw new Error(`run ${runId} has no remote folder`);
    const host = this.hostFor(rec);
    return host.use(async (s) => {
      const abs = remotePath.startsWith('/') ? remotePath : `${rootOf(rec.remoteDir!)}/workspaces/${remoteWorkspaceName(rec.workspaceDir ?? '')}/${remotePath}`;
      return downloadFolder(s, abs, dest, { ...(onProgress ? { onProgress } : {}), ...(signal ? { signal } : {}) });
    });
  }

  /**
   * One operation on a run's host (merge, publish) with this extension's runner synced there first (the host's
   * copy may predate the subcommand). Not retried on a dropped connection: these are not reads.
   */
  async onRunHost<T>(runId: string, fn: (session: SshSession, at: RunHostPaths) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const rec = this.deps.store.get(runId);
    if (!rec?.remoteDir) throw new Error(`run ${runId} was never started on a host`);
    const s = await this.hostFor(rec).session(signal);
    const home = await s.home();
    const runDir = rec.remoteDir.startsWith('~/') ? `${home}/${rec.remoteDir.slice(2)}` : rec.remoteDir;
    const root = rootOf(runDir);
    const runner = `${root}/runner/${this.deps.runnerVersion}`;
    await this.deps.sync(s, this.deps.runnerDir, runner, { ...(signal ? { signal } : {}), ignoreFiles: false });
    // The run's venv when the bootstrap made one (it has torch and peft), else the interpreter runs start with.
    const boot = await s.exec(`cat ${shellQuote(hostRunFile(runDir, 'bootstrap'))} 2>/dev/null`, {
      what: `reading the run's ${RUN_FILES.bootstrap}`,
      maxOutputBytes: 1024 * 1024,
    });
    const python = pythonFromBootstrap(boot.stdout.toString('utf8')) ?? this.deps.remotePython ?? 'python3';
    const cmd = await s.exec(`head -c 65536 ${shellQuote(hostRunFile(runDir, 'command'))} 2>/dev/null | head -n 1`, {
      what: `reading the run's ${RUN_FILES.command}`,
    });
    const workspace = workspaceFromCommandScript(cmd.stdout.toString('utf8')) ?? `${root}/workspaces/${remoteWorkspaceName(rec.workspaceDir ?? '')}`;
    return fn(s, { root, runDir, runner, python, workspace });
  }

  /** Try the adapter: a generate process on the run's host with the run's venv (tryAdapter.ts), through onRunHost. */
  async openGenerator(runId: string, signal?: AbortSignal): Promise<AdapterGenerator> {
    const rec = this.deps.store.get(runId);
    const events = rec?.localDir ? runFile(rec.localDir, 'events') : undefined;
    return this.onRunHost(
      runId,
      (session, at) =>
        openRemoteGenerator(session, {
          runDir: at.runDir,
          runnerDir: at.runner,
          adapterPath: hostAdapterPath(at.workspace, rec?.outputs?.dir, runId, events),
          fallbackPython: at.python,
        }),
      signal,
    );
  }

  /** SIGTERM (the runner saves a checkpoint), then SIGKILL after the grace period. */
  async stop(runId: string, graceMs = 120_000): Promise<void> {
    const relaunch = this.relaunching.get(runId);
    if (relaunch) {
      // Its instance is gone and a replacement is on its way: stop that launch (the instance it made, if any, is
      // terminated) rather than reach for the old host. A launch that had already started the run goes on below.
      this.stopping.add(runId);
      relaunch.abort.abort();
      await relaunch.done;
      if (this.deps.store.get(runId)?.status !== 'running') return;
    }
    const rec = this.deps.store.get(runId);
    if (!rec?.remoteDir) throw new Error(`run ${runId} was never started on a host`);
    this.stopping.add(runId);
    // Every machine of a multi-node run at once: a rank left running would wait in a collective for its peers.
    await Promise.all([this.hostFor(rec).use((s) => stopRun(s, runId, { graceMs, root: rootOf(rec.remoteDir!) })), stopMachines(this.ctx, runId, 0, graceMs)]);
    // The watch notices the wrapper's exit and finishes the run (download, teardown, notification).
    if (!this.watches.has(runId)) await finishRun(this.ctx, runId);
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
        id: r.runId,
        name: r.runId,
        specPath: '',
        specHash: '',
        createdAt: r.startedAt ?? now,
        updatedAt: now,
        status,
        provider: 'ssh',
        host,
        ...(options.identityFile ? { identityFile: options.identityFile } : {}),
        remoteDir: runDirOf(root, r.runId),
        ...(r.pid ? { pid: r.pid } : {}),
        localDir: this.localDirOf(r.runId),
        origin: 'found',
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

const REWATCH_MS = 5_000;
