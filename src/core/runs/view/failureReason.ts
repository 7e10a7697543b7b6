// Why a run failed, in words a person acts on: the recognised failure (out of memory…) or the last exception line
// of the log with the file and line it was raised at. A traceback path inside the synced workspace (the host's
// <root>/workspaces/<name>/…, or a path relative to it) names a local file; everything here is host text, so a
// path only ever resolves to a regular file inside the local workspace folder, after symlinks.
import { closeSync, openSync, readSync, fstatSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, sep } from 'node:path';
import { z } from 'zod';
import { remoteWorkspaceName } from '../store/runPaths';

export const failureAtSchema = z.object({
  /** Relative to the run's workspace folder, '/'-separated, no '..'. */
  file: z.string().min(1).max(1000),
  line: z.number().int().positive(),
});
export type FailureAt = z.infer<typeof failureAtSchema>;

export const runFailureSchema = z.object({
  signature: z.string().optional(),
  message: z.string(),
  hint: z.string().optional(),
  /** Where the exception was raised in the workspace's own code (the innermost such traceback frame). */
  at: failureAtSchema.optional(),
});
export type RunFailure = z.infer<typeof runFailureSchema>;

/** What a Python traceback ends with: `SomeError: …` (python-runner notify.py reads the same lines). */
const EXCEPTION = /^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Interrupt)\b(?::.*)?$/;
/** A traceback frame: `  File "/path/x.py", line 42, in main`. */
export const TRACEBACK_FRAME = /File "([^"\n]{1,1000})", line (\d{1,9})/;

export interface TraceFrame {
  readonly file: string;
  readonly line: number;
}

export interface LastException {
  /** The exception line, at most 300 characters. */
  readonly line: string;
  /** The traceback's frames before it, outermost first. */
  readonly frames: readonly TraceFrame[];
}

/** The log's last exception line and the frames of its traceback (ANSI colours and \r progress bars removed). */
export function lastException(log: string): LastException | undefined {
  // eslint-disable-next-line no-control-regex
  const lines = log.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').split(/\r?\n/);
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = (lines[i] ?? '').split('\r').pop()!.trim();
    if (!EXCEPTION.test(line)) continue;
    const frames: TraceFrame[] = [];
    // Back to the traceback's first line: its frames are the lines naming a file (chained tracebacks stop there).
    for (let j = i - 1; j >= 0 && i - j < 2000; j--) {
      const l = lines[j] ?? '';
      if (l.startsWith('Traceback (most recent call last)')) break;
      const m = TRACEBACK_FRAME.exec(l);
      if (m) frames.unshift({ file: m[1]!, line: Number(m[2]) });
    }
    return { line: line.slice(0, 300), frames };
  }
  return undefined;
}

/**
 * A host path from a traceback as a path relative to the run's workspace, or undefined when it is outside it (a
 * library, the runner) or not a plain path. `workspaceDir` is the local folder the run synced.
 */
export function workspaceRelative(hostPath: string, workspaceDir: string): string | undefined {
  const marker = `/workspaces/${remoteWorkspaceName(workspaceDir)}/`;
  const at = hostPath.lastIndexOf(marker);
  let rel: string;
  if (at >= 0) rel = hostPath.slice(at + marker.length);
  else if (!hostPath.startsWith('/') && !hostPath.startsWith('~') && !hostPath.startsWith('<') && !/^[A-Za-z]:/.test(hostPath)) rel = hostPath;
  else return undefined;
  const parts = rel.replace(/\\/g, '/').split('/');
  if (parts.some((p) => p === '..' || p === '') || parts[0] === '.' || rel.includes('\0')) return undefined;
  return parts.filter((p) => p !== '.').join('/');
}

/**
 * The local file a workspace-relative path names: a regular file whose real path (symlinks followed) lies inside
 * the workspace's real path. Undefined for anything else.
 */
export function localSourceFile(workspaceDir: string, rel: string): string | undefined {
  const parts = rel.split('/');
  if (isAbsolute(rel) || parts.some((p) => p === '..' || p === '') || rel.includes('\\') || rel.includes('\0')) return undefined;
  try {
    const root = realpathSync(workspaceDir);
    const real = realpathSync(join(root, ...parts));
    const inside = relative(root, real);
    if (inside === '' || inside.startsWith(`..${sep}`) || inside === '..' || isAbsolute(inside)) return undefined;
    return statSync(real).isFile() ? real : undefined;
  } catch {
    return undefined;
  }
}

/** The local file a traceback's host path names (log panel links), or undefined when it is no workspace file. */
export function tracebackSource(workspaceDir: string | undefined, hostPath: string): string | undefined {
  const rel = workspaceDir ? workspaceRelative(hostPath, workspaceDir) : undefined;
  return rel ? localSourceFile(workspaceDir!, rel) : undefined;
}

/** Where an exception was raised in the workspace's code: the innermost frame inside the workspace. */
export function workspaceFrame(frames: readonly TraceFrame[], workspaceDir: string | undefined): FailureAt | undefined {
  if (!workspaceDir) return undefined;
  for (let i = frames.length - 1; i >= 0; i--) {
    const f = frames[i]!;
    const rel = workspaceRelative(f.file, workspaceDir);
    if (rel) return { file: rel, line: f.line };
  }
  return undefined;
}

/** The last `bytes` of a file as text; '' when it cannot be read. */
export function readTail(path: string, bytes = 65_536): string {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const size = fstatSync(fd).size;
    const len = Math.min(size, bytes);
    const buf = Buffer.alloc(len);
    readSync(fd, buf, 0, len, size - len);
    return buf.toString('utf8');
  } catch {
    return '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * The failure told with the log's help: with no recognised failure, the last exception line instead of an exit
 * code; in either case the file and line it was raised at ("ValueError: … (train.py:42)").
 */
export function explainFailure(failure: RunFailure, logTail: string, workspaceDir: string | undefined): RunFailure {
  const exc = lastException(logTail);
  if (!exc) return failure;
  const at = workspaceFrame(exc.frames, workspaceDir);
  const inner = exc.frames[exc.frames.length - 1];
  // Outside the workspace (a library's frame) the place is said only for an unrecognised exception: a recognised
  // failure's fix does not depend on which library line noticed it.
  const where = at ? `${at.file}:${at.line}` : inner && !failure.signature ? `${inner.file}:${inner.line}` : undefined;
  // A recognised failure keeps its own words (its line and fix); an unrecognised one is told by its exception.
  const base = failure.signature ? failure.message : exc.line;
  const message = where && !base.includes(where) ? `${base} (${where})` : base;
  return { ...failure, message: message.slice(0, 2000), ...(at ? { at } : {}) };
}

/** The failure in a few words for a row: the signature, else the exception's type, with where it was raised. */
export function failureShort(f: RunFailure | undefined): string | undefined {
  if (!f) return undefined;
  const what = f.signature ?? /^(?:[A-Za-z_][\w.]*\.)?([A-Z]\w*(?:Error|Exception|Interrupt))\b/.exec(f.message)?.[1];
  if (!what) return undefined;
  return f.at ? `${what} at ${f.at.file}:${f.at.line}` : what;
}
