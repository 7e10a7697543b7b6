// Persists run records as one JSON file, written atomically (temp file then rename) so a crash in
// the middle of a write never loses the list of live runs.
import { mkdirSync, readFileSync, renameSync, writeFileSync, existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import { runRecordSchema, isTerminal } from './runRecord';
import type { RunRecord } from './runRecord';
import { transition } from './lifecycle';

const fileSchema = z.object({ version: z.literal(1), runs: z.array(z.unknown()) });

export interface RunStoreLoad {
  readonly records: RunRecord[];
  /** Entries that could not be read; kept out of the store but reported, never silently dropped. */
  readonly problems: string[];
}

export class RunStore {
  private records = new Map<string, RunRecord>();
  private readonly listeners = new Set<(r: RunRecord) => void>();
  readonly problems: string[] = [];

  constructor(private readonly file: string) {
    const loaded = RunStore.read(file);
    for (const r of loaded.records) this.records.set(r.id, r);
    this.problems.push(...loaded.problems);
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

  onDidChange(listener: (r: RunRecord) => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  add(record: RunRecord): void {
    const parsed = runRecordSchema.parse(record);
    if (this.records.has(parsed.id)) throw new Error(`run ${parsed.id} already exists`);
    this.records.set(parsed.id, parsed);
    this.flush(parsed);
  }

  /** Applies a patch; a status change must be a legal lifecycle transition. */
  update(id: string, patch: Partial<Omit<RunRecord, 'id' | 'createdAt'>>): RunRecord {
    const cur = this.records.get(id);
    if (!cur) throw new Error(`unknown run ${id}`);
    const status = patch.status ? transition(cur.status, patch.status) : cur.status;
    const now = new Date().toISOString();
    // The moment it ended, kept apart from updatedAt (teardown and downloads update the record afterwards).
    const ended = isTerminal(status) && !isTerminal(cur.status) && !patch.finishedAt ? { finishedAt: now } : {};
    const next = runRecordSchema.parse({ ...cur, ...patch, ...ended, status, updatedAt: now });
    this.records.set(id, next);
    this.flush(next);
    return next;
  }

  remove(id: string): void {
    const cur = this.records.get(id);
    if (!cur) return;
    this.records.delete(id);
    this.flush(cur);
  }

  private flush(changed: RunRecord): void {
    mkdirSync(dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify({ version: 1, runs: [...this.records.values()] }, null, 2), { mode: 0o600 });
    renameSync(tmp, this.file);
    for (const l of this.listeners) l(changed);
  }
}
