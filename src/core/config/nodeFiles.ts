// The real file system for the CLI and the editor (both run in Node).
import { existsSync, readFileSync, statSync } from 'node:fs';
import { isTrackedInIndex } from './gitIndex';
import type { FileAccess } from './types';

export const nodeFiles: FileAccess = {
  readText(p) {
    try {
      if (statSync(p).size > 4 * 1024 * 1024) return undefined;
      return readFileSync(p, 'utf8');
    } catch {
      return undefined;
    }
  },
  exists(p) {
    return existsSync(p);
  },
  isTrackedByGit(p) {
    // Read from the index file: no git process (whose config the repository controls) runs on opening a file.
    return isTrackedInIndex(p);
  },
};
