// The run manager's sync: core/ssh's incremental workspace sync, with the hash cache kept per local
// folder in the extension's storage and a refusal to send large data unconfirmed turned into an error.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { syncWorkspace } from '../../ssh/sync';
import type { SyncOptions } from '../../ssh/sync';
import type { SyncFn } from '../lifecycle/runManager';

export function sshSync(cacheDir: string, confirmLarge?: SyncOptions['confirmLarge']): SyncFn {
  return async (session, localDir, remoteDir, o) => {
    const cacheFile = join(cacheDir, `${createHash('sha256').update(localDir).digest('hex').slice(0, 16)}.json`);
    const r = await syncWorkspace(session, {
      localRoot: localDir,
      remoteDir,
      cacheFile,
      ...(confirmLarge && o.ignoreFiles !== false ? { confirmLarge } : {}),
      // The runner ships without its tests and caches.
      ...(o.ignoreFiles === false
        ? { extraIgnores: ['tests/', 'tests_training/', '__pycache__/', '*.pyc'] }
        : o.excludes?.length
          ? { extraIgnores: o.excludes }
          : {}),
      ...(o.signal ? { signal: o.signal } : {}),
      onProgress: (p) => {
        if (p.phase === 'upload') o.onProgress?.(`sending ${p.files ?? 0} files (${((p.bytes ?? 0) / 1e6).toFixed(1)} MB)`);
      },
    });
    if (r.cancelled) throw new Error('sync cancelled: large folders were not confirmed (add them to .finetuneignore or confirm)');
    if (r.excluded?.length) o.onProgress?.(`left out of the sync: ${r.excluded.join(', ')}`);
    return { filesSent: r.uploaded, bytesSent: r.uploadedBytes };
  };
}
