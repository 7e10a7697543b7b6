// The planning half of a sync (sync.ts): what the host holds (its manifest and tree, read in one round trip),
// compared with the local scan, decides which files travel, which stay and which are deleted, and the manifest
// the host will hold afterwards.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { hashFile } from './localManifest';
import type { LocalFile } from './localManifest';

export type ManifestEntry = readonly [size: number, mtime: number, hash: string];
export interface RemoteManifest {
  readonly v: 1;
  readonly files: Record<string, ManifestEntry>;
}

export interface RemoteState {
  readonly manifest: RemoteManifest;
  readonly tree: Map<string, { size: number; mtime: number }>;
}

function validEntry(e: unknown): e is ManifestEntry {
  return (
    Array.isArray(e) &&
    e.length === 3 &&
    Number.isSafeInteger(e[0]) &&
    Number.isSafeInteger(e[1]) &&
    typeof e[2] === 'string' &&
    /^(?:[0-9a-f]{64}|id:[0-9a-f]{61}|l:[0-9a-f]{62})$/.test(e[2])
  );
}

export function parseRemoteState(out: Buffer): RemoteState {
  const nul = out.indexOf(0);
  const manifestText = out.subarray(0, nul < 0 ? out.length : nul).toString('utf8');
  let manifest: RemoteManifest = { v: 1, files: {} };
  try {
    const m = JSON.parse(manifestText) as Partial<RemoteManifest>;
    if (m.v === 1 && m.files && typeof m.files === 'object') {
      // Anything malformed (a hand-edited or damaged manifest) is dropped: that file is simply sent again.
      const files: Record<string, ManifestEntry> = {};
      for (const [p, e] of Object.entries(m.files)) if (validEntry(e)) files[p] = e;
      manifest = { v: 1, files };
    }
  } catch {
    /* no manifest yet, or a damaged one: everything is re-sent */
  }
  const tree = new Map<string, { size: number; mtime: number }>();
  if (nul >= 0) {
    for (const rec of out
      .subarray(nul + 1)
      .toString('utf8')
      .split('\0')) {
      const a = rec.indexOf(' ');
      const b = rec.indexOf(' ', a + 1);
      if (a < 0 || b < 0) continue;
      tree.set(rec.slice(b + 1), { size: Number(rec.slice(0, a)), mtime: Math.floor(Number(rec.slice(a + 1, b))) });
    }
  }
  return { manifest, tree };
}

/**
 * Files at least this large are not hashed. Their manifest entry holds an identity token instead, kept in the
 * local cache beside the file's (size, mtime, inode, ctime): hashing a checkpoint-sized file keeps a core busy
 * for seconds, competing with the encryption of the very bytes being sent, and the identity check is already
 * stricter than rsync's size-and-mtime quick check. The price: from another machine, or with the local cache
 * gone, such a file is sent again rather than recognised.
 */
export const IDENTITY_BYTES = 64 * 1024 * 1024;

export function isIdentityToken(h: string): boolean {
  return h.startsWith('id:');
}

/** 'id:' and 61 random hex digits: the same length as a sha256, so manifest sizes stay predictable. */
function identityToken(): string {
  return `id:${randomBytes(31).toString('hex').slice(0, 61)}`;
}

/**
 * The manifest JSON for `entries`; an entry whose hash is '' gets 64 spaces, and `holes` says where (byte
 * offset) each of those starts, to be overwritten with the real hash later.
 */
export function manifestLayout(entries: ReadonlyArray<readonly [string, ManifestEntry]>): { bytes: Buffer; holes: Map<string, number> } {
  // Laid out as one string, and the holes found afterwards: `,"` then 64 spaces then `"]` occurs nowhere else,
  // since a quote inside a path is escaped. Counting each part's UTF-8 bytes as it was built cost a first sync
  // of 10,000 files 10-20 ms before its first byte.
  const HOLE = ' '.repeat(64);
  const parts: string[] = ['{"v":1,"files":{'];
  const hashless: string[] = [];
  entries.forEach(([path, [size, mtime, hash]], i) => {
    if (!hash) hashless.push(path);
    parts.push(`${i > 0 ? ',' : ''}${JSON.stringify(path)}:[${size},${mtime},"${hash || HOLE}"]`);
  });
  parts.push('}}');
  const bytes = Buffer.from(parts.join(''), 'utf8');
  const holes = new Map<string, number>();
  const mark = Buffer.from(`,"${HOLE}"]`, 'latin1');
  let from = 0;
  for (const path of hashless) {
    const at = bytes.indexOf(mark, from);
    if (at < 0) throw new Error('manifest layout: a hole is missing');
    holes.set(path, at + 2);
    from = at + mark.length;
  }
  return { bytes, holes };
}

export interface SyncPlan {
  /** Files to send (an identity token or no hash yet: hashed while they stream). */
  readonly send: LocalFile[];
  /** The manifest's entries after the sync; those of `send` are appended by the sender. */
  readonly next: Array<[path: string, entry: ManifestEntry]>;
  /** Files an earlier sync sent that are gone locally (and still on the host). */
  readonly deletes: string[];
  /** Every local file with what is known of its hash, for the local hash cache. */
  readonly finalFiles: LocalFile[];
  readonly unchanged: number;
  /** True when the host already holds exactly this tree. */
  readonly nothingToDo: boolean;
}

/**
 * Decides what travels. Same size as sent, and the remote copy untouched since: only then can the content
 * match, and hashes are compared. An identity token matches only the cache entry it came from, so hashing
 * could never make it match. A link's mtime is not compared: BusyBox tar does not restore it, and its token
 * already names the target (only a same-length retarget made on the host would go unrepaired).
 */
/** `keep`: paths left out of this sync on purpose (excluded large folders): what an earlier sync sent there stays. */
export async function planSync(
  localRoot: string,
  local: readonly LocalFile[],
  state: RemoteState,
  identityBytes: number,
  keep: (path: string) => boolean = () => false,
): Promise<SyncPlan> {
  const { manifest, tree } = state;
  const send: LocalFile[] = [];
  const next: Array<[path: string, entry: ManifestEntry]> = [];
  const localPaths = new Set<string>();
  const finalFiles: LocalFile[] = [];
  let unchanged = 0;
  for (const f0 of local) {
    let f = f0;
    localPaths.add(f.path);
    const m = manifest.files[f.path];
    const r = tree.get(f.path);
    const sameTime = r !== undefined && m !== undefined && (r.mtime === m[1] || (f.link !== undefined && m[2].startsWith('l:')));
    const candidate = m && r && m[0] === f.size && r.size === m[0] && sameTime;
    if (candidate && !f.hash && !isIdentityToken(m[2])) f = { ...f, hash: await hashFile(join(localRoot, f.path)) };
    if (candidate && m[2] === f.hash) {
      next.push([f.path, m]);
      unchanged++;
    } else {
      if (f.size >= identityBytes) f = { ...f, hash: identityToken() };
      send.push(f);
    }
    finalFiles.push(f);
  }
  for (const [p, m] of Object.entries(manifest.files)) if (!localPaths.has(p) && keep(p) && tree.has(p)) next.push([p, m]);
  const deletes = Object.keys(manifest.files).filter((p) => !localPaths.has(p) && !keep(p) && tree.has(p));
  const nothingToDo = send.length === 0 && deletes.length === 0 && Object.keys(manifest.files).length === next.length;
  return { send, next, deletes, finalFiles, unchanged, nothingToDo };
}
