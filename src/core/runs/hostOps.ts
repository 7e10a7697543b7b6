// One-off operations on a finished run's host (merge the adapter, push to the Hub): a runner subcommand run in
// the foreground over SSH, whose stdout is JSON lines ({"op","stage","message",...}, the last "done" or
// "error"; python-runner/remote_finetune/oplines.py). Secrets go on its stdin, never in the command line
// (every user of the host can read command lines in `ps`), and never into a file on the host.
import { z } from 'zod';
import type { SshSession } from '../ssh/session';
import { shellCommand, shellQuote } from '../ssh/quote';

/** Where a run's things are on its host, as absolute paths (no `~`). */
export interface RunHostPaths {
  /** ~/.remote-finetune as an absolute path. */
  readonly root: string;
  readonly runDir: string;
  /** The workspace the run ran in (relative paths of its spec resolve here). */
  readonly workspace: string;
  /** This extension's runner, synced before the operation. */
  readonly runner: string;
  /** The interpreter the run trained with, when the host says (bootstrap.json), else the configured one. */
  readonly python: string;
}

/** Runs an operation on a run's host; RunManager.onRunHost is the implementation. */
export type OnRunHost = <T>(runId: string, fn: (session: SshSession, at: RunHostPaths) => Promise<T>, signal?: AbortSignal) => Promise<T>;

// The host's text is untrusted: only these fields are read, each checked.
const opLineSchema = z
  .object({
    op: z.string().max(40),
    stage: z.string().max(40),
    message: z.string().max(2000).optional(),
  })
  .passthrough();
export type OpLine = z.infer<typeof opLineSchema>;

/**
 * The interpreter named by the run's bootstrap.json (the venv the run trained in), if any. The bootstrap may
 * write progress lines before its JSON verdict, so the last line that parses as an object with `python` wins.
 */
export function pythonFromBootstrap(text: string): string | undefined {
  for (const line of text.split('\n').reverse()) {
    if (!line.trim().startsWith('{')) continue;
    try {
      const v = (JSON.parse(line) as { python?: unknown }).python;
      if (typeof v === 'string' && v.startsWith('/') && !/[\n\0]/.test(v)) return v;
    } catch {
      // a progress line or a cut one
    }
  }
  try {
    const v = (JSON.parse(text) as { python?: unknown }).python;
    return typeof v === 'string' && v.startsWith('/') && !/[\n\0]/.test(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The workspace a run ran in, from the first line of its command.sh (`cd '<dir>' || exit 96`, written by
 * ssh/runs.startDetached): right even for a run found on the host, whose local workspace is unknown here.
 */
export function workspaceFromCommandScript(text: string): string | undefined {
  const m = /^cd (.+) \|\| exit 96$/.exec(text.split('\n')[0] ?? '');
  if (!m) return undefined;
  // One shell word as shellQuote writes it: bare safe characters, '...' pieces, and \' between them.
  let dir = '';
  const word = m[1]!;
  for (let i = 0; i < word.length;) {
    const c = word[i]!;
    if (c === "'") {
      const end = word.indexOf("'", i + 1);
      if (end < 0) return undefined;
      dir += word.slice(i + 1, end);
      i = end + 1;
    } else if (c === '\\' && i + 1 < word.length) {
      dir += word[i + 1];
      i += 2;
    } else if (/[A-Za-z0-9_./@%+=:,-]/.test(c)) {
      dir += c;
      i++;
    } else return undefined;
  }
  return dir.startsWith('/') && !dir.includes('\0') ? dir : undefined;
}

/** The command line of a runner subcommand: environment (never a secret), PYTHONPATH, the argv, all quoted. */
export function runnerOpCommand(at: RunHostPaths, argv: readonly string[], env: Readonly<Record<string, string>> = {}): string {
  const vars = Object.entries(env).map(([k, v]) => {
    if (!/^[A-Z_][A-Z0-9_]*$/.test(k)) throw new Error(`bad variable name ${k}`);
    return `${k}=${shellQuote(v)}`;
  });
  // PYTHONSAFEPATH: `python -m` would otherwise put the run dir first on sys.path (see runStart.runnerCommand).
  return `cd ${shellQuote(at.runDir)} && ${['PYTHONSAFEPATH=1', `PYTHONPATH=${shellQuote(at.runner)}`, ...vars].join(' ')} exec ${shellCommand([at.python, '-m', 'remote_finetune', ...argv])}`;
}

export class HostOpError extends Error {
  constructor(
    message: string,
    readonly stderrTail: string,
  ) {
    super(message);
    this.name = 'HostOpError';
  }
}

/**
 * Runs `command` on the session, writes `stdin` (one JSON object, may hold a secret) and reports every
 * progress line; resolves with the "done" line, rejects with the "error" line's message (or the tail of
 * stderr when the process died without one). Abort sends SIGTERM to the remote process and closes the channel.
 */
export async function runHostOp(session: SshSession, command: string, stdin: string, onLine: (line: OpLine) => void, signal?: AbortSignal): Promise<OpLine> {
  if (signal?.aborted) throw new Error('cancelled');
  const ch = await session.execStream(command);
  const exit = session.exitOf(ch);
  let buf = '';
  let last: OpLine | undefined;
  let stderr = '';
  const take = (text: string): void => {
    buf += text;
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const raw = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      if (!raw) continue;
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw);
      } catch {
        continue; // a stray print from a library: not ours
      }
      const line = opLineSchema.safeParse(parsed);
      if (!line.success) continue;
      last = line.data;
      onLine(line.data);
    }
    if (buf.length > 1 << 20) buf = ''; // a line that never ends is not a progress line
  };
  const onAbort = (): void => {
    try {
      ch.signal('TERM');
    } catch {
      // older servers: closing the channel is all there is
    }
    ch.close();
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const closed = new Promise<void>((resolve) => ch.once('close', () => resolve()));
    ch.on('data', (d: Buffer) => take(d.toString('utf8')));
    ch.stderr.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString('utf8')).slice(-4000);
    });
    ch.end(stdin);
    await closed;
    const status = await exit;
    if (signal?.aborted) throw new Error('cancelled');
    if (buf.trim()) take('\n');
    if (last?.stage === 'done' && status?.code === 0) return last;
    if (last?.stage === 'error') throw new HostOpError(last.message ?? 'failed', stderr);
    const why = stderr.trim().split('\n').slice(-3).join(' | ');
    throw new HostOpError(
      `the host operation ended (${status ? `exit ${status.code ?? status.signal}` : 'connection lost'}) without a result${why ? `: ${why}` : ''}`,
      stderr,
    );
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}
