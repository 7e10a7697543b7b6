// One-off operations on a finished run's host (merge the adapter, push to the Hub): a runner subcommand run in
// the foreground over SSH, whose stdout is JSON lines ({"op","stage","message",...}, the last "done" or
// "error"; python-runner/remote_finetune/oplines.py). Secrets go on its stdin, never in the command line
// (every user of the host can read command lines in `ps`), and never into a file on the host.
import { z } from 'zod';
import { runnerEntry } from './runnerEntry';
import type { SshSession } from '../../ssh/session';
import { shellCommand, shellQuote } from '../../ssh/quote';
import type { ClientChannel } from 'ssh2';
import { LineSplitter } from '../../ssh/lineSplitter';
import { noAnswerError, tooMuchOutputError } from '../../ssh/commandLimits';
import type { CommandLimits, HostCommandError } from '../../ssh/commandLimits';

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
 * ssh/detachedJob.startDetached): right even for a run found on the host, whose local workspace is unknown here.
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
  // By path (runnerEntry.ts): the run dir, where it works, is never on sys.path; PYTHONSAFEPATH keeps it off for what it starts.
  return `cd ${shellQuote(at.runDir)} && ${['PYTHONSAFEPATH=1', `PYTHONPATH=${shellQuote(at.runner)}`, ...vars].join(' ')} exec ${shellCommand([at.python, runnerEntry(at.runner), ...argv])}`;
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

/** A merge of a large model or a push of many GB over a slow uplink takes hours; a day does not happen. */
export const HOST_OP_TIMEOUT_MS = 6 * 3600_000;
/** stdout carries a few progress lines; stderr the libraries' logs and progress bars (kept only as a tail). */
export const HOST_OP_OUTPUT_BYTES = 256 * 1024 * 1024;
/** A progress line is a few hundred bytes; the "done" line's result a few KB. */
const MAX_OP_LINE_BYTES = 1024 * 1024;

/**
 * Runs `command` on the session, writes `stdin` (one JSON object, may hold a secret) and reports every
 * progress line; resolves with the "done" line, rejects with the "error" line's message (or the tail of
 * stderr when the process died without one). Abort sends SIGTERM to the remote process and closes the channel;
 * so does passing the time limit or the output cap (stdout and stderr together), which fail with a
 * HostCommandError naming the host and `limits.what`.
 */
export async function runHostOp(
  session: SshSession,
  command: string,
  stdin: string,
  onLine: (line: OpLine) => void,
  signal?: AbortSignal,
  limits: CommandLimits = {},
): Promise<OpLine> {
  if (signal?.aborted) throw new Error('cancelled');
  // Read only when a limit is passed.
  const host = (): string => session.resolved.alias;
  const what = limits.what ?? 'the host operation';
  const timeoutMs = limits.timeoutMs ?? HOST_OP_TIMEOUT_MS;
  const maxBytes = limits.maxOutputBytes ?? HOST_OP_OUTPUT_BYTES;
  let limitError: HostCommandError | undefined;
  let ch: ClientChannel | undefined;
  const stop = (): void => {
    try {
      ch?.signal('TERM');
    } catch {
      // older servers: closing the channel is all there is
    }
    ch?.close();
  };
  // Settles (rejects) at the first limit passed: the caller does not wait for a hostile host to confirm the close.
  let rejectLimit: (e: HostCommandError) => void = () => undefined;
  const limitHit = new Promise<never>((_, reject) => (rejectLimit = reject));
  limitHit.catch(() => undefined);
  const overLimit = (e: HostCommandError): void => {
    if (limitError) return;
    limitError = e;
    stop();
    rejectLimit(e);
  };
  // Started before the channel is asked for: a host that never opens it is as silent as one that never answers.
  const timer = setTimeout(() => overLimit(noAnswerError(host(), what, timeoutMs)), timeoutMs);
  const opened = session.execStream(command);
  opened.then((c) => (limitError ? c.close() : undefined)).catch(() => undefined);
  try {
    ch = await Promise.race([opened, limitHit]);
  } catch (err) {
    clearTimeout(timer);
    throw err;
  }
  const channel = ch;
  const exit = session.exitOf(channel);
  const lines = new LineSplitter(MAX_OP_LINE_BYTES);
  let last: OpLine | undefined;
  let stderr = '';
  let bytes = 0;
  const counted = (n: number): boolean => {
    bytes += n;
    if (bytes > maxBytes) overLimit(tooMuchOutputError(host(), what, maxBytes));
    return limitError === undefined;
  };
  const handle = (text: string): void => {
    const raw = text.trim();
    if (!raw) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      return; // a stray print from a library: not ours
    }
    const line = opLineSchema.safeParse(parsed);
    if (!line.success) return;
    last = line.data;
    onLine(line.data);
  };
  signal?.addEventListener('abort', stop, { once: true });
  try {
    const closed = new Promise<void>((resolve) => channel.once('close', () => resolve()));
    channel.on('data', (d: Buffer) => {
      if (counted(d.length)) for (const l of lines.push(d)) handle(l);
    });
    channel.stderr.on('data', (d: Buffer) => {
      if (counted(d.length)) stderr = (stderr + d.subarray(-4000).toString('utf8')).slice(-4000);
    });
    channel.end(stdin);
    await Promise.race([closed, limitHit]);
    const status = await exit;
    if (signal?.aborted) throw new Error('cancelled');
    const rest = lines.end();
    if (rest !== undefined) handle(rest);
    if (last?.stage === 'done' && status?.code === 0) return last;
    if (last?.stage === 'error') throw new HostOpError(last.message ?? 'failed', stderr);
    const why = stderr.trim().split('\n').slice(-3).join(' | ');
    throw new HostOpError(
      `the host operation ended (${status ? `exit ${status.code ?? status.signal}` : 'connection lost'}) without a result${why ? `: ${why}` : ''}`,
      stderr,
    );
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', stop);
  }
}
