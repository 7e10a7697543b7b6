// The commit and branch HEAD names, read from the repository's files (HEAD, loose refs, packed-refs) rather
// than asked of git: the workspace's repository is untrusted and git would read its config to answer. A
// worktree keeps HEAD in its own git dir and refs in the common dir ("commondir").
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';

export interface GitHead {
  /** The commit HEAD resolves to; absent on an unborn branch (no commit yet). */
  readonly commit?: string;
  /** The branch HEAD points at; absent when HEAD is detached. */
  readonly branch?: string;
  /** The ref HEAD names (refs/heads/x), kept so an unborn branch stays unborn for the git run. */
  readonly ref?: string;
}

const OID = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

/** The repository's common git dir (where refs, objects and config live) for a git dir that may be a worktree's. */
export function commonGitDir(gitDir: string): string {
  const f = join(gitDir, 'commondir');
  return existsSync(f) ? resolve(gitDir, readFileSync(f, 'utf8').trim()) : gitDir;
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function looseRef(dirs: readonly string[], ref: string): string | undefined {
  // A ref name from the repository must not walk out of the git dir ("ref: ../../etc").
  if (!/^refs\/[^\0]+$/.test(ref) || ref.split('/').some((p) => p === '..' || p === '.' || p === '')) return undefined;
  for (const d of dirs) {
    const text = readText(join(d, ...ref.split('/')));
    if (text !== undefined) return text.trim();
  }
  return undefined;
}

function packedRef(common: string, ref: string): string | undefined {
  for (const line of (readText(join(common, 'packed-refs')) ?? '').split('\n')) {
    const m = /^([0-9a-f]{40,64}) (.+)$/.exec(line.trimEnd());
    if (m && m[2] === ref) return m[1];
  }
  return undefined;
}

/** HEAD's commit and branch; undefined when HEAD cannot be read or names something this reader does not follow. */
export function readGitHead(gitDir: string): GitHead | undefined {
  const common = commonGitDir(gitDir);
  let text = readText(join(gitDir, 'HEAD'))?.trim();
  let ref: string | undefined;
  // Symbolic refs may chain (rarely); a short bound keeps a loop in a hostile repository finite.
  for (let hop = 0; hop < 5 && text !== undefined; hop++) {
    if (OID.test(text)) return { commit: text, ...(ref?.startsWith('refs/heads/') ? { branch: ref.slice('refs/heads/'.length), ref } : ref ? { ref } : {}) };
    const m = /^ref:\s*(\S+)$/.exec(text);
    if (!m) return undefined;
    ref ??= m[1]!;
    // Per-worktree refs (HEAD's own) live in the worktree's git dir, shared ones in the common dir.
    text =
      looseRef(
        [gitDir, common].filter((d, i, a) => a.indexOf(d) === i),
        m[1]!,
      ) ?? packedRef(common, m[1]!);
  }
  if (ref && text === undefined) return { ...(ref.startsWith('refs/heads/') ? { branch: ref.slice('refs/heads/'.length) } : {}), ref };
  return undefined;
}

/** Whether `dir` lies inside `gitDir` (a folder in .git is no work tree). */
export function insideGitDir(dir: string, gitDir: string): boolean {
  const g = resolve(gitDir);
  const d = resolve(dir);
  return d === g || d.startsWith(g + sep);
}
