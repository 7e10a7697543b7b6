// What comes back when a run ends, from the spec's `outputs` (dir, download) and the runner's report of where
// the adapter (or full model) landed. Local paths are built here and nowhere else: each one stays under
// <workspace>/<outputs dir>/<run id>, whatever the spec or the host says.
import { isAbsolute, join, normalize, relative, sep } from 'node:path';

export type DownloadItem = 'adapter' | 'checkpoints' | 'logs';

export interface RunOutputs {
  /** outputs.dir as the spec gives it (on the host, relative to the synced workspace, or absolute). */
  readonly dir?: string;
  readonly download?: readonly DownloadItem[];
}

export interface ArtifactFetch {
  readonly item: DownloadItem;
  /** On the host: relative to the run's workspace there, or absolute. */
  readonly remote: string;
  readonly local: string;
}

const DEFAULT_DIR = 'outputs';

/** outputs.dir as a local folder inside the workspace: an absolute or escaping dir falls back to `outputs`. */
export function localOutputsDir(dir: string | undefined): string {
  if (!dir) return DEFAULT_DIR;
  const n = normalize(dir);
  if (isAbsolute(n) || n === '..' || n.startsWith(`..${sep}`) || n === '.') return DEFAULT_DIR;
  return n;
}

function inside(root: string, p: string): boolean {
  const r = relative(root, p);
  return r !== '' && !r.startsWith('..') && !isAbsolute(r);
}

/**
 * The folders to fetch. `adapterPath` is the finished event's adapter_path (the built-in trainer's
 * <dir>/adapter or <dir>/model, or the folder an own script saved to); without it there is no adapter.
 */
export function artifactPlan(outputs: RunOutputs | undefined, runId: string, workspaceDir: string, adapterPath: string | undefined): ArtifactFetch[] {
  const wanted = new Set<DownloadItem>(outputs?.download ?? ['adapter']);
  const root = join(workspaceDir, localOutputsDir(outputs?.dir));
  const base = join(root, runId);
  if (!inside(root, base) || base !== join(root, runId.replace(/[/\\]/g, '_'))) return [];
  const remoteDir = outputs?.dir ?? DEFAULT_DIR;
  const plan: ArtifactFetch[] = [];
  if (wanted.has('adapter') && adapterPath) {
    const leaf = /(^|\/)model\/?$/.test(adapterPath) ? 'model' : 'adapter';
    plan.push({ item: 'adapter', remote: adapterPath, local: join(base, leaf) });
  }
  if (wanted.has('checkpoints'))
    plan.push({ item: 'checkpoints', remote: `${remoteDir.replace(/\/+$/, '')}/checkpoints/${runId}`, local: join(base, 'checkpoints') });
  return plan.filter((f) => inside(base, f.local));
}
