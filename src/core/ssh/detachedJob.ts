// Detached runs on the host: ~/.remote-finetune/runs/<run-id>/ holds spec.json, env (0600), output.log,
// events.jsonl, gpu.csv, pid, started_at, exit_code and heartbeat. A small sh wrapper records them, so the
// state is readable from any machine, and the run outlives the SSH connection and the extension host.
import type { SshSession } from './session';
import { shellQuote } from './quote';
import { writeFileAtomic } from './remoteFiles';
import { writeSecretsFile } from './envFile';
import type { CommandLimits } from './commandLimits';
import { perConnection } from './perConnection';

export type Launcher = 'auto' | 'setsid' | 'tmux' | 'systemd-run';

export interface StartOptions {
  readonly runId: string;
  /** A shell command line (built with shellCommand when it has arguments). Never put secrets here: use env. */
  readonly command: string;
  /** Secrets and settings for the run; written to the 0600 env file only. */
  readonly env?: Readonly<Record<string, string>>;
  /** Remote working directory for the command (absolute, or relative to the remote $HOME). */
  readonly cwd?: string;
  /** Stored as spec.json (must not contain secrets). */
  readonly spec?: unknown;
  /**
   * Only when this extension launched the instance for this run: stored as launch.json, the one thing the
   * on-host watchdog arms power-off from (never the spec's target, which a run on one's own host may carry).
   */
  readonly launch?: LaunchRecord;
  /** The run's control key (hex): control.key, 0600, which the runner takes before it starts anything. */
  readonly controlKey?: string;
  readonly launcher?: Launcher;
  /** Remote root; defaults to $HOME/.remote-finetune. */
  readonly root?: string;
  /**
   * Start again in the run's existing folder (Resume): its logs and events are appended to, its checkpoints stay;
   * the last start's pid, exit code and heartbeat go, so the new wrapper's are the ones read.
   */
  readonly reuse?: boolean;
  /**
   * Files a follower tails from the first line (the run's logs), created empty before the run starts. GNU
   * `tail -F` sees a file that exists at once (inotify) but one that does not yet only when it looks again, about
   * 0.4 s later: the first line of a run would wait for that. Appended to, never truncated (Resume keeps them).
   */
  readonly followed?: readonly string[];
}

/** A plain name inside the run folder: no path, no shell. */
const RUN_FILE_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;

export interface LaunchRecord {
  readonly provider: 'lambda' | 'ec2' | 'gcp';
  readonly instanceId: string;
}

export interface StartedRun {
  readonly runId: string;
  readonly runDir: string;
  readonly pid: number;
  readonly launcher: Exclude<Launcher, 'auto'>;
}

export type RunState = 'running' | 'exited' | 'lost' | 'missing';

/** What the host says about a run (its detached wrapper), as opposed to the run record's RunStatus. */
export interface HostRunStatus {
  readonly runId: string;
  readonly state: RunState;
  readonly pid?: number;
  readonly exitCode?: number;
  /** ISO time the wrapper started. */
  readonly startedAt?: string;
  /** Seconds since the wrapper last wrote heartbeat (absent before the first beat). */
  readonly heartbeatAgeS?: number;
  readonly outputBytes?: number;
}

const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
// Run ids also name folders on the person's machine (downloads, records), which may run Windows: it cannot make
// a folder named for a device (CON, PRN, AUX, NUL, COM0-9, LPT0-9, with any extension) or ending in a dot.
const WINDOWS_DEVICE = /^(?:con|prn|aux|nul|com[0-9]|lpt[0-9])(?:\.|$)/i;

/** Run ids become directory names and tmux/systemd unit names; validation never throws. */
export function isValidRunId(id: string): boolean {
  return RUN_ID.test(id) && !id.includes('..') && !WINDOWS_DEVICE.test(id) && !id.endsWith('.');
}

export async function remoteRoot(session: SshSession, root?: string): Promise<string> {
  if (root?.startsWith('/')) return root;
  const home = await session.home();
  return root ? `${home}/${root}` : `${home}/.remote-finetune`;
}

export function runDirOf(root: string, runId: string): string {
  return `${root}/runs/${runId}`;
}

/**
 * The wrapper. It is its launcher's session leader (setsid, tmux pane and systemd service all make it one),
 * so stop can signal the whole process group. HUP is ignored: losing the SSH session must not end the run.
 */
export const WRAPPER_SCRIPT = `#!/bin/sh
# Remote Fine-Tune run wrapper v1: records pid, start time, heartbeat and exit code beside the run's logs.
cd "$(dirname "$0")" || exit 97
echo $$ > pid.tmp && mv -f pid.tmp pid
date -u +%Y-%m-%dT%H:%M:%SZ > started_at
trap '' HUP
RFT_RUN_DIR=$(pwd)
export RFT_RUN_DIR
PYTHONUNBUFFERED=1
export PYTHONUNBUFFERED
if [ -f env ]; then set -a; . ./env; set +a; fi
/bin/sh ./command.sh >> output.log 2>&1 < /dev/null &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT
( while kill -0 "$child" 2>/dev/null; do date +%s > heartbeat; sleep 5; done ) > /dev/null 2>&1 &
wait "$child"
code=$?
while kill -0 "$child" 2>/dev/null; do wait "$child"; code=$?; done
echo "$code" > exit_code.tmp && mv -f exit_code.tmp exit_code
`;

function launchCommand(launcher: Exclude<Launcher, 'auto'>, root: string, runId: string, wrapper: string): string {
  const q = shellQuote;
  switch (launcher) {
    case 'tmux':
      return `tmux -S ${q(`${root}/tmux.sock`)} new-session -d -s ${q(`rft-${runId}`)} ${q(`exec /bin/sh ${q(wrapper)}`)}`;
    case 'systemd-run':
      // A user service starts with the user manager's environment, not this session's: PATH is carried over so
      // the run finds the same python, accelerate and CLIs as a tmux or setsid launch would.
      return `systemd-run --user --collect --quiet --unit ${q(`rft-${runId}`)} --setenv=PATH="$PATH" /bin/sh ${q(wrapper)}`;
    case 'setsid':
      return (
        `if command -v setsid >/dev/null 2>&1; then setsid /bin/sh ${q(wrapper)} </dev/null >/dev/null 2>&1 & ` +
        `else nohup /bin/sh ${q(wrapper)} </dev/null >/dev/null 2>&1 & fi`
      );
  }
}

/**
 * Picks a launcher present on the host. systemd-run --user only when lingering is on: otherwise the user's
 * systemd instance (and the run with it) stops when the last SSH session closes.
 */
/**
 * How this host starts a detached run, asked once per connection (perConnection.ts): a second Start in the same
 * window, and the first one's syncs, need not wait a round trip for it. A launch that fails asks again next time.
 */
export const detectLauncher = perConnection(async (session: SshSession): Promise<Exclude<Launcher, 'auto'>> => {
  const out = await session.run(
    `if command -v systemd-run >/dev/null 2>&1 && [ "$(loginctl show-user "$(id -un)" -p Linger --value 2>/dev/null)" = yes ] && systemctl --user is-system-running >/dev/null 2>&1; then echo systemd-run; ` +
      `elif command -v tmux >/dev/null 2>&1; then echo tmux; else echo setsid; fi`,
    { what: 'choosing how to start the run', ...QUICK },
  );
  const l = out.trim();
  return l === 'systemd-run' || l === 'tmux' ? l : 'setsid';
});

/** Creates the run directory, writes wrapper, command, spec and env, and starts the wrapper detached. */
export async function startDetached(session: SshSession, options: StartOptions): Promise<StartedRun> {
  if (!isValidRunId(options.runId)) throw new Error(`invalid run id ${JSON.stringify(options.runId)}`);
  const root = await remoteRoot(session, options.root);
  const runDir = runDirOf(root, options.runId);
  // SFTP first: a host without it fails before anything is created, so no empty run is left behind.
  const sftp = await session.sftp();
  const q = (name: string): string => shellQuote(`${runDir}/${name}`);
  const make = options.reuse
    ? `test -d ${shellQuote(runDir)} && rm -f ${['pid', 'exit_code', 'heartbeat', 'started_at', 'train.pgid', 'runner.pid'].map(q).join(' ')}`
    : `mkdir ${shellQuote(runDir)}`;
  const followed = options.followed ?? [];
  const bad = followed.find((f) => !RUN_FILE_NAME.test(f));
  if (bad !== undefined) throw new Error(`not a file name in a run folder: ${JSON.stringify(bad)}`);
  const touch = followed.length > 0 ? ` && (umask 077 && ${followed.map((f) => `: >> ${q(f)}`).join(' && ')})` : '';
  const exists = await session.exec(`mkdir -p ${shellQuote(`${root}/runs`)} && ${make} && chmod 700 ${shellQuote(runDir)}${touch}`, {
    what: `creating ${runDir}`,
    ...QUICK,
  });
  if (exists.code !== 0)
    throw new Error(
      options.reuse
        ? `the run's folder ${runDir} is not on the host any more (exit ${exists.code ?? exists.signal}): ${exists.stderr.toString().trim()}`
        : `cannot create ${runDir} (a run with this id may exist; exit ${exists.code ?? exists.signal}): ${exists.stderr.toString().trim()}`,
    );
  const cwd = options.cwd ? (options.cwd.startsWith('/') ? options.cwd : `${await session.home()}/${options.cwd}`) : undefined;
  const commandScript = `${cwd ? `cd ${shellQuote(cwd)} || exit 96\n` : ''}${options.command}\n`;
  if (options.controlKey !== undefined && !/^[0-9a-f]{64}$/.test(options.controlKey)) throw new Error('control key: expected 64 hex digits');
  const files: Array<readonly [string, string, number]> = [
    ['wrapper.sh', WRAPPER_SCRIPT, 0o700],
    ['command.sh', commandScript, 0o600],
    ...(options.spec !== undefined ? [['spec.json', JSON.stringify(options.spec, null, 2) + '\n', 0o600] as const] : []),
    ...(options.launch
      ? [
          [
            'launch.json',
            JSON.stringify({ v: 1, launched_by: 'remote-finetune', provider: options.launch.provider, instance_id: options.launch.instanceId }) + '\n',
            0o600,
          ] as const,
        ]
      : []),
    ...(options.controlKey !== undefined ? [['control.key', `${options.controlKey}\n`, 0o600] as const] : []),
  ];
  // Independent files and the launcher question travel together: each is a few round trips, and none waits on another.
  const [, launcher] = await Promise.all([
    Promise.all([
      ...files.map(([name, text, mode]) => writeFileAtomic(sftp, `${runDir}/${name}`, text, mode)),
      writeSecretsFile(session, runDir, options.env ?? {}),
    ]),
    !options.launcher || options.launcher === 'auto' ? detectLauncher(session) : Promise.resolve(options.launcher),
  ]);
  const wrapper = `${runDir}/wrapper.sh`;
  // Launch and wait (up to 10 s) for the wrapper's pid file in the same round trip.
  const script =
    `${launchCommand(launcher, root, options.runId, wrapper)}\n` +
    `i=0; while [ ! -s ${shellQuote(`${runDir}/pid`)} ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; cat ${shellQuote(`${runDir}/pid`)}`;
  const r = await session.exec(script, { what: `starting run ${options.runId}`, ...QUICK });
  const pid = Number(r.stdout.toString().trim());
  // As everywhere else, only a number above 1 names the run's process: a kill of 1 or 0 would reach everything or our own group.
  if (r.code !== 0 || !Number.isInteger(pid) || pid <= 1) {
    detectLauncher.forget(session);
    throw new Error(`run ${options.runId} did not start with ${launcher}: ${r.stderr.toString().trim()}`);
  }
  return { runId: options.runId, runDir, pid, launcher };
}

/** For the short commands of a run's lifecycle: a minute covers a slow disk, a megabyte any honest answer. */
const QUICK = { timeoutMs: 60_000, maxOutputBytes: 1024 * 1024 } as const;

// One line per run, tab-separated: id, pid, alive, exit code, started_at, heartbeat age, output.log size.
// A zombie still answers kill -0 (some containers' pid 1 never reaps), so /proc's state is checked too.
// Only a number above 1 names a run's process (`kill -0 0` asks about the caller's own group, and succeeds).
const ALIVE_FN = `rft_alive() { case "$1" in ''|*[!0-9]*|0|1) return 1;; esac; kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }`;
// Whether a process that is not a zombie is left in process group $1 or $2 (0: none), from /proc/*/stat (the fields
// after the command's closing parenthesis: state, ppid, pgrp). Without /proc it says no: nothing to wait for.
const LIVE_IN_FN =
  `rft_live_in() { rft_g1=$1; rft_g2=$2; for rft_f in /proc/[0-9]*/stat; do rft_l=; read -r rft_l 2>/dev/null < "$rft_f" || continue; ` +
  `set -- \${rft_l##*) }; [ "$1" != Z ] && [ "$3" != 0 ] && { [ "$3" = "$rft_g1" ] || [ "$3" = "$rft_g2" ]; } && return 0; done; return 1; }`;
const STATUS_FN =
  `${ALIVE_FN}; rft_status() { d=$1; pid=$(cat "$d/pid" 2>/dev/null); ec=$(cat "$d/exit_code" 2>/dev/null); st=$(cat "$d/started_at" 2>/dev/null); ` +
  `hb=$(cat "$d/heartbeat" 2>/dev/null); now=$(date +%s); age=; [ -n "$hb" ] && age=$((now-hb)); alive=0; ` +
  `[ -n "$pid" ] && rft_alive "$pid" && alive=1; sz=$(stat -c %s "$d/output.log" 2>/dev/null); ` +
  `printf '%s\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\n' "$(basename "$d")" "$pid" "$alive" "$ec" "$st" "$age" "$sz"; }`;

const STARTED_AT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

function parseStatusLine(line: string): HostRunStatus | undefined {
  const [id, pid, alive, ec, st, age, size] = line.split('\t');
  if (!id) return undefined;
  const num = (s: string | undefined): number | undefined => (s && /^-?\d+$/.test(s.trim()) ? Number(s.trim()) : undefined);
  const exitCode = num(ec);
  const state: RunState = alive === '1' ? 'running' : exitCode !== undefined ? 'exited' : 'lost';
  const n = num(pid);
  // A pid of 0, 1 or below names no run process (tail --pid and kill would take it for something else).
  const p = n !== undefined && n > 1 ? n : undefined;
  const hb = num(age);
  const sz = num(size);
  return {
    runId: id,
    state,
    ...(p !== undefined ? { pid: p } : {}),
    ...(exitCode !== undefined ? { exitCode } : {}),
    // The wrapper writes `date -u +%Y-%m-%dT%H:%M:%SZ`; anything else is the host's text, not a time.
    ...(st && STARTED_AT.test(st.trim()) ? { startedAt: st.trim() } : {}),
    ...(hb !== undefined ? { heartbeatAgeS: hb } : {}),
    ...(sz !== undefined ? { outputBytes: sz } : {}),
  };
}

export async function runStatus(session: SshSession, runId: string, root?: string): Promise<HostRunStatus> {
  if (!isValidRunId(runId)) return { runId, state: 'missing' };
  const dir = runDirOf(await remoteRoot(session, root), runId);
  const out = await session.run(`${STATUS_FN}; if [ -d ${shellQuote(dir)} ]; then rft_status ${shellQuote(dir)}; fi`, {
    what: `reading the state of run ${runId}`,
    ...QUICK,
  });
  return parseStatusLine(out.trim()) ?? { runId, state: 'missing' };
}

/** Every run under the root, whichever machine started it; `limits` overrides the listing's time limit and output cap. */
export async function listRuns(session: SshSession, root?: string, limits: Omit<CommandLimits, 'what'> = {}): Promise<HostRunStatus[]> {
  const runs = `${await remoteRoot(session, root)}/runs`;
  const out = await session.run(`${STATUS_FN}; for d in ${shellQuote(runs)}/*; do [ -f "$d/wrapper.sh" ] && rft_status "$d"; done; true`, {
    what: 'listing its runs',
    timeoutMs: 2 * 60_000,
    // A line is about 100 bytes: room for a hundred thousand runs.
    maxOutputBytes: 16 * 1024 * 1024,
    ...limits,
  });
  // A host lists whatever folders it has: ids that could name a path (`..`, slashes, odd bytes) are dropped here.
  return out
    .split('\n')
    .map(parseStatusLine)
    .filter((s): s is HostRunStatus => s !== undefined && isValidRunId(s.runId));
}

/**
 * SIGTERM to the run's process group, then SIGKILL once `graceMs` passes without an exit code. When the wrapper
 * itself had to be killed, exit_code is written here (137) so every reader sees the run as ended.
 */
export async function stopRun(session: SshSession, runId: string, options: { graceMs?: number; root?: string } = {}): Promise<HostRunStatus> {
  if (!isValidRunId(runId)) return { runId, state: 'missing' };
  const dir = runDirOf(await remoteRoot(session, options.root), runId);
  const steps = Math.max(1, Math.ceil((options.graceMs ?? 10_000) / 100));
  const d = shellQuote(dir);
  await session.run(
    // The pid and train.pgid files are the run's to write: a number above 1 or nothing (`kill -1` is every process).
    `${ALIVE_FN}; ${LIVE_IN_FN}; pid=$(cat ${d}/pid 2>/dev/null) || exit 0; case "$pid" in ''|*[!0-9]*|0|1) exit 0;; esac; ` +
      // `kill -TERM -PGID`, not `kill -TERM -- -PGID`: dash (Debian's /bin/sh, which runs every command for a
      // fish or csh login shell) and busybox read `--` as a pid and kill nothing, and the fallback hit the wrapper alone.
      `kill -TERM "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null; ` +
      `i=0; while rft_alive "$pid" && [ $i -lt ${steps} ]; do sleep 0.1; i=$((i+1)); done; ` +
      // The runner's training process group (train.pgid, run.py) goes with it: a launcher waiting for workers
      // whose peer machine died would otherwise outlive the run. It is killed only while the wrapper lives (the
      // runner still waits on that group, so its id cannot have been reused); afterwards it is only waited for.
      `tp=$(cat ${d}/train.pgid 2>/dev/null); case "$tp" in ''|*[!0-9]*|0|1) tp=0;; esac; kg=0; ` +
      `if rft_alive "$pid"; then kg=$pid; kill -KILL "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null; ` +
      `[ "$tp" = 0 ] || kill -KILL "-$tp" 2>/dev/null; fi; ` +
      // A killed process takes a moment to exit (a torch worker unmaps gigabytes), and a launcher the runner spared
      // may still be shutting down: stop returns once no live process of the run's groups is left (at most 5 s).
      `i=0; while rft_live_in "$kg" "$tp" && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done; ` +
      `[ -f ${d}/exit_code ] || { echo 137 > ${d}/exit_code.tmp && mv -f ${d}/exit_code.tmp ${d}/exit_code; }; true`,
    // The grace period and the 5 s wait for the groups, then room for a slow host.
    { what: `stopping run ${runId}`, timeoutMs: steps * 100 + 5_000 + 60_000, maxOutputBytes: 1024 * 1024 },
  );
  return await runStatus(session, runId, options.root);
}
