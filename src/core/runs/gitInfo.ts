// Where the synced folder stood in git when a run started: the commit, whether the folder differed from it,
// the diff and the untracked files (what the host received beyond the commit). Read with the git CLI on this
// machine. The folder is the workspace's, so its repository config is untrusted: git would run a filter,
// textconv or fsmonitor command the repository names while computing a status or a diff, and then only the
// commit is recorded. .env files never appear in the diff (their values are secrets).
import { execFile } from 'node:child_process';

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

/** Repository config keys whose value is a command git may run during status or diff. */
const COMMAND_KEYS = /^(filter\..+\.(clean|smudge|process)|diff\..+\.(textconv|command)|diff\.external|core\.fsmonitor)$/i;

interface GitResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** This process's environment without variables that would point git at another repository. */
function gitFreeEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_OBJECT_DIRECTORY', 'GIT_CEILING_DIRECTORIES', 'GIT_EXTERNAL_DIFF']) delete env[k];
  return env;
}

function git(cwd: string, args: readonly string[], signal?: AbortSignal): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      ['--no-pager', '-c', 'core.quotepath=off', ...args],
      {
        cwd,
        signal,
        maxBuffer: MAX_DIFF_BYTES + 64 * 1024,
        // No prompt, no optional lock (a status must not take the index lock while the person works), plain output.
        env: { ...gitFreeEnv(), GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0', LC_ALL: 'C', GIT_PAGER: 'cat' },
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

/** The git state of `dir` and its diff against HEAD, never throwing: a folder outside git is `{ repo: false }`. */
export async function gitSnapshot(dir: string, opts: { readonly excludes?: readonly string[]; readonly signal?: AbortSignal } = {}): Promise<GitSnapshot> {
  try {
    const inside = await git(dir, ['rev-parse', '--is-inside-work-tree'], opts.signal);
    if (inside.code !== 0 || inside.stdout.trim() !== 'true') return { state: { repo: false } };
    const head = await git(dir, ['rev-parse', '--verify', '-q', 'HEAD'], opts.signal);
    const commit = head.code === 0 && /^[0-9a-f]{40,64}$/.test(head.stdout.trim()) ? head.stdout.trim() : undefined;
    const br = await git(dir, ['symbolic-ref', '-q', '--short', 'HEAD'], opts.signal);
    const branch = br.code === 0 && br.stdout.trim() ? br.stdout.trim().slice(0, 256) : undefined;
    const base = { repo: true, ...(commit ? { commit } : {}), ...(branch ? { branch } : {}) };
    // Reading config runs nothing; the repository's own config (includes followed) decides whether status/diff may.
    const cfg = await git(dir, ['config', '--local', '--includes', '--name-only', '--get-regexp', '.'], opts.signal);
    const risky = cfg.stdout.split('\n').filter((k) => COMMAND_KEYS.test(k.trim()));
    if (risky.length > 0)
      return { state: { ...base, note: `diff not recorded: the repository's config names commands git would run (${risky.slice(0, 3).join(', ')})` } };
    const pathspec = ['--', '.', ...ENV_EXCLUDES, ...(opts.excludes ?? []).map((e) => `:(exclude,glob)${e.replace(/^\/+/, '')}`)];
    const others = await git(dir, ['ls-files', '--others', '--exclude-standard', '-z', ...pathspec], opts.signal);
    const untrackedAll = others.code === 0 ? others.stdout.split('\0').filter(Boolean) : [];
    const untracked = untrackedAll.slice(0, MAX_UNTRACKED);
    let diff = '';
    if (commit) {
      const d = await git(dir, ['diff', 'HEAD', '--relative', '--no-ext-diff', '--no-textconv', '--no-color', '--binary', ...pathspec], opts.signal);
      if (d.code === 0) diff = d.stdout;
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
  }
}
