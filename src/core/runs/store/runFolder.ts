// A run folder's files, named once: the host's ~/.remote-finetune/runs/<id>/ and the local mirror of it use
// the same names, and python-runner/remote_finetune/run_folder.py spells the same ones on the host. Everything
// that opens one of these files takes its name from here (test/unit/architecture/runFolderNames.test.ts), and
// events.jsonl is read by one reader over the shared events parser.
import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { parseEventLine } from '../../telemetry/events';
import type { RunEvent } from '../../telemetry/events';

/** The files the runner and its wrapper write in a run folder, and the ones the mirror copies back. */
export const RUN_FILES = {
  /** Combined stdout/stderr of the run, append-only. */
  log: 'output.log',
  /** One runner event per line (src/core/telemetry/events.ts). */
  events: 'events.jsonl',
  /** nvidia-smi samples (or CPU/memory lines on a host without a GPU). */
  gpu: 'gpu.csv',
  /** The GPU processes, polled. */
  gpuProcs: 'gpu_procs.csv',
  /** The spec the run started with (never secrets); locally the copy a replacement instance is started from. */
  spec: 'spec.json',
  /** The launcher the run resolved (accelerate, torchrun, deepspeed…). */
  launch: 'launch.json',
  /** What the runner's bootstrap chose (the Python with CUDA torch). */
  bootstrap: 'bootstrap.json',
  /** What the wrapper runs. */
  command: 'command.sh',
} as const;

export type RunFileKey = keyof typeof RUN_FILES;

/**
 * The run's history kept in its local folder beside the mirror (runHistory.ts): the spec text, the spec as
 * sent (the same spec.json the host has), the git diff, and what the host sent back when the run ended.
 */
export const HISTORY_FILES = {
  specSource: 'spec-source.yaml',
  specJson: RUN_FILES.spec,
  gitDiff: 'git.diff',
  trainingArgs: 'training_args.json',
  lock: 'pip-freeze.txt',
} as const;
export type HistoryFile = (typeof HISTORY_FILES)[keyof typeof HISTORY_FILES];
/** HISTORY_FILES' names as a tuple (the run record's schema enumerates them). */
export const HISTORY_NAMES = [
  HISTORY_FILES.specSource,
  HISTORY_FILES.specJson,
  HISTORY_FILES.gitDiff,
  HISTORY_FILES.trainingArgs,
  HISTORY_FILES.lock,
] as const satisfies readonly HistoryFile[];

/** The files mirrored from the host by byte offset, in the order the mirror starts them. */
export const MIRRORED_NAMES = [RUN_FILES.log, RUN_FILES.events, RUN_FILES.gpu] as const;

/** Where file `key` of the run folder `dir` is (a local path or a host path). */
export function runFile(dir: string, key: RunFileKey): string {
  return join(dir, RUN_FILES[key]);
}

/** The same on the host, where paths are POSIX whatever this machine is. */
export function hostRunFile(remoteRunDir: string, key: RunFileKey): string {
  return `${remoteRunDir.replace(/\/+$/, '')}/${RUN_FILES[key]}`;
}

/** One parsed line of events.jsonl, with its text (a line's signature is checked against the text, eventAuth.ts). */
export interface ReadEvent {
  readonly line: string;
  readonly event: RunEvent;
}

export interface EventsRead {
  readonly events: readonly ReadEvent[];
  /** Lines that were not events (not JSON, another schema version, a field out of range): skipped, counted. */
  readonly badLines: number;
  /**
   * Text after the last newline that is not an event yet: the runner is writing it, or the mirror stopped
   * mid-line. Not counted as bad; the next read sees the whole line.
   */
  readonly partial: boolean;
}

/** Read in blocks, so a large events.jsonl is never one string. */
const BLOCK_BYTES = 1024 * 1024;

/**
 * events.jsonl text as it arrives (a file read in blocks, a mirror's appended bytes): whole lines become
 * events, bad lines are counted, an unterminated rest waits for the next piece. A rest longer than
 * `maxPending` is damage, not a line being written, and is dropped (counted as bad).
 */
export class EventLines {
  private readonly all: ReadEvent[] | undefined;
  private bad = 0;
  private pending = '';

  constructor(private readonly opts: { readonly keep?: boolean; readonly maxPending?: number } = {}) {
    this.all = opts.keep === false ? undefined : [];
  }

  /** The events of the whole lines `text` completes, in order. */
  push(text: string): ReadEvent[] {
    const out: ReadEvent[] = [];
    if (!text) return out;
    const lines = (this.pending + text).split('\n');
    this.pending = lines.pop() ?? '';
    if (this.opts.maxPending !== undefined && this.pending.length > this.opts.maxPending) {
      this.pending = '';
      this.bad++;
    }
    return this.pushLines(lines);
  }

  /** The events of lines already split (a line tail's), in order. */
  pushLines(lines: readonly string[]): ReadEvent[] {
    const out: ReadEvent[] = [];
    for (const line of lines) {
      if (!line.trim()) continue;
      const p = parseEventLine(line);
      if (p.ok) out.push({ line, event: p.event });
      else this.bad++;
    }
    this.all?.push(...out);
    return out;
  }

  /** Lines so far that were not events. */
  get badLines(): number {
    return this.bad;
  }

  /** The end of the text: a last line without its newline counts when it parses (a file closed without one). */
  end(): EventsRead {
    const last = this.pending;
    this.pending = '';
    let partial = false;
    if (last.trim()) {
      const p = parseEventLine(last);
      if (p.ok) this.all?.push({ line: last, event: p.event });
      else partial = true;
    }
    return { events: this.all ?? [], badLines: this.bad, partial };
  }
}

/** Every event of a text of events.jsonl lines, in order (see EventLines.end for the last line). */
export function eventsOfText(text: string): EventsRead {
  const acc = new EventLines();
  acc.push(text);
  return acc.end();
}

/** The events of a run folder's events.jsonl (none when there is no file or it cannot be read). */
export function readRunEvents(dir: string | undefined): EventsRead {
  return dir ? readEventsFile(runFile(dir, 'events')) : { events: [], badLines: 0, partial: false };
}

/** readRunEvents for a path to the file itself. */
export function readEventsFile(file: string | undefined): EventsRead {
  const acc = new EventLines();
  if (!file || !existsSync(file)) return acc.end();
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const decoder = new StringDecoder('utf8');
    const buf = Buffer.allocUnsafe(BLOCK_BYTES);
    for (let n = readSync(fd, buf, 0, buf.length, null); n > 0; n = readSync(fd, buf, 0, buf.length, null)) acc.push(decoder.write(buf.subarray(0, n)));
    acc.push(decoder.end());
  } catch {
    // Unreadable (removed mid-read, a folder in its place): what was read so far stands.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  return acc.end();
}
