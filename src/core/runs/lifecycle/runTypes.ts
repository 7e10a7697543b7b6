// The run lifecycle's shared shapes: what a start asks for, what the manager is built from, and the
// context its three parts (runStart.ts, runFollow.ts, runFinish.ts) share through runManager.ts.
import type { HostLink } from '../sync/hostLink';
import type { ConnectOptions, SshSession } from '../../ssh/session';
import type { SshHost } from '../../ssh/reconnect';
import type { RunEvent } from '../../telemetry/events';
import type { Offer, Provider } from '../../providers/provider';
import type { Ledger } from '../store/ledger';
import type { TeardownSettings } from './teardown';
import type { RunStore } from '../store/runStore';
import type { RunRecord, RunStatus } from '../store/runRecord';
import type { RunEstimated } from '../store/runMeasuredSchema';
import type { DownloadProgress } from '../sync/artifacts';
import type { RunFailure } from '../view/failureReason';
import type { RunHardware } from '../view/runHardware';
import type { LogAppend } from '../sync/liveLog';
import type { RunSpec } from '../../config/runSpecDefaults';

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
  options: {
    readonly signal?: AbortSignal;
    readonly onProgress?: (message: string) => void;
    readonly ignoreFiles?: boolean;
    readonly excludes?: readonly string[];
  },
) => Promise<{ readonly filesSent: number; readonly bytesSent: number }>;

export interface StartRequest {
  readonly specPath: string;
  /** The spec file's text, for the spec hash in the record. */
  readonly specText: string;
  /** The parsed spec, uploaded as spec.json. */
  readonly spec: Readonly<Record<string, unknown>>;
  /** The same spec as the schema typed it (RunPlan.runSpec): what the start reads from it. Absent: typed here from `spec`. */
  readonly runSpec?: RunSpec;
  readonly name: string;
  /** The folder synced to the host (the spec's folder or the workspace). */
  readonly workspaceDir: string;
  /** Variables for the run's 0600 env file (secrets included). Never logged, never stored. */
  readonly env: Readonly<Record<string, string>>;
  /** The env file, relative to workspaceDir: its values travel only in the 0600 env file, never as a synced file. */
  readonly envFileRel?: string;
  readonly target: RunTarget;
  readonly gpu?: string;
  /** What the host's probe found before the start (the runner's own report replaces it once the run reports). */
  readonly hardware?: RunHardware;
  /** The estimate shown at Start, kept in the record to set against what the host measures (issue 32.4). */
  readonly estimated?: RunEstimated;
  readonly teardown: TeardownSettings;
  readonly progress?: (status: RunStatus, message: string) => void;
  readonly signal?: AbortSignal;
  /** Start again in the run's existing folder on the host (Resume), not in a new one. */
  readonly resume?: boolean;
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
  /** How long a lost link is "reconnecting" before the panels call the host unreachable (default hostLink.ts). */
  readonly hostUnreachableMs?: number;
  /** The clock the cost so far is read against (tests move it past billing minimums). */
  readonly now?: () => number;
  /** Where the host sends the end-of-run notification (hostNotify.ts), read from the user's settings at each start. */
  readonly notifyEnv?: () => Readonly<Record<string, string>>;
  /**
   * The run's variables again, for a replacement instance launched after a reload (the env is never stored):
   * read from the run's env file and the secret store as Start Training does. Without it such a relaunch fails.
   */
  readonly relaunchEnv?: (record: RunRecord) => Promise<Readonly<Record<string, string>>>;
  /** Whether a run found reclaimed when VS Code starts is relaunched then (remoteFinetune.cloud.reconcileOnStartup); default yes. */
  readonly relaunchAtActivation?: () => boolean;
}

/** A spot run moved to a replacement instance (runRelaunch.ts). */
export interface RunRelaunched {
  readonly record: RunRecord;
  /** The attempt now running, and how many the spec allows. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /** The reclaim happened while VS Code was closed: found and relaunched at activation. */
  readonly atActivation: boolean;
  readonly message: string;
}

export interface RunFinished {
  readonly record: RunRecord;
  readonly failure?: RunFailure;
}

/** The fields of a record that say how to reach its host. */
export type HostRef = Pick<RunRecord, 'host' | 'sshUser' | 'sshPort' | 'identityFile' | 'instanceId' | 'pinnedHostKeys'> & { readonly provider?: string };

/** What the start, follow and finish parts need from the manager that owns the connections and watches. */
export interface RunManagerContext {
  readonly deps: RunManagerDeps;
  hostFor(record: HostRef): SshHost;
  localDirOf(runId: string): string;
  /** Starts following a run in the background (idempotent). */
  watch(runId: string): void;
  /** Ends a run's watch (a reclaimed instance). */
  abortWatch(runId: string): void;
  /** Keeps a run's variables in memory (never on disk) for a replacement instance. */
  rememberEnv(runId: string, env: Readonly<Record<string, string>>): void;
  envFor(runId: string): Readonly<Record<string, string>> | undefined;
  /**
   * The cloud took the run's instance back (how: the provider says so, or the runner stopped on the reclaim
   * notice). Decides and launches the replacement in the background, after this watch has ended.
   */
  reclaimed(runId: string, how: { readonly firstLook: boolean; readonly detail: string }): void;
  /** Whether the user asked this run to stop (its end is then "stopped", not "failed"). */
  isStopping(runId: string): boolean;
  emitEvents(runId: string, events: readonly RunEvent[]): void;
  /** The followed run's link to its host changed (hostLink.ts); kept in memory, never stored. */
  emitHostLink(runId: string, link: HostLink): void;
  /** Bytes the mirror just appended to the run's local log (liveLog.ts), in order, each once. */
  emitLog(runId: string, piece: LogAppend): void;
  emitFinished(f: RunFinished): void;
  downloadArtifacts(
    runId: string,
    remotePath: string,
    dest: string,
    onProgress?: (p: DownloadProgress) => void,
    signal?: AbortSignal,
  ): Promise<{ bytes: number }>;
}
