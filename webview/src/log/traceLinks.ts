// Traceback frames in the log as links: `File "<host path>", line N` where the path lies in the run's synced
// workspace folder on the host (or is relative to it, the runner's working directory). The extension checks the
// path again before opening anything: this only decides what looks like a link.
const FRAME = /File "([^"\n]{1,1000})", line (\d{1,9})/g;

export interface TraceLink {
  /** Offsets in the logical line: the quoted path through the line number. */
  readonly start: number;
  readonly end: number;
  readonly path: string;
  readonly line: number;
}

/** The frames of one logical line that name a workspace file. */
export function traceLinks(text: string, workspaceFolder: string | undefined): TraceLink[] {
  if (!workspaceFolder) return [];
  const marker = `/workspaces/${workspaceFolder}/`;
  const out: TraceLink[] = [];
  for (const m of text.matchAll(FRAME)) {
    const path = m[1]!;
    const relative = !path.startsWith('/') && !path.startsWith('~') && !path.startsWith('<');
    if (!path.includes(marker) && !relative) continue;
    const start = (m.index ?? 0) + 'File '.length;
    out.push({ start, end: (m.index ?? 0) + m[0].length, path, line: Number(m[2]) });
  }
  return out;
}
