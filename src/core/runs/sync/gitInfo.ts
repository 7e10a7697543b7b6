// Where the synced folder stood in git when a run started: the commit, whether the folder differed from it,
// the diff and the untracked files (what the host received beyond the commit). The folder is the workspace's,
// so its repository is untrusted: git would run a filter, textconv or fsmonitor command that any config scope
// names (.git/config, its include.path/includeIf files, config.worktree, global, system) while computing a
// status or a diff. So HEAD is read from the files, and git runs against a throwaway git dir whose only config
// is ours: it borrows the repository's objects and index through GIT_OBJECT_DIRECTORY/GIT_INDEX_FILE, never
// its config, and HOME/global/system config point at an empty file. .env files never appear in the diff.
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findGitDir } from '../../config/gitIndex';
import { commonGitDir, insideGitDir, readGitHead } from './gitHead';

export interface GitState {
  /** False when the folder is in no git work tree (or git is missing: `error` says so). */
  readonly repo: boolean;
  readonly commit?: string;
  readonly branch?: string;
  /** The folder differs from the commit: changed tracked files or untracked files. */
  readonly dirty?: boolean;
  /** Untracked, not ignored files under the folder (relative paths), the first MAX_UNTRACKED. */
  readonly untracked?: string[];
  readonly untrackedMore?: number;
  /** Why the diff or status was not recorded. */
  readonly note?: string;
  readonly error?: string;
}

export interface GitSnapshot {
  readonly state: GitState;
  /** `git diff HEAD` of the folder (paths relative to it), cut at MAX_DIFF_BYTES; absent when clean or unknown. */
  readonly diff?: string;
}

export const MAX_UNTRACKED = 200;
export const MAX_DIFF_BYTES = 4 * 1024 * 1024;

/** Pathspecs that keep .env files (any folder) out of the diff. */
export const ENV_EXCLUDES = [':(exclude,glob)**/.env', ':(exclude,glob)**/.env.*'];

interface GitResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** This process's environment without any GIT_* variable (they could name another repository or add config). */
function gitFreeEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (/^GIT_/i.test(k)) delete env[k];
  return env;
}

/** Where git runs: the throwaway git dir and the repository parts it borrows. */
interface Sandbox {
  readonly gitDir: string;
  readonly workTree: string;
  readonly objects: string;
  readonly index: string;
  readonly home: string;
}

function git(cwd: string, box: Sandbox, args: readonly string[], signal?: AbortSignal): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      ['--no-pager', '-c', 'core.quotepath=off', ...args],
      {
        cwd,
        signal,
        maxBuffer: MAX_DIFF_BYTES + 64 * 1024,
        // No prompt, no optional lock (a status must not take the index lock while the person works), plain output.
        // HOME/XDG point at the sandbox too, for a git older than GIT_CONFIG_GLOBAL (2.32).
        env: {
          ...gitFreeEnv(),
          GIT_DIR: box.gitDir,
          GIT_WORK_TREE: box.workTree,
          GIT_OBJECT_DIRECTORY: box.objects,
          GIT_INDEX_FILE: box.index,
          GIT_CONFIG_NOSYSTEM: '1',
          GIT_CONFIG_SYSTEM: join(box.home, 'empty'),
          GIT_CONFIG_GLOBAL: join(box.home, 'empty'),
          HOME: box.home,
          XDG_CONFIG_HOME: box.home,
          GIT_TERMINAL_PROMPT: '0',
          GIT_OPTIONAL_LOCKS: '0',
          LC_ALL: 'C',
          GIT_PAGER: 'cat',
        },
        encoding: 'utf8',
        windowsHide: true,
      },
      (err, stdout, stderr) => {
        if (err && (err as NodeJS.ErrnoException).code === 'ENOENT') return reject(new Error('git is not installed on this machine'));
        const code = (err as { code?: unknown } | null)?.code;
        // A diff past the buffer comes back cut, which is what the record keeps anyway.
        if (code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER') return resolve({ code: 0, stdout: String(stdout), stderr: String(stderr) });
        if (err && typeof code !== 'number') return reject(err);
        resolve({ code: typeof code === 'number' ? code : 0, stdout: String(stdout), stderr: String(stderr) });
      },
    );
  });
}

/**
 * A git dir of our own for the repository at `gitDir`: HEAD as read from the files, a config holding only the
 * object format, the repository's info/exclude (patterns, never commands). Objects and the index are the
 * repository's, read in place.
 */
function makeSandbox(gitDir: string, root: string, headText: string): Sandbox {
  const common = commonGitDir(gitDir);
  const home = mkdtempSync(join(tmpdir(), 'rft-gitbox-'));
  const box = join(home, 'git');
  mkdirSync(join(box, 'refs'), { recursive: true });
  mkdirSync(join(box, 'info'));
  writeFileSync(join(home, 'empty'), '');
  writeFileSync(join(box, 'HEAD'), `${headText}\n`);
  let sha256 = false;
  try {
    sha256 = /^\s*objectformat\s*=\s*sha256\s*$/im.test(readFileSync(join(common, 'config'), 'utf8'));
  } catch {
    /* no config: SHA-1 */
  }
  writeFileSync(
    join(box, 'config'),
    sha256 ? '[core]\n\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = sha256\n' : '[core]\n\trepositoryformatversion = 0\n',
  );
  try {
    copyFileSync(join(common, 'info', 'exclude'), join(box, 'info', 'exclude'));
  } catch {
    /* none */
  }
  return { gitDir: box, workTree: root, objects: join(common, 'objects'), index: join(gitDir, 'index'), home };
}

/** The git state of `dir` and its diff against HEAD, never throwing: a folder outside git is `{ repo: false }`. */
export async function gitSnapshot(dir: string, opts: { readonly excludes?: readonly string[]; readonly signal?: AbortSignal } = {}): Promise<GitSnapshot> {
  let home: string | undefined;
  try {
    // findGitDir walks up from a file's folder; a name inside `dir` makes it start at `dir` itself.
    const found = findGitDir(join(dir, '.rft-probe'));
    if (!found || insideGitDir(dir, found.gitDir)) return { state: { repo: false } };
    const head = readGitHead(found.gitDir);
    if (!head) return { state: { repo: true, error: 'HEAD names something this reader does not follow' } };
    const { commit } = head;
    const branch = head.branch ? head.branch.slice(0, 256) : undefined;
    const base = { repo: true, ...(commit ? { commit } : {}), ...(branch ? { branch } : {}) };
    const box = makeSandbox(found.gitDir, found.root, commit ?? `ref: ${head.ref ?? 'refs/heads/main'}`);
    home = box.home;
    const pathspec = ['--', '.', ...ENV_EXCLUDES, ...(opts.excludes ?? []).map((e) => `:(exclude,glob)${e.replace(/^\/+/, '')}`)];
    const others = await git(dir, box, ['ls-files', '--others', '--exclude-standard', '-z', ...pathspec], opts.signal);
    const untrackedAll = others.code === 0 ? others.stdout.split('\0').filter(Boolean) : [];
    const untracked = untrackedAll.slice(0, MAX_UNTRACKED);
    let diff = '';
    if (commit) {
      const d = await git(dir, box, ['diff', 'HEAD', '--relative', '--no-ext-diff', '--no-textconv', '--no-color', '--binary', ...pathspec], opts.signal);
      if (d.code !== 0) return { state: { ...base, note: `diff not recorded: ${d.stderr.trim().split('\n')[0]?.slice(0, 200) ?? 'git failed'}` } };
      diff = d.stdout;
    }
    const cut = Buffer.byteLength(diff) > MAX_DIFF_BYTES;
    const text = cut ? `${Buffer.from(diff).subarray(0, MAX_DIFF_BYTES).toString('utf8')}\n[diff cut at ${MAX_DIFF_BYTES} bytes]\n` : diff;
    return {
      state: {
        ...base,
        dirty: diff.length > 0 || untrackedAll.length > 0,
        untracked,
        ...(untrackedAll.length > untracked.length ? { untrackedMore: untrackedAll.length - untracked.length } : {}),
        ...(commit ? {} : { note: 'no commit yet' }),
      },
      ...(text ? { diff: text } : {}),
    };
  } catch (e) {
    return { state: { repo: false, error: e instanceof Error ? e.message : String(e) } };
  } finally {
    if (home) rmSync(home, { recursive: true, force: true });
  }
}
