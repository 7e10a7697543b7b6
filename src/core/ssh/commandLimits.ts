// Bounds on what a host may make the extension wait for or hold. A host is untrusted: a broken or hostile one can
// answer a command with nothing at all or with output that never ends, and neither may hang a command or fill
// the extension host's memory. Every failure names the host and what was being done, so the person reading it
// knows which machine to look at.

/** Default for a command run to completion: long enough for a slow disk or a busy host, short of "forever". */
export const DEFAULT_COMMAND_TIMEOUT_MS = 5 * 60_000;
/** Default output cap (stdout and stderr together): far above any listing or manifest a real host prints. */
export const DEFAULT_COMMAND_OUTPUT_BYTES = 64 * 1024 * 1024;

export interface CommandLimits {
  /** What the command does, for messages: "listing runs", "probing GPUs". */
  readonly what?: string;
  /** The command fails (its channel closed) when it has not finished after this long. */
  readonly timeoutMs?: number;
  /** The command fails (its channel closed) once its output passes this many bytes. */
  readonly maxOutputBytes?: number;
}

export type HostCommandFailure = 'timeout' | 'output';

/** A command that ran past its time limit or printed past its output cap. */
export class HostCommandError extends Error {
  constructor(
    readonly host: string,
    readonly what: string,
    readonly failure: HostCommandFailure,
    message: string,
  ) {
    super(message);
    this.name = 'HostCommandError';
  }
}

function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

function size(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MB` : bytes >= 1024 ? `${Math.round(bytes / 1024)} KB` : `${bytes} bytes`;
}

export function noAnswerError(host: string, what: string, ms: number): HostCommandError {
  return new HostCommandError(host, what, 'timeout', `${host}: ${what}: no answer in ${seconds(ms)} (the command was stopped).`);
}

export function tooMuchOutputError(host: string, what: string, bytes: number): HostCommandError {
  return new HostCommandError(host, what, 'output', `${host}: ${what}: the host printed more than ${size(bytes)} (the command was stopped).`);
}

/** Default for a stream (a download): hours are fine while bytes flow, two minutes of nothing is not. */
export const DEFAULT_STREAM_IDLE_MS = 2 * 60_000;

/** Calls `onIdle` once no byte has come for `ms`; touch() on every byte, stop() when the stream ends. */
export class IdleLimit {
  private readonly timer: NodeJS.Timeout;

  constructor(
    readonly ms: number,
    onIdle: () => void,
  ) {
    this.timer = setTimeout(onIdle, ms);
  }

  touch(): void {
    this.timer.refresh();
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}
