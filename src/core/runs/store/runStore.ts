// Persists run records as one JSON file, written atomically (temp file then rename) so a crash in
// the middle of a write never loses the list of live runs. Every VS Code window has its own extension host and
// so its own store on the same file: before writing, what another window wrote since is merged in (its new
// runs, its newer records, its removals), so one window's write never drops another's runs.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import { runRecordSchema, isTerminal } from './runRecord';
import type { RunRecord } from './runRecord';
import { transition } from '../lifecycle/lifecycle';

const fileSchema = z.object({ version: z.literal(1), runs: z.array(z.unknown()) });

export interface RunStoreLoad {
  readonly records: RunRecord[];
  /** Entries that could not be read; kept out of the store but reported, never silently dropped. */
  readonly problems: string[];
}

/**
 * What changed in the store: which run, and for an update which of its fields, so a view refreshes only for what
 * it shows (the Hosts view re-reads ~/.ssh/config, the Runs view the ownership ledger).
 */
export interface RunChange {
  readonly kind: 'added' | 'updated' | 'removed';
  readonly run: RunRecord;
  /** The fields whose value changed (for an update); every field for an addition or a removal. */
  readonly fields: ReadonlySet<keyof RunRecord>;
}

/** Whether a change touches any of `fields` (an addition or a removal touches them all). */
export function touches(change: RunChange, ...fields: (keyof RunRecord)[]): boolean {
  return change.kind !== 'updated' || fields.some((f) => change.fields.has(f));
}

/** What identifies one version of the file: another process's rename gives a new inode, a rewrite a new mtime or size. */
type FileStamp = string;

function stampOf(file: string): FileStamp | undefined {
  try {
    const st = statSync(file);
    return `${st.ino}:${st.mtimeMs}:${st.size}`;
  } catch {
    return undefined;
  }
}

export class RunStore {
  private records = new Map<string, RunRecord>();
  private readonly listeners = new Set<(c: RunChange) => void>();
  readonly problems: string[] = [];
  /** The file as this store last read or wrote it: anything else was written by another window. */
  private seen: FileStamp | undefined;
  /** Ids the file held when this store last read or wrote it: one missing later was removed by another window. */
  private onDisk = new Set<string>();
  /** Ids removed here, which another window's copy must not bring back. */
  private readonly removedHere = new Set<string>();

  constructor(private readonly file: string) {
    const loaded = RunStore.read(file);
    for (const r of loaded.records) this.records.set(r.id, r);
    this.problems.push(...loaded.problems);
    // The next write drops what could not be read: the file as it was is kept beside it first.
    if (loaded.problems.length > 0) this.problems.push(`a copy of the file as it was is kept in ${keepCopy(file)}`);
    this.seen = stampOf(file);
    this.onDisk = new Set(this.records.keys());
  }

  static read(file: string): RunStoreLoad {
    if (!existsSync(file)) return { records: [], problems: [] };
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(file, 'utf8'));
    } catch (e) {
      return { records: [], problems: [`${file}: not readable JSON (${e instanceof Error ? e.message : String(e)})`] };
    }
    const f = fileSchema.safeParse(raw);
    if (!f.success) return { records: [], problems: [`${file}: not a run store`] };
    const records: RunRecord[] = [];
    const problems: string[] = [];
    f.data.runs.forEach((entry, i) => {
      const r = runRecordSchema.safeParse(entry);
      if (r.success) records.push(r.data);
      else problems.push(`${file}: run #${i} ignored: ${r.error.issues[0]?.message ?? 'invalid'}`);
    });
    return { records, problems };
  }

  all(): RunRecord[] {
    return [...this.records.values()].sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  }

  live(): RunRecord[] {
    return this.all().filter((r) => !isTerminal(r.status));
  }

  get(id: string): RunRecord | undefined {
    return this.records.get(id);
  }

  onDidChange(listener: (c: RunChange) => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  add(record: RunRecord): void {
    const parsed = runRecordSchema.parse(record);
    if (this.records.has(parsed.id)) throw new Error(`run ${parsed.id} already exists`);
    this.records.set(parsed.id, parsed);
    this.flush({ kind: 'added', run: parsed, fields: allFields(parsed) });
  }

  /**
   * Applies a patch; a status change must be a legal lifecycle transition. A patch that changes no value writes
   * nothing and tells no one (a live run's batches often repeat what the record holds).
   */
  update(id: string, patch: Partial<Omit<RunRecord, 'id' | 'createdAt'>>): RunRecord {
    // The patch applies to the newest copy of the record, whichever window wrote it: a window still following a
    // run that another finished must not write it back as running (its own status change then fails here).
    this.mergeOthers();
    const cur = this.records.get(id);
    if (!cur) throw new Error(`unknown run ${id}`);
    const status = patch.status ? transition(cur.status, patch.status) : cur.status;
    const now = new Date().toISOString();
    // The moment it ended, kept apart from updatedAt (teardown and downloads update the record afterwards).
    const ended = isTerminal(status) && !isTerminal(cur.status) && !patch.finishedAt ? { finishedAt: now } : {};
    const next = runRecordSchema.parse({ ...cur, ...patch, ...ended, status, updatedAt: now });
    const fields = changedFields(cur, next);
    if (fields.size === 0) return cur;
    this.records.set(id, next);
    this.flush({ kind: 'updated', run: next, fields });
    return next;
  }

  remove(id: string): void {
    this.mergeOthers();
    const cur = this.records.get(id);
    if (!cur) return;
    this.records.delete(id);
    this.removedHere.add(id);
    this.flush({ kind: 'removed', run: cur, fields: allFields(cur) });
  }

  /**
   * Takes in what another window wrote since this store last read or wrote the file: runs it added, records it
   * updated since (its copy of each is the newer), runs it removed. A file that cannot be read now is kept aside, never merged.
   */
  private mergeOthers(): void {
    const now = stampOf(this.file);
    if (now === undefined || now === this.seen) return;
    const disk = RunStore.read(this.file);
    if (disk.problems.length > 0) {
      this.problems.push(...disk.problems, `a copy of the file as it was is kept in ${keepCopy(this.file)}`);
      if (disk.records.length === 0) return;
    }
    const ids = new Set<string>();
    for (const r of disk.records) {
      ids.add(r.id);
      if (this.removedHere.has(r.id)) continue;
      // Every change here is written at once, so what this store holds is its last write: a file changed since
      // is newer for every record (timestamps cannot tell, two windows may write in the same millisecond).
      this.records.set(r.id, r);
    }
    // Removals only from a whole file: an entry that failed to parse is not a removal.
    if (disk.problems.length === 0) for (const id of this.onDisk) if (!ids.has(id)) this.records.delete(id);
  }

  private flush(change: RunChange): void {
    const changed = change.run;
    mkdirSync(dirname(this.file), { recursive: true });
    // Another window may have written between the change and here: its records are taken in, the change stands.
    this.mergeOthers();
    if (this.removedHere.has(changed.id)) this.records.delete(changed.id);
    else this.records.set(changed.id, changed);
    const tmp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify({ version: 1, runs: [...this.records.values()] }, null, 2), { mode: 0o600 });
    renameSync(tmp, this.file);
    this.seen = stampOf(this.file);
    this.onDisk = new Set(this.records.keys());
    for (const l of this.listeners) l(change);
  }
}

function allFields(r: RunRecord): ReadonlySet<keyof RunRecord> {
  return new Set(Object.keys(r) as (keyof RunRecord)[]);
}

/** The fields whose value differs, updatedAt aside (it moves with every write). */
function changedFields(cur: RunRecord, next: RunRecord): Set<keyof RunRecord> {
  const out = new Set<keyof RunRecord>();
  const keys = new Set([...Object.keys(cur), ...Object.keys(next)] as (keyof RunRecord)[]);
  for (const k of keys) if (k !== 'updatedAt' && JSON.stringify(cur[k]) !== JSON.stringify(next[k])) out.add(k);
  return out;
}

/**
 * Copies an unreadable store aside before it is overwritten; returns the copy's path. The name carries a hash of
 * the content, so the same file read again (each orphan sweep reads the store) is not copied again.
 */
function keepCopy(file: string): string {
  try {
    const content = readFileSync(file);
    const copy = `${file}.bad-${createHash('sha256').update(content).digest('hex').slice(0, 12)}`;
    if (!existsSync(copy)) writeFileSync(copy, content, { mode: 0o600 });
    return copy;
  } catch {
    return `(nowhere: ${file} could not be copied)`;
  }
}
