// "Try Adapter" panel messages. The prompt goes to the host; generated text comes back piece by piece as the
// model produces it. Everything the model writes is untrusted text: the webview renders it with textContent.
import type { ReadyMessage } from './common';

/** Where the generate process runs: on the run's host (its venv, its GPU) or on this machine's CPU. */
export type TryWhere = 'host' | 'local';

export const TRY_MAX_PROMPT = 64 * 1024;
export const TRY_MAX_NEW_TOKENS = 4096;
export const TRY_MAX_TEMPERATURE = 2;

export interface TryInitMessage {
  readonly type: 'init';
  /** The run's name (chosen by whoever started it): rendered as text. */
  readonly runName: string;
  readonly host: string;
  /** Why the local CPU option is unavailable, when it is (no downloaded adapter, no local python set). */
  readonly localUnavailable?: string;
}

export interface TryStatusMessage {
  readonly type: 'status';
  readonly where: TryWhere;
  readonly state: 'loading' | 'ready' | 'failed';
  /** Plain text: what is loading, the base model and device once ready, or the runner's error. */
  readonly text: string;
}

export interface TryTokenMessage {
  readonly type: 'token';
  readonly requestId: number;
  readonly text: string;
}

export interface TryDoneMessage {
  readonly type: 'done';
  readonly requestId: number;
  readonly tokens: number;
  readonly stopped: boolean;
  readonly seconds: number;
}

export interface TryErrorMessage {
  readonly type: 'error';
  readonly requestId: number;
  readonly message: string;
}

export type TryToWebview = TryInitMessage | TryStatusMessage | TryTokenMessage | TryDoneMessage | TryErrorMessage;

export interface TryGenerateMessage {
  readonly type: 'generate';
  /** Chosen by the webview, increasing; the host's answers carry it back. */
  readonly requestId: number;
  readonly where: TryWhere;
  readonly prompt: string;
  readonly temperature: number;
  readonly maxNewTokens: number;
  /** Apply the tokenizer's chat template (when it has one). */
  readonly chat: boolean;
}

export interface TryStopMessage {
  readonly type: 'stop';
  readonly requestId: number;
}

export type TryFromWebview = ReadyMessage | TryGenerateMessage | TryStopMessage;

export interface TryViewState {
  readonly where: TryWhere;
  readonly temperature: number;
  readonly maxNewTokens: number;
  readonly chat: boolean;
  readonly prompt: string;
}
