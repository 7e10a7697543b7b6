// "Try the adapter": one `python -m remote_finetune generate` process (python-runner/remote_finetune/generate.py)
// holding the base model + the run's adapter, fed prompts as JSON lines on stdin and streaming tokens back on
// stdout. It runs on the run's host over the existing SSH connection, with the run's own venv, or on this
// machine's CPU for small models. Every line from the process is untrusted text and is checked with zod.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { ClientChannel } from 'ssh2';
import type { SshSession } from '../../ssh/session';
import { shellCommand, shellQuote } from '../../ssh/quote';
import { runAdapterPath } from '../sync/runOutputs';
import { RUNNER_ENTRY, runnerEntry } from '../hosts/runnerEntry';
import { DEFAULT_COMMAND_OUTPUT_BYTES, DEFAULT_STREAM_IDLE_MS, noAnswerError, tooMuchOutputError } from '../../ssh/commandLimits';
import type { HostCommandError } from '../../ssh/commandLimits';
import { RUN_FILES } from '../store/runFolder';

export interface GenerateParams {
  readonly prompt: string;
  /** 0 is greedy decoding. */
  readonly temperature: number;
  readonly maxNewTokens: number;
  /** Apply the tokenizer's chat template when it has one (default true). */
  readonly chat?: boolean;
  readonly seed?: number;
}

export interface GenerateResult {
  readonly tokens: number;
  /** Stopped by cancel before max tokens or EOS. */
  readonly stopped: boolean;
  readonly seconds: number;
}

export interface GeneratorInfo {
  readonly base: string;
  readonly adapter: string;
  readonly device: string;
  readonly chatTemplate: boolean;
}

export const MAX_PROMPT_CHARS = 64 * 1024;
export const MAX_NEW_TOKENS = 4096;
/** A line longer than this is not ours (a token is a few characters): the process is treated as broken. */
const MAX_LINE = 1024 * 1024;

const text = z.string().max(MAX_LINE);
const outLine = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready'), base: text, adapter: text, device: text, chat_template: z.boolean() }),
  z.object({ type: z.literal('token'), id: text, text }),
  z.object({
    type: z.literal('done'),
    id: text,
    tokens: z.number().int().nonnegative(),
    stopped: z.boolean(),
    seconds: z.number().nonnegative(),
  }),
  z.object({ type: z.literal('error'), id: text.optional(), message: text, fatal: z.boolean().optional() }),
]);
type OutLine = z.infer<typeof outLine>;

/** Both ends of the generate process as lines: an SSH exec channel or a local child process. */
export interface LinePipe {
  write(line: string): void;
  end(): void;
  /** Hard stop (the process is killed or the channel closed). */
  kill(): void;
  onLine(cb: (line: string) => void): void;
  /** The process ended; stderrTail holds its last output there (a Python traceback when loading failed). */
  onExit(cb: (code: number | null, stderrTail: string) => void): void;
  /** Every chunk of stdout or stderr, by size: what the generator's idle limit and output cap count. */
  onBytes?(cb: (n: number) => void): void;
}

function lineSplitter(onLine: (line: string) => void, onOverflow: () => void): (chunk: Buffer) => void {
  const decoder = new TextDecoder('utf-8');
  let buf = '';
  return (chunk) => {
    buf += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      onLine(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
    }
    if (buf.length > MAX_LINE) {
      buf = '';
      onOverflow();
    }
  };
}

/** Keeps the last few KiB of stderr: enough for a traceback, never the whole of a chatty library's output. */
function tailKeeper(max = 4096): { push(b: Buffer): void; text(): string } {
  let t = '';
  return {
    push: (b) => {
      t = (t + b.toString('utf8')).slice(-max);
    },
    text: () => t,
  };
}

function pipeOf(
  stdout: NodeJS.ReadableStream,
  stderr: NodeJS.ReadableStream,
  stdin: NodeJS.WritableStream,
  kill: () => void,
  onProcessExit: (cb: (code: number | null) => void) => void,
): LinePipe {
  const lineCbs: ((l: string) => void)[] = [];
  const exitCbs: ((c: number | null, t: string) => void)[] = [];
  const byteCbs: ((n: number) => void)[] = [];
  const errTail = tailKeeper();
  const split = lineSplitter((l) => lineCbs.forEach((cb) => cb(l)), kill);
  stdout.on('data', (b: Buffer) => {
    byteCbs.forEach((cb) => cb(b.length));
    split(b);
  });
  stderr.on('data', (b: Buffer) => {
    byteCbs.forEach((cb) => cb(b.length));
    errTail.push(b);
  });
  // A write after the far end went away raises EPIPE on the stream; the exit callback reports the end instead.
  stdin.on('error', () => undefined);
  onProcessExit((code) => exitCbs.forEach((cb) => cb(code, errTail.text())));
  return {
    write: (line) => void stdin.write(line),
    end: () => void stdin.end(),
    kill,
    onLine: (cb) => void lineCbs.push(cb),
    onExit: (cb) => void exitCbs.push(cb),
    onBytes: (cb) => void byteCbs.push(cb),
  };
}

export function channelPipe(ch: ClientChannel, session: Pick<SshSession, 'exitOf'>): LinePipe {
  return pipeOf(
    ch,
    ch.stderr,
    ch,
    () => ch.close(),
    (cb) => void session.exitOf(ch).then((s) => cb(s?.code ?? null)),
  );
}

export function childPipe(cp: ChildProcess): LinePipe {
  if (!cp.stdout || !cp.stderr || !cp.stdin) throw new Error('the generate process needs piped stdio');
  return pipeOf(
    cp.stdout,
    cp.stderr,
    cp.stdin,
    () => void cp.kill('SIGKILL'),
    (cb) => {
      cp.once('close', (code) => cb(code));
      // spawn failing (no such interpreter) emits 'error' and maybe no 'close'.
      cp.once('error', () => cb(null));
    },
  );
}

interface Pending {
  readonly id: string;
  readonly onToken: (text: string) => void;
  resolve(r: GenerateResult): void;
  reject(e: Error): void;
}

/**
 * Bounds on the generate process, which runs on an untrusted host: while this side waits for an answer (the
 * load, a prompt's tokens) nothing from the process for the idle limit fails it, and so does output past the
 * cap within one load or one prompt. Between prompts it may be as quiet as it likes.
 */
export interface GeneratorLimits {
  /** Where it runs, for messages: the host's alias, or "this machine". */
  readonly host?: string;
  /** Quiet for this long while loading the model and adapter (downloads and loading print little): default 10 min. */
  readonly loadIdleMs?: number;
  /** Quiet for this long while a prompt is being answered: default DEFAULT_STREAM_IDLE_MS. */
  readonly idleMs?: number;
  /** Bytes of stdout and stderr within one load or one prompt: default DEFAULT_COMMAND_OUTPUT_BYTES. */
  readonly maxOutputBytes?: number;
}

const DEFAULT_LOAD_IDLE_MS = 10 * 60_000;

/** The generate process seen from here: one load, then any number of prompts, one at a time. */
export class AdapterGenerator {
  private readonly readyPromise: Promise<GeneratorInfo>;
  private pending: Pending | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private seq = 0;
  private exited: Error | undefined;
  private loaded = false;
  private idle: NodeJS.Timeout | undefined;
  private bytes = 0;
  private readonly rejectReady: (e: Error) => void;

  constructor(
    private readonly pipe: LinePipe,
    private readonly limits: GeneratorLimits = {},
  ) {
    let resolveReady!: (i: GeneratorInfo) => void;
    let rejectReady!: (e: Error) => void;
    this.readyPromise = new Promise<GeneratorInfo>((res, rej) => {
      resolveReady = res;
      rejectReady = rej;
    });
    this.rejectReady = rejectReady;
    // Nobody may be awaiting yet; the rejection is still delivered to whoever awaits ready().
    this.readyPromise.catch(() => undefined);
    const max = limits.maxOutputBytes ?? DEFAULT_COMMAND_OUTPUT_BYTES;
    pipe.onBytes?.((n) => {
      this.idle?.refresh();
      this.bytes += n;
      if (this.bytes > max) this.trip(tooMuchOutputError(this.host, this.what(), max));
    });
    this.waitForAnswer(limits.loadIdleMs ?? DEFAULT_LOAD_IDLE_MS);
    pipe.onLine((raw) => {
      const line = raw.trim();
      if (!line) return;
      const m = parseOutLine(line);
      if (!m) return;
      if (m.type === 'ready') {
        this.loaded = true;
        this.answered();
        resolveReady({ base: m.base, adapter: m.adapter, device: m.device, chatTemplate: m.chat_template });
      } else if (m.type === 'error' && m.fatal) {
        this.fail(new Error(m.message));
        rejectReady(new Error(m.message));
      } else this.dispatch(m);
    });
    pipe.onExit((code, tail) => {
      const lastLine =
        tail
          .trim()
          .split('\n')
          .filter((l) => l.trim())
          .pop() ?? '';
      this.answered();
      if (this.exited) return;
      const err = new Error(`the generate process ended (exit ${code ?? 'unknown'})${lastLine ? `: ${lastLine.slice(0, 500)}` : ''}`);
      this.exited = err;
      rejectReady(err);
      this.fail(err);
    });
  }

  /** False once the process ended (or never started). */
  get isOpen(): boolean {
    return this.exited === undefined;
  }

  /** Resolves once the model and adapter are loaded; rejects with the runner's message when they cannot be. */
  ready(): Promise<GeneratorInfo> {
    return this.readyPromise;
  }

  /**
   * Generates for one prompt, handing each new piece of text to onToken as it arrives. Aborting the signal asks
   * the process to stop after the current token: the promise then resolves with stopped = true.
   */
  generate(params: GenerateParams, onToken: (text: string) => void, signal?: AbortSignal): Promise<GenerateResult> {
    const run = async (): Promise<GenerateResult> => {
      await this.readyPromise;
      if (this.exited) throw this.exited;
      const id = String(++this.seq);
      const result = new Promise<GenerateResult>((resolve, reject) => {
        this.pending = { id, onToken, resolve, reject };
      });
      const cancel = (): void => this.pipe.write(`${JSON.stringify({ type: 'cancel', id })}\n`);
      this.waitForAnswer(this.limits.idleMs ?? DEFAULT_STREAM_IDLE_MS);
      this.pipe.write(`${JSON.stringify(requestLine(id, params))}\n`);
      if (signal?.aborted) cancel();
      else signal?.addEventListener('abort', cancel, { once: true });
      try {
        return await result;
      } finally {
        signal?.removeEventListener('abort', cancel);
        this.pending = undefined;
        this.answered();
      }
    };
    const p = this.queue.then(run, run);
    this.queue = p.catch(() => undefined);
    return p;
  }

  /** Ends the session: stdin closes, the process finishes the current token and exits; killed if it lingers. */
  close(killAfterMs = 5000): void {
    if (this.pending) this.pipe.write(`${JSON.stringify({ type: 'cancel', id: this.pending.id })}\n`);
    this.pipe.end();
    if (!this.exited) setTimeout(() => (this.exited ? undefined : this.pipe.kill()), killAfterMs).unref?.();
  }

  private dispatch(m: OutLine): void {
    const p = this.pending;
    if (!p || !('id' in m) || m.id !== p.id) return;
    if (m.type === 'token') p.onToken(m.text);
    else if (m.type === 'done') p.resolve({ tokens: m.tokens, stopped: m.stopped, seconds: m.seconds });
    else if (m.type === 'error') p.reject(new Error(m.message));
  }

  private fail(err: Error): void {
    this.pending?.reject(err);
  }

  private get host(): string {
    return this.limits.host ?? 'the generate host';
  }

  private what(): string {
    return this.loaded ? 'generating with the adapter' : 'loading the model and adapter to try';
  }

  /** Starts the idle limit and the output count for one load or one prompt. */
  private waitForAnswer(ms: number): void {
    this.answered();
    this.bytes = 0;
    this.idle = setTimeout(() => this.trip(noAnswerError(this.host, this.what(), ms)), ms);
    // The process or channel keeps the extension alive while it runs; the limit alone never should.
    this.idle.unref?.();
  }

  private answered(): void {
    if (this.idle) clearTimeout(this.idle);
    this.idle = undefined;
  }

  /** A limit passed: the process is stopped and whoever waits gets the error naming the host. */
  private trip(e: HostCommandError): void {
    if (this.exited) return;
    this.answered();
    this.exited = e;
    this.pipe.kill();
    this.rejectReady(e);
    this.fail(e);
  }
}

function parseOutLine(line: string): OutLine | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    return undefined;
  }
  const r = outLine.safeParse(raw);
  return r.success ? r.data : undefined;
}

export function requestLine(id: string, p: GenerateParams): Record<string, unknown> {
  if (p.prompt.length > MAX_PROMPT_CHARS) throw new Error(`the prompt is longer than ${MAX_PROMPT_CHARS} characters`);
  const temperature = Number.isFinite(p.temperature) ? Math.min(10, Math.max(0, p.temperature)) : 0;
  const maxNew = Number.isFinite(p.maxNewTokens) ? Math.min(MAX_NEW_TOKENS, Math.max(1, Math.round(p.maxNewTokens))) : 128;
  return {
    type: 'generate',
    id,
    prompt: p.prompt,
    temperature,
    max_new_tokens: maxNew,
    chat: p.chat !== false,
    ...(p.seed !== undefined && Number.isInteger(p.seed) ? { seed: p.seed } : {}),
  };
}

// ---- where the process runs ---------------------------------------------------------------------------

export interface RemoteGenerateTarget {
  /** The run's folder on the host (~/.remote-finetune/runs/<id>): bootstrap.json names the venv's python there. */
  readonly runDir: string;
  /** The synced runner (python-runner) on the host. */
  readonly runnerDir: string;
  /** The adapter folder on the host (absolute). */
  readonly adapterPath: string;
  /** The host interpreter when the run has no bootstrap.json (an own-script run uses the host's python). */
  readonly fallbackPython: string;
}

/**
 * The shell line that starts generate on the host: the run's venv python (what bootstrap chose), PYTHONSAFEPATH
 * and the run dir as working directory as for the run itself, and the run's 0600 env file for a gated base
 * model's token, read by the runner (never on this command line).
 */
export function remoteGenerateCommand(t: RemoteGenerateTarget): string {
  const dir = shellQuote(t.runDir);
  return [
    `cd ${dir} || exit 1`,
    `py=$(sed -n 's/.*"python": *"\\([^"]*\\)".*/\\1/p' ${RUN_FILES.bootstrap} 2>/dev/null); [ -n "$py" ] || py=${shellQuote(t.fallbackPython)}`,
    `PYTHONSAFEPATH=1 PYTHONPATH=${shellQuote(t.runnerDir)} TOKENIZERS_PARALLELISM=false exec "$py" ${shellCommand([
      runnerEntry(t.runnerDir),
      'generate',
      '--adapter',
      t.adapterPath,
      '--env-file',
      `${t.runDir}/env`,
    ])}`,
  ].join('\n');
}

export async function openRemoteGenerator(
  session: SshSession,
  target: RemoteGenerateTarget,
  limits: Omit<GeneratorLimits, 'host'> = {},
): Promise<AdapterGenerator> {
  const ch = await session.execStream(remoteGenerateCommand(target));
  return new AdapterGenerator(channelPipe(ch, session), { host: session.resolved.alias, ...limits });
}

export interface LocalGenerateTarget {
  /** A python on this machine with torch, transformers and peft. */
  readonly python: string;
  /** The extension's python-runner folder. */
  readonly runnerDir: string;
  /** The downloaded adapter (the run's outputs folder here). */
  readonly adapterPath: string;
  readonly env?: Readonly<Record<string, string>>;
}

/** Local CPU: the same generate.py under a local python, forced onto the CPU. */
export function openLocalGenerator(t: LocalGenerateTarget): AdapterGenerator {
  const cp = spawn(t.python, [join(t.runnerDir, RUNNER_ENTRY), 'generate', '--adapter', t.adapterPath, '--device', 'cpu'], {
    // By path (runnerEntry.ts): neither this folder nor the workspace is ever on sys.path.
    cwd: tmpdir(),
    env: { ...process.env, ...(t.env ?? {}), PYTHONPATH: t.runnerDir, PYTHONSAFEPATH: '1', TOKENIZERS_PARALLELISM: 'false' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  return new AdapterGenerator(childPipe(cp), { host: 'this machine' });
}

/**
 * Where the run's own adapter is on the host (runOutputs.ts): the finished event's adapter_path, else the
 * built-in trainer's <outputs.dir>/<run id>/adapter. Relative paths are relative to the run's workspace there.
 */
export function hostAdapterPath(workspaceRemote: string, outputsDir: string | undefined, runId: string, localEventsFile: string | undefined): string {
  const rel = runAdapterPath(outputsDir, runId, localEventsFile);
  return rel.startsWith('/') ? rel : `${workspaceRemote}/${rel}`;
}

/** The downloaded adapter of a run, for the local CPU option: the record's artifactsDir when it holds one. */
export function localAdapterPath(artifactsDir: string | undefined): string | undefined {
  if (!artifactsDir) return undefined;
  for (const p of [artifactsDir, join(artifactsDir, 'adapter')]) {
    if (existsSync(join(p, 'adapter_config.json')) || existsSync(join(p, 'config.json'))) return p;
  }
  return undefined;
}
