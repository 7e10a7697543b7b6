// A file made once and never replaced, when several VS Code windows (one extension host each) may make it at
// the same moment: the content is written whole to a temporary name, then hard-linked to its name, which fails
// if it exists. Exactly one window's content wins and nobody ever reads half a file; the others read the winner's.
import { linkSync, mkdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname } from 'node:path';

/** Creates `path` with `content` unless it exists; true when this call made it. */
export function createOnce(path: string, content: string, mode: number): boolean {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, content, { mode, flag: 'wx' });
  try {
    linkSync(tmp, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    unlinkSync(tmp);
  }
}
