// Whether a file is tracked by git, read from the repository's index file itself. Running `git` on a file the
// editor opened would execute what the repository configures (core.fsmonitor in .git/config, a git.exe in
// the folder on Windows) just because a file was opened, trusted workspace or not. The index format is
// git's documented one (Documentation/gitformat-index.txt): versions 2, 3 and 4, SHA-1 or SHA-256 object ids.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

/** The repository's git dir and its work tree root for `path`, walking up; undefined outside a repository. */
export function findGitDir(path: string): { gitDir: string; root: string } | undefined {
  let dir = resolve(dirname(path));
  for (;;) {
    const dotGit = join(dir, '.git');
    try {
      const st = statSync(dotGit);
      if (st.isDirectory()) return { gitDir: dotGit, root: dir };
      if (st.isFile()) {
        // A worktree or submodule: ".git" is a file saying "gitdir: <path>".
        const m = /^gitdir:\s*(.+?)\s*$/m.exec(readFileSync(dotGit, 'utf8'));
        if (m) return { gitDir: isAbsolute(m[1]!) ? m[1]! : resolve(dir, m[1]!), root: dir };
        return undefined;
      }
    } catch {
      /* not here: go up */
    }
    const up = dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

function hashLength(gitDir: string): number {
  // A worktree's config lives in the common dir; SHA-256 repositories say so in extensions.objectformat.
  const common = existsSync(join(gitDir, 'commondir')) ? resolve(gitDir, readFileSync(join(gitDir, 'commondir'), 'utf8').trim()) : gitDir;
  try {
    return /^\s*objectformat\s*=\s*sha256\s*$/im.test(readFileSync(join(common, 'config'), 'utf8')) ? 32 : 20;
  } catch {
    return 20;
  }
}

/** Every path in the index (repository-relative, '/'-separated), or undefined when the index cannot be read. */
export function readIndexPaths(gitDir: string): Set<string> | undefined {
  let buf: Buffer;
  try {
    buf = readFileSync(join(gitDir, 'index'));
  } catch {
    return undefined;
  }
  if (buf.length < 12 || buf.toString('latin1', 0, 4) !== 'DIRC') return undefined;
  const version = buf.readUInt32BE(4);
  if (version < 2 || version > 4) return undefined;
  const count = buf.readUInt32BE(8);
  const hashLen = hashLength(gitDir);
  const paths = new Set<string>();
  let off = 12;
  let previous = '';
  for (let n = 0; n < count; n++) {
    const start = off;
    off += 40 + hashLen; // ctime, mtime, dev, ino, mode, uid, gid, size, then the object id
    if (off + 2 > buf.length) return undefined;
    const flags = buf.readUInt16BE(off);
    off += 2;
    if (version >= 3 && (flags & 0x4000) !== 0) off += 2; // extended flags
    let path: string;
    if (version === 4) {
      // The path is the previous one minus N bytes (N a git varint), plus a NUL-terminated suffix; no padding.
      let strip = 0;
      let b = buf[off++]!;
      strip = b & 0x7f;
      while (b & 0x80) {
        b = buf[off++]!;
        strip = ((strip + 1) << 7) | (b & 0x7f);
      }
      const end = buf.indexOf(0, off);
      if (end < 0) return undefined;
      const prev = Buffer.from(previous, 'utf8');
      path = Buffer.concat([prev.subarray(0, Math.max(0, prev.length - strip)), buf.subarray(off, end)]).toString('utf8');
      off = end + 1;
    } else {
      const end = buf.indexOf(0, off);
      if (end < 0) return undefined;
      path = buf.toString('utf8', off, end);
      // Entries are NUL-padded to a multiple of 8 bytes (1 to 8 NULs).
      off = start + Math.ceil((end - start + 1) / 8) * 8;
    }
    paths.add(path); // every merge stage counts: a conflicted file is tracked too
    previous = path;
  }
  return paths;
}

/** true/false when the index says, undefined when there is no repository or index to ask. */
export function isTrackedInIndex(path: string): boolean | undefined {
  const repo = findGitDir(path);
  if (!repo) return undefined;
  const paths = readIndexPaths(repo.gitDir);
  if (!paths) return undefined;
  const rel = relative(repo.root, resolve(path)).split(sep).join('/');
  return paths.has(rel);
}
