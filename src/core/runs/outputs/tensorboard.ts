// "Open TensorBoard" for a run: TensorBoard runs on the host (the event files stay there, however large),
// bound to the host's 127.0.0.1 on a port the OS picks, detached from the SSH session and reused while it
// lives; the editor reaches it through a local port forwarded over the run's existing SSH connection.
// Its pid and port sit in the run dir, so a reload finds the same server rather than starting another.
import type { SshHost } from '../../ssh/reconnect';
import type { SshSession } from '../../ssh/session';
import { forwardLocalPort } from '../../ssh/portForward';
import type { LocalForward } from '../../ssh/portForward';
import { shellQuote } from '../../ssh/quote';
import { remoteWorkspaceName, rootOf } from '../store/runPaths';
import type { RunRecord } from '../store/runRecord';
import { RUN_FILES } from '../store/runFolder';

/** Where TensorBoard looks: the runner's fixed folder for report_to tensorboard, else the run's workspace (own scripts). */
export function tensorboardLogdirs(remoteRunDir: string, workspaceDir: string | undefined): { readonly run: string; readonly workspace: string } {
  const root = rootOf(remoteRunDir);
  return { run: `${remoteRunDir}/tensorboard`, workspace: `${root}/workspaces/${remoteWorkspaceName(workspaceDir ?? '')}` };
}

/**
 * Prints `RFT_TB_PORT <port>` once TensorBoard listens (an existing live one is reused), `RFT_TB_MISSING` when no
 * Python on the host has the tensorboard package, `RFT_TB_DIED` with its log tail when it exits at start.
 * The interpreter is the one the bootstrap chose for the run (bootstrap.json), then the runner's venv, RFT_PYTHON, python3.
 */
/**
 * tensorboard.pid sits in the run folder, which the run can write: only a number above 1 is a TensorBoard pid
 * (`kill -0 0` succeeds for the caller's own group, so a 0 passed for a live TensorBoard and its port was reused).
 */
const TB_PID = `tb_pid=$(cat tensorboard.pid 2>/dev/null); case "$tb_pid" in ''|*[!0-9]*|0|1) tb_pid=;; esac`;

export function tensorboardStartScript(remoteRunDir: string, workspaceDir: string | undefined): string {
  const dirs = tensorboardLogdirs(remoteRunDir, workspaceDir);
  const venvPython = `${rootOf(remoteRunDir)}/venv/bin/python`;
  return [
    `cd ${shellQuote(remoteRunDir)} || exit 4`,
    TB_PID,
    `if [ -n "$tb_pid" ] && [ -s tensorboard.port ] && kill -0 "$tb_pid" 2>/dev/null; then echo "RFT_TB_PORT $(cat tensorboard.port)"; exit 0; fi`,
    // Only a folder that holds event files: TensorBoard over a run that never logged to it is an empty page, and over
    // the whole workspace a slow one. The runner's folder first (report_to tensorboard), then the workspace (own scripts).
    `tb_events() { find "$1" -maxdepth 8 -type f -name 'events.out.tfevents.*' 2>/dev/null | head -n 1; }`,
    `logdir=${shellQuote(dirs.run)}`,
    `if [ -z "$(tb_events "$logdir")" ]; then logdir=${shellQuote(dirs.workspace)}; [ -n "$(tb_events "$logdir")" ] || { echo RFT_TB_NONE; exit 7; }; fi`,
    `py=''`,
    `for c in "$(sed -n 's/.*"python": *"\\([^"]*\\)".*/\\1/p' ${RUN_FILES.bootstrap} 2>/dev/null)" ${shellQuote(venvPython)} "\${RFT_PYTHON:-}" python3; do`,
    `  [ -n "$c" ] || continue`,
    // From / : `-c` and `-m` put the working folder first on sys.path, and the run folder is the run's to write.
    `  if (cd / && "$c" -c 'import tensorboard') >/dev/null 2>&1; then py=$c; break; fi`,
    `done`,
    `[ -n "$py" ] || { echo RFT_TB_MISSING; exit 3; }`,
    `rm -f tensorboard.port`,
    // Detached from this SSH channel: it lives until stopped, the host reboots, or the run dir goes.
    `if command -v setsid >/dev/null 2>&1; then d=setsid; else d=; fi`,
    `(cd / && exec $d nohup "$py" -m tensorboard.main --logdir "$logdir" --host 127.0.0.1 --port 0) </dev/null >tensorboard.log 2>&1 &`,
    `echo $! > tensorboard.pid`,
    `i=0`,
    `while [ $i -lt 240 ]; do`,
    `  port=$(sed -n 's#.*http://127\\.0\\.0\\.1:\\([0-9][0-9]*\\)/.*#\\1#p' tensorboard.log | head -n 1)`,
    `  if [ -n "$port" ]; then echo "$port" > tensorboard.port; echo "RFT_TB_PORT $port"; exit 0; fi`,
    `  kill -0 "$(cat tensorboard.pid)" 2>/dev/null || { echo RFT_TB_DIED; tail -n 20 tensorboard.log; exit 5; }`,
    `  sleep 0.25; i=$((i+1))`,
    `done`,
    `echo RFT_TB_TIMEOUT; exit 6`,
  ].join('\n');
}

export function tensorboardStopScript(remoteRunDir: string): string {
  return [
    `cd ${shellQuote(remoteRunDir)} || exit 0`,
    TB_PID,
    `if [ -n "$tb_pid" ]; then kill "$tb_pid" 2>/dev/null; fi`,
    `rm -f tensorboard.pid tensorboard.port`,
  ].join('\n');
}

/** Why Open TensorBoard cannot work for this run before any host is asked, or undefined when it may. */
export function tensorboardUnavailable(rec: Pick<RunRecord, 'name' | 'remoteDir' | 'host' | 'finishedAction' | 'instanceId'>): string | undefined {
  if (!rec.remoteDir || !rec.host) return `${rec.name} never reached a host, so there is nothing for TensorBoard to show.`;
  if (rec.instanceId && rec.finishedAction === 'terminated')
    return `${rec.name}'s instance was terminated when the run ended, and its TensorBoard event files went with it.`;
  return undefined;
}

/** The run wrote no TensorBoard event files: nothing to show, and the message says how to turn it on. */
export class TensorboardNotLoggedError extends Error {
  constructor() {
    super(
      'this run did not log to TensorBoard (no event files in its run folder or its workspace on the host). To turn it on for the next run: add tensorboard to trainer.report_to in the run spec (the built-in trainer then writes to the run folder and installs the package), or have your own script write TensorBoard event files (SummaryWriter, report_to="tensorboard") under its folder.',
    );
    this.name = 'TensorboardNotLoggedError';
  }
}

/** Reads the start script's answer; throws a message that says what to do. */
export function parseTensorboardStart(stdout: string): number {
  const port = /RFT_TB_PORT (\d+)/.exec(stdout);
  if (port) {
    const n = Number(port[1]);
    if (n > 0 && n < 65536) return n;
  }
  if (stdout.includes('RFT_TB_NONE')) throw new TensorboardNotLoggedError();
  if (stdout.includes('RFT_TB_MISSING'))
    throw new Error(
      'No Python on the host has the tensorboard package: add tensorboard to trainer.report_to (the runner then installs it), or pip install tensorboard on the host.',
    );
  if (stdout.includes('RFT_TB_DIED')) throw new Error(`TensorBoard exited on the host: ${stdout.split('RFT_TB_DIED')[1]!.trim().slice(-800)}`);
  throw new Error('TensorBoard did not start listening on the host within a minute (see tensorboard.log in the run folder).');
}

export async function startRemoteTensorboard(
  session: SshSession,
  remoteRunDir: string,
  workspaceDir: string | undefined,
  signal?: AbortSignal,
): Promise<number> {
  const r = await session.exec(tensorboardStartScript(remoteRunDir, workspaceDir), { what: 'starting TensorBoard', ...(signal ? { signal } : {}) });
  return parseTensorboardStart(r.stdout.toString('utf8'));
}

interface Open {
  readonly forward: LocalForward;
  readonly remotePort: number;
  readonly host: SshHost;
  readonly remoteDir: string;
}

/** One TensorBoard and one local forward per run, for as long as the editor shows it. */
export class TensorboardService {
  private readonly open = new Map<string, Promise<Open>>();

  constructor(
    private readonly hostFor: (r: RunRecord) => SshHost,
    private readonly log?: (line: string) => void,
  ) {}

  /** The local URL of the run's TensorBoard, starting it on the host and forwarding a port when needed. */
  async url(rec: RunRecord, signal?: AbortSignal): Promise<string> {
    if (!rec.remoteDir || !rec.host) throw new Error(`${rec.name} has no folder on a host`);
    let p = this.open.get(rec.id);
    if (!p) {
      const remoteDir = rec.remoteDir;
      const host = this.hostFor(rec);
      p = (async (): Promise<Open> => {
        const remotePort = await host.use((s) => startRemoteTensorboard(s, remoteDir, rec.workspaceDir, signal), signal);
        const forward = await forwardLocalPort(() => host.session(), '127.0.0.1', remotePort, this.log);
        this.log?.(`[${rec.id}] TensorBoard on the host's 127.0.0.1:${remotePort}, forwarded to 127.0.0.1:${forward.localPort}`);
        return { forward, remotePort, host, remoteDir };
      })();
      this.open.set(rec.id, p);
      p.catch(() => this.open.delete(rec.id));
    }
    const o = await p;
    // Asked again: TensorBoard may have died on the host since (a reboot, a kill); the start script reuses a live
    // one and otherwise starts another, and a new port gets a new forward.
    const port = await o.host.use((s) => startRemoteTensorboard(s, o.remoteDir, rec.workspaceDir, signal), signal);
    if (port === o.remotePort) return `http://127.0.0.1:${o.forward.localPort}/`;
    await o.forward.close();
    this.open.delete(rec.id);
    return await this.url(rec, signal);
  }

  isOpen(runId: string): boolean {
    return this.open.has(runId);
  }

  /** Closes the forward and stops TensorBoard on the host (best effort: the host may be gone). */
  async close(runId: string): Promise<void> {
    const p = this.open.get(runId);
    if (!p) return;
    this.open.delete(runId);
    const o = await p.catch(() => undefined);
    if (!o) return;
    await o.forward.close();
    try {
      await o.host.use((s) => s.exec(tensorboardStopScript(o.remoteDir), { what: 'stopping TensorBoard' }));
    } catch (err) {
      this.log?.(`[${runId}] could not stop TensorBoard on the host: ${(err as Error).message}`);
    }
  }

  async dispose(): Promise<void> {
    await Promise.all([...this.open.keys()].map((id) => this.close(id)));
  }
}
