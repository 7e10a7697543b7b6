// The real file system for the CLI and the editor (both run in Node). Every read is bounded (boundedRead.ts):
// a config may name any path, and the checks run on opening a file, before the workspace is trusted.
import { existsSync } from 'node:fs';
import { isTrackedInIndex } from './gitIndex';
import { readBoundedSync, REFERENCED_FILE_CAP } from './boundedRead';
import type { FileAccess } from './types';

/** Files on disk; with `roots`, a path that resolves outside all of them is refused. */
export function localFiles(roots?: readonly string[]): FileAccess {
  return {
    read: (p) => readBoundedSync(p, { cap: REFERENCED_FILE_CAP, ...(roots ? { roots } : {}) }),
    exists: (p) => existsSync(p),
    // Read from the index file: no git process (whose config the repository controls) runs on opening a file.
    isTrackedByGit: (p) => isTrackedInIndex(p),
  };
}

/** Anywhere on disk, still bounded: for tests and callers whose paths the user chose. */
export const nodeFiles: FileAccess = localFiles();
