// The local side of sync: walk the workspace honouring .gitignore and .finetuneignore (at every level, with
// git's semantics via the `ignore` package), and hash each file once: a cache keyed by (size, mtime, inode,
// ctime) makes later scans cost a stat per file. ctime is in the key because a rewrite in place that restores
// the mtime (touch -r, utimes) cannot hide from it: any write or utimes call sets it to now.
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readFileSync, writeFileSync, mkdirSync, renameSync, readdirSync, lstatSync, readlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import ignore from 'ignore';
import type { Ignore } from 'ignore';

export interface LocalFile {
  /** Posix path relative to the workspace root. */
  readonly path: string;
  readonly size: number;
  readonly mtimeMs: number;
  readonly ino: number;
  readonly ctimeMs: number;
  readonly mode: number;
  /** sha256 hex, an identity token (see sync's IDENTITY_BYTES), a link token (linkToken), or '' when not known yet. */
  readonly hash: string;
  /** For a symbolic link: its target, as written (size is then the target's length in bytes, as lstat says). */
  readonly link?: string;
}

/**
 * A symlink's manifest token: 'l:' and 62 hex digits of the sha256 of its target, the same length as a file's
 * hash. Computed from the target text on every scan: it costs one readlink, no file read.
 */
export function linkToken(target: string): string {
  return `l:${createHash('sha256').update(target).digest('hex').slice(0, 62)}`;
}

export interface ScanOptions {
  /** JSON file holding the hash cache between scans (outside the workspace). */
  readonly cacheFile?: string;
  readonly signal?: AbortSignal;
  /** Extra ignore patterns (gitignore syntax) applied at the root. */
  readonly extraIgnores?: readonly string[];
  /**
   * false leaves `hash` empty for files the cache does not know (sync hashes those while it sends them, or
   * only when it must compare). Default true.
   */
  readonly hashMissing?: boolean;
  /** The cache as already read by the caller (saves reading it twice). */
  readonly cache?: HashCache;
}

export const IGNORE_FILES = ['.gitignore', '.finetuneignore'] as const;

/** Per path: [size, mtimeMs, ino, ctimeMs, hash]. Arrays, not objects: a 10,000-file cache parses and
 * serialises in half the time. */
type CacheEntry = readonly [size: number, mtimeMs: number, ino: number, ctimeMs: number, hash: string];
export type HashCache = Readonly<Record<string, CacheEntry>>;

/** The hash cache as last saved (empty when absent, unreadable or from an older format). */
export function readHashCache(file: string | undefined): HashCache {
  if (!file || !existsSync(file)) return {};
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as { v?: number; files?: Record<string, CacheEntry> };
    return parsed.v === 2 && parsed.files && typeof parsed.files === 'object' ? parsed.files : {};
  } catch {
    return {};
  }
}

function sameIdentity(c: CacheEntry | undefined, f: LocalFile): boolean {
  return c !== undefined && c[0] === f.size && c[1] === f.mtimeMs && c[2] === f.ino && c[3] === f.ctimeMs;
}

/** Stores the hashes of `files` (entries without a hash are left out); skips the write when nothing changed. */
export function saveHashCache(file: string | undefined, files: readonly LocalFile[], previous?: HashCache): void {
  if (!file) return;
  if (
    previous &&
    Object.keys(previous).length === files.length &&
    files.every((f) => {
      const p = previous[f.path];
      return sameIdentity(p, f) && p![4] === f.hash;
    })
  )
    return;
  const out: Record<string, CacheEntry> = {};
  for (const f of files) if (f.hash) out[f.path] = [f.size, f.mtimeMs, f.ino, f.ctimeMs, f.hash];
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, JSON.stringify({ v: 2, files: out }));
  renameSync(tmp, file);
}

export async function hashFile(path: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>) h.update(chunk);
  return h.digest('hex');
}

interface Rules {
  readonly base: string;
  readonly ig: Ignore;
}

function rulesFor(dirAbs: string, dirRel: string): Rules | undefined {
  let ig: Ignore | undefined;
  for (const name of IGNORE_FILES) {
    const p = join(dirAbs, name);
    if (existsSync(p)) {
      ig ??= ignore();
      ig.add(readFileSync(p, 'utf8'));
    }
  }
  return ig ? { base: dirRel, ig } : undefined;
}

function ignored(stack: readonly Rules[], rel: string, isDir: boolean): boolean {
  for (const r of stack) {
    const sub = r.base === '' ? rel : rel.slice(r.base.length + 1);
    if (r.ig.ignores(isDir ? `${sub}/` : sub)) return true;
  }
  return false;
}

/**
 * Lists the files that sync would send. A symbolic link is sent as a link, as `rsync -a` does: never followed
 * (a link to a dataset folder does not pull the dataset in), its target kept as written. Sockets, fifos and
 * devices are skipped; `.git` is never sent.
 */
export async function scanWorkspace(root: string, options: ScanOptions = {}): Promise<LocalFile[]> {
  const cache = options.cache ?? readHashCache(options.cacheFile);
  const files: LocalFile[] = [];
  const rootRules = rulesFor(root, '');
  const base: Rules[] = [];
  if (options.extraIgnores && options.extraIgnores.length > 0) base.push({ base: '', ig: ignore().add([...options.extraIgnores]) });
  if (rootRules) base.push(rootRules);
  const toHash: Array<{ idx: number; abs: string }> = [];
  let sinceYield = 0;
  // Synchronous readdir/lstat: for tens of thousands of small calls they cost a fraction of the promise
  // round trips through libuv's pool; the walk yields to the event loop every 2000 entries.
  const walk = async (dirAbs: string, dirRel: string, stack: readonly Rules[]): Promise<void> => {
    if (options.signal?.aborted) throw new Error('aborted');
    let entries;
    try {
      entries = readdirSync(dirAbs, { withFileTypes: true });
    } catch (err) {
      // Removed while we walked: nothing to send from it. Unreadable: say which, rather than send a partial tree.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw new Error(
        `Cannot read the folder ${dirRel || '.'} of the workspace (${(err as NodeJS.ErrnoException).code ?? String(err)}); add it to .finetuneignore to leave it out.`,
      );
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      if (++sinceYield >= 2000) {
        sinceYield = 0;
        await new Promise((r) => setImmediate(r));
      }
      const rel = dirRel === '' ? e.name : `${dirRel}/${e.name}`;
      // Plain concatenation: path.join's normalising costs more than the lstat on a 10,000-file walk.
      const abs = `${dirAbs}/${e.name}`;
      if (e.isDirectory()) {
        if (e.name === '.git') continue;
        if (stack.length > 0 && ignored(stack, rel, true)) continue;
        const own = rulesFor(abs, rel);
        await walk(abs, rel, own ? [...stack, own] : stack);
      } else if (e.isSymbolicLink()) {
        if (stack.length > 0 && ignored(stack, rel, false)) continue;
        const st = lstatSync(abs, { throwIfNoEntry: false });
        let target: string;
        try {
          target = readlinkSync(abs);
        } catch {
          continue;
        }
        if (!st) continue;
        files.push({
          path: rel,
          size: Buffer.byteLength(target),
          mtimeMs: st.mtimeMs,
          ino: st.ino,
          ctimeMs: st.ctimeMs,
          mode: 0o777,
          hash: linkToken(target),
          link: target,
        });
      } else if (e.isFile()) {
        if (stack.length > 0 && ignored(stack, rel, false)) continue;
        // Gone since readdir (an editor's temp file): not part of this scan.
        const st = lstatSync(abs, { throwIfNoEntry: false });
        if (!st) continue;
        const c = cache[rel];
        const hit = c !== undefined && c[0] === st.size && c[1] === st.mtimeMs && c[2] === st.ino && c[3] === st.ctimeMs;
        files.push({ path: rel, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, ctimeMs: st.ctimeMs, mode: st.mode & 0o777, hash: hit ? c[4] : '' });
        if (!hit) toHash.push({ idx: files.length - 1, abs });
      }
    }
  };
  await walk(root.length > 1 ? root.replace(/\/+$/, '') : root, '', base);
  if (options.hashMissing === false) return files;
  // Hash the misses a few at a time: reads overlap without opening thousands of files at once.
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < toHash.length) {
      const job = toHash[next++]!;
      const f = files[job.idx]!;
      files[job.idx] = { ...f, hash: await hashFile(job.abs) };
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  saveHashCache(options.cacheFile, files, cache);
  return files;
}

export interface LargeContentWarning {
  /** A top-level folder (or file) of the workspace. */
  readonly path: string;
  readonly bytes: number;
  readonly files: number;
  readonly reason: 'checkpoints' | 'data' | 'large';
}

const CHECKPOINT = /^(checkpoints?|ckpts?|outputs?|runs|wandb|mlruns|lightning_logs|model_cache|\.cache|models?)$|^checkpoint-\d+$/i;
const DATA = /^(data|datasets?|frames|audio|images|raw)$/i;
const WEIGHTS = /\.(safetensors|bin|pt|pth|ckpt|gguf|h5|npz|parquet|arrow|tar|zip)$/i;

/**
 * Folders worth a question before they are sent: checkpoint-like or data-like names over `folderBytes`
 * (default 50 MB), anything over `largeBytes` (default 500 MB), and single weight/data files over `folderBytes`.
 */
export function largeContentWarnings(files: readonly LocalFile[], limits: { folderBytes?: number; largeBytes?: number } = {}): LargeContentWarning[] {
  const folderBytes = limits.folderBytes ?? 50 * 1024 * 1024;
  const largeBytes = limits.largeBytes ?? 500 * 1024 * 1024;
  // Per top-level name: a file there, or a folder's totals. (Asking "is this a folder?" of the whole list for
  // each top-level file made a flat workspace of n files cost n² string compares.)
  const byTop = new Map<string, { bytes: number; files: number; folder: boolean }>();
  const out: LargeContentWarning[] = [];
  for (const f of files) {
    const slash = f.path.indexOf('/');
    const top = slash < 0 ? f.path : f.path.slice(0, slash);
    let t = byTop.get(top);
    if (!t) byTop.set(top, (t = { bytes: 0, files: 0, folder: false }));
    t.bytes += f.size;
    t.files++;
    if (slash >= 0) t.folder = true;
    else if (WEIGHTS.test(f.path) && f.size > folderBytes) out.push({ path: f.path, bytes: f.size, files: 1, reason: 'checkpoints' });
  }
  for (const [top, { folder, ...t }] of byTop) {
    if (!folder) {
      if (t.bytes > largeBytes && !out.some((w) => w.path === top)) out.push({ path: top, bytes: t.bytes, files: 1, reason: 'large' });
      continue;
    }
    if (CHECKPOINT.test(top) && t.bytes > folderBytes) out.push({ path: `${top}/`, ...t, reason: 'checkpoints' });
    else if (DATA.test(top) && t.bytes > folderBytes) out.push({ path: `${top}/`, ...t, reason: 'data' });
    else if (t.bytes > largeBytes) out.push({ path: `${top}/`, ...t, reason: 'large' });
  }
  return out.sort((a, b) => b.bytes - a.bytes);
}
