// A run's history, kept in its local folder beside the mirrored logs so runs can be compared later: the exact
// spec text and the spec as sent, the synced folder's git diff (the commit is in the record), and, fetched from
// the host when the run ends, the trainer's resolved TrainingArguments and the `pip freeze` of the interpreter
// that trained. Values of the run's env (its .env and stored secrets) are blanked out of whatever is written:
// a spec or a diff may quote a token, and no secret is ever kept by the extension.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SshSession } from '../../ssh/session';
import { shellPath } from '../../ssh/quote';
import { eventsOfText, HISTORY_FILES, readRunEvents } from './runFolder';
import type { HistoryFile, ReadEvent } from './runFolder';
import { gitSnapshot } from '../sync/gitInfo';
import type { GitState } from '../sync/gitInfo';

/** What the host may send back for one file; a resolved config or a lock is a few tens of KB. */
export const MAX_HOST_FILE_BYTES = 2 * 1024 * 1024;
/** Shorter values are too common to blank out of text without damaging it (and are no credential). */
const MIN_REDACTED_LENGTH = 6;
const MAX_FINAL_METRICS = 64;

/** `text` with every env value of a useful length replaced by `[redacted NAME]`, longest first. */
export function redactEnvValues(text: string, env: Readonly<Record<string, string>>): string {
  const pairs = Object.entries(env)
    .filter(([, v]) => v.length >= MIN_REDACTED_LENGTH)
    .sort((a, b) => b[1].length - a[1].length);
  let out = text;
  for (const [k, v] of pairs) out = out.split(v).join(`[redacted ${k}]`);
  return out;
}

/** Credentials in URLs (a pip freeze of `git+https://user:token@host/...`) blanked out. */
export function redactUrlCredentials(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]+(:[^\s/@]*)?@/gi, '$1[redacted]@');
}

export interface StartHistory {
  readonly git: GitState;
  readonly files: HistoryFile[];
}

/**
 * Writes the start of a run's history into `localDir` and returns what the record keeps. Never throws: a
 * folder that cannot be written only means less history.
 */
export async function recordStartHistory(opts: {
  readonly localDir: string;
  readonly specText: string;
  readonly spec: Readonly<Record<string, unknown>>;
  readonly workspaceDir: string;
  /** Every value that must not be written (the run's env, secrets included). */
  readonly env: Readonly<Record<string, string>>;
  /** Workspace-relative paths kept out of the diff besides .env files (the env file the spec names). */
  readonly excludes?: readonly string[];
  readonly signal?: AbortSignal;
}): Promise<StartHistory> {
  const snap = await gitSnapshot(opts.workspaceDir, { ...(opts.excludes ? { excludes: opts.excludes } : {}), ...(opts.signal ? { signal: opts.signal } : {}) });
  const clean = (t: string): string => redactEnvValues(t, opts.env);
  const git: GitState = snap.state.untracked ? { ...snap.state, untracked: snap.state.untracked.map(clean) } : snap.state;
  const files: HistoryFile[] = [];
  const write = (name: HistoryFile, text: string): void => {
    try {
      mkdirSync(opts.localDir, { recursive: true, mode: 0o700 });
      writeFileSync(join(opts.localDir, name), clean(text), { mode: 0o600 });
      files.push(name);
    } catch {
      // Less history, never a failed start.
    }
  };
  write(HISTORY_FILES.specSource, opts.specText);
  write(HISTORY_FILES.specJson, `${JSON.stringify(opts.spec, null, 2)}\n`);
  if (snap.diff) write(HISTORY_FILES.gitDiff, snap.diff);
  return { git, files };
}

/**
 * Copies the run's resolved TrainingArguments and lock from its folder on the host into `localDir` (each cut
 * at MAX_HOST_FILE_BYTES; the host's text is untrusted and only ever stored, parsed as JSON, or shown as text).
 * Returns the names fetched; a file the run did not write is simply absent.
 */
export async function fetchHostHistory(session: SshSession, remoteRunDir: string, localDir: string): Promise<HistoryFile[]> {
  const got: HistoryFile[] = [];
  for (const name of [HISTORY_FILES.trainingArgs, HISTORY_FILES.lock] as const) {
    const path = `${remoteRunDir.replace(/\/+$/, '')}/${name}`;
    // A plain file only: a link the training code left there could point anywhere on the host.
    const r = await session.exec(`f=${shellPath(path)}; [ -f "$f" ] && [ ! -L "$f" ] && head -c ${MAX_HOST_FILE_BYTES} "$f"`, {
      what: `reading ${path}`,
      maxOutputBytes: MAX_HOST_FILE_BYTES + 64 * 1024,
    });
    if (r.code !== 0) continue;
    mkdirSync(localDir, { recursive: true, mode: 0o700 });
    writeFileSync(join(localDir, name), redactUrlCredentials(r.stdout.toString('utf8')), { mode: 0o600 });
    got.push(name);
  }
  return got;
}

/**
 * The run's final metrics from its events.jsonl: the last value of each number the trainer logged (loss,
 * learning rate, the end-of-training summary such as train_runtime, eval_loss and eval metrics).
 */
export function finalMetricsFromEvents(text: string): Record<string, number> {
  return finalMetricsOfEvents(eventsOfText(text).events);
}

function finalMetricsOfEvents(events: readonly ReadEvent[]): Record<string, number> {
  const out = new Map<string, number>();
  const put = (k: string, v: number | undefined): void => {
    if (v === undefined || !Number.isFinite(v) || k.length > 200) return;
    out.delete(k);
    out.set(k, v);
  };
  for (const { event: e } of events) {
    if (e.type === 'metrics') {
      put('step', e.step);
      put('epoch', e.epoch);
      put('loss', e.loss);
      put('learning_rate', e.learning_rate);
      put('grad_norm', e.grad_norm);
      put('tokens_per_second', e.tokens_per_second);
      put('samples_per_second', e.samples_per_second);
      put('peak_gpu_memory_mb', e.peak_gpu_memory_mb);
      for (const [k, v] of Object.entries(e.extra ?? {})) put(k, v);
    } else if (e.type === 'eval') {
      put('eval_loss', e.eval_loss);
      for (const [k, v] of Object.entries(e.metrics ?? {})) put(k.startsWith('eval_') ? k : `eval_${k}`, v);
    } else if (e.type === 'finished') {
      put('runtime_s', e.runtime_s);
    }
  }
  // The most recently set keys are kept when a run logged more names than a record holds.
  return Object.fromEntries([...out.entries()].slice(-MAX_FINAL_METRICS));
}

/** finalMetricsFromEvents over a run folder's events.jsonl (empty when there is none). */
export function finalMetricsOf(localDir: string): Record<string, number> {
  return finalMetricsOfEvents(readRunEvents(localDir).events);
}
