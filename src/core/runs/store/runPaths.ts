// Where a run's things live on the host: the workspace folder a local folder syncs to, and the runner root.
import { createHash } from 'node:crypto';

export function hashText(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

/** The remote folder a workspace syncs to: stable per local folder, so re-runs send only changes. */
export function remoteWorkspaceName(localDir: string): string {
  const base =
    localDir
      .replace(/[\\/]+$/, '')
      .split(/[\\/]/)
      .pop() ?? 'workspace';
  return `${base.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 40) || 'workspace'}-${hashText(localDir).slice(0, 8)}`;
}

/** ~/.remote-finetune/runs/<id> → ~/.remote-finetune */
export function rootOf(remoteRunDir: string): string {
  return remoteRunDir.replace(/\/runs\/[^/]+\/?$/, '');
}
