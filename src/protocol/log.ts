// Log panel messages. Log text travels as already-decoded strings (the host decodes bytes with a streaming
// TextDecoder, so a multi-byte character split across chunks and invalid UTF-8 both arrive as valid text).
import type { ActionMessage, EmptyStateMessage, ReadyMessage } from './common';

export type LogLevel = 'error' | 'warning' | 'info';
export type LogLevelFilter = 'all' | 'warning' | 'error';

/** A known failure the webview looks for in each line (from the runner's signatures.json). */
export interface LogSignature {
  readonly id: string;
  readonly title: string;
  /** JavaScript RegExp source, compiled case-insensitive in the webview. */
  readonly pattern: string;
  readonly hint: string;
}

export interface LogInitMessage {
  readonly type: 'init';
  readonly title: string;
  readonly signatures: readonly LogSignature[];
  /** Byte offset in the full log of the first chunk that will follow. */
  readonly startOffset: number;
  /** True when the start of the log was skipped (older lines live only in the full log on disk). */
  readonly truncated: boolean;
  readonly scrollback: number;
  /**
   * The host folder name the run's workspace syncs to (runPaths.ts remoteWorkspaceName): traceback frames under
   * it, or relative to it, are links that open the local file. Absent: no links.
   */
  readonly workspaceFolder?: string;
}

export interface LogChunkMessage {
  readonly type: 'chunk';
  readonly seq: number;
  /** Byte offset of this chunk's first byte in the full log. */
  readonly offset: number;
  /** Bytes this chunk covers in the full log (data.length counts UTF-16 units, not bytes). */
  readonly bytes: number;
  readonly data: string;
}

export interface LogStatusMessage {
  readonly type: 'status';
  readonly text: string;
  readonly state: 'live' | 'ended' | 'unreachable';
  /** With state 'ended': how the run ended, so the page can style the final status (from `finished`). */
  readonly outcome?: 'completed' | 'failed' | 'interrupted' | 'stopped' | 'preempted' | 'stalled' | 'budget-stopped';
}

export type LogToWebview = EmptyStateMessage | LogInitMessage | LogChunkMessage | LogStatusMessage;

/** Flow control: the webview acknowledges a chunk once xterm has parsed it (write callback). */
export interface LogAckMessage {
  readonly type: 'ack';
  readonly seq: number;
}

export interface LogCopyMessage {
  readonly type: 'copy';
  readonly text: string;
}

/** Open the full log on disk, optionally at a 1-based line of it. */
export interface LogOpenFullMessage {
  readonly type: 'openFullLog';
  readonly line?: number;
}

/** Open the workspace file a traceback frame names (host text: the extension checks it resolves inside the workspace). */
export interface LogOpenSourceMessage {
  readonly type: 'openSource';
  readonly path: string;
  readonly line: number;
}

export type LogFromWebview = ReadyMessage | ActionMessage | LogAckMessage | LogCopyMessage | LogOpenFullMessage | LogOpenSourceMessage;

/** What the log webview keeps with setState, so hide/show and reload restore the view. */
export interface LogViewState {
  readonly follow: boolean;
  readonly filter: LogLevelFilter;
  readonly search: string;
  /** Each line prefixed with the time it reached the panel (off by default: most logs carry their own). */
  readonly timestamps?: boolean;
}
