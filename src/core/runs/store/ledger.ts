// The ownership ledger: one JSON file listing every instance this extension launched, written BEFORE the
// launch call (state 'launching') and again right after it returns. A crash between the two leaves a
// 'launching' entry whose run id reconcile() finds again through the provider's tag/name listing.
// Writes are atomic (temp file, fsync, rename) and serialised across processes by a lock file.
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { hostname } from 'node:os';
import type { ProviderKind } from '../../providers/provider';

/**
 * 'launch-unknown': the launch call failed in a way that does not say whether an instance was made (aborted,
 * timed out, the answer lost); the entry stays "may be running" until cleanup has looked for it through the
 * provider's consistency window.
 */
export type LedgerState = 'launching' | 'launch-unknown' | 'active' | 'kept' | 'stopped' | 'interrupted' | 'terminated' | 'cleanup-failed';

export interface LedgerEntry {
  readonly runId: string;
  readonly provider: ProviderKind;
  readonly region: string;
  readonly zone?: string;
  readonly instanceType: string;
  readonly spot: boolean;
  readonly instanceId?: string;
  /** A multi-node run's instance count (all carry its run id): teardown also deletes what the provider's prepareCluster made. */
  readonly nodes?: number;
  readonly state: LedgerState;
  /** Teardown policy the run asked for; 'keep' entries must carry idleMinutes (the armed watchdog). */
  readonly policy?: 'terminate' | 'stop' | 'keep';
  readonly idleMinutes?: number;
  readonly pricePerHour?: number;
  readonly launchedAt?: number;
  readonly endedAt?: number;
  readonly finalUsd?: number;
  /** The process that drives the run; when it is gone the run is not live any more. */
  readonly holderPid: number;
  readonly holderHost: string;
  readonly updatedAt: number;
  readonly note?: string;
}

interface LedgerFile {
  readonly version: 1;
  readonly entries: LedgerEntry[];
}

const LOCK_STALE_MS = 10_000;

function isEntry(v: unknown): v is LedgerEntry {
  const e = v as Partial<LedgerEntry> | null;
  return !!e && typeof e.runId === 'string' && typeof e.provider === 'string' && typeof e.state === 'string' && typeof e.region === 'string';
}

export class Ledger {
  private chain: Promise<unknown> = Promise.resolve();

  constructor(readonly path: string) {}

  /** Entries as stored; a missing or unreadable file reads as empty (never throws on content). */
  async entries(): Promise<LedgerEntry[]> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch {
      return [];
    }
    try {
      const parsed = JSON.parse(text) as Partial<LedgerFile>;
      return Array.isArray(parsed.entries) ? parsed.entries.filter(isEntry) : [];
    } catch {
      return [];
    }
  }

  async get(runId: string): Promise<LedgerEntry | undefined> {
    return (await this.entries()).find((e) => e.runId === runId);
  }

  /** Creates or merges the entry of runId. */
  update(runId: string, patch: Partial<Omit<LedgerEntry, 'runId' | 'updatedAt'>>): Promise<LedgerEntry> {
    const task = this.chain.then(() =>
      this.withLock(async () => {
        const all = await this.entries();
        const i = all.findIndex((e) => e.runId === runId);
        const base = i >= 0 ? all[i] : undefined;
        const next = {
          holderPid: process.pid,
          holderHost: hostname(),
          ...base,
          ...patch,
          runId,
          updatedAt: Date.now(),
        } as LedgerEntry;
        if (!isEntry(next)) throw new Error(`ledger entry ${runId} needs provider, region and state`);
        if (i >= 0) all[i] = next;
        else all.push(next);
        await this.write({ version: 1, entries: all });
        return next;
      }),
    );
    this.chain = task.catch(() => undefined);
    return task;
  }

  private async write(file: LedgerFile): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true });
    const tmp = `${this.path}.${process.pid}.tmp`;
    const fh = await open(tmp, 'w', 0o600);
    try {
      await fh.writeFile(`${JSON.stringify(file, null, 1)}\n`);
      // fsync: the entry must survive the crash it exists for.
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, this.path);
  }

  private async withLock<T>(fn: () => Promise<T>): Promise<T> {
    const lock = `${this.path}.lock`;
    await mkdir(dirname(this.path), { recursive: true });
    for (let attempt = 0; ; attempt++) {
      try {
        const fh = await open(lock, 'wx');
        await fh.writeFile(String(process.pid));
        await fh.close();
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        // A holder that crashed leaves the lock behind; past the stale age it is taken over.
        const age = await stat(lock).then(
          (s) => Date.now() - s.mtimeMs,
          () => 0,
        );
        if (age > LOCK_STALE_MS) await rm(lock, { force: true });
        else await new Promise((r) => setTimeout(r, Math.min(200, 10 * (attempt + 1))));
      }
    }
    try {
      return await fn();
    } finally {
      await rm(lock, { force: true });
    }
  }
}

/** True when the process named by the entry still runs on this machine. Another machine's holder counts as live. */
export function holderAlive(entry: Pick<LedgerEntry, 'holderPid' | 'holderHost'>): boolean {
  if (entry.holderHost !== hostname()) return true;
  try {
    process.kill(entry.holderPid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * How long after a teardown a listing may still show, or newly show, the instance (EC2 documents minutes of
 * lag): the sweep keeps looking that long after the last terminate.
 */
export const RECENTLY_TERMINATED_MS = 15 * 60_000;

/**
 * Entries whose instance may still bill without anyone knowing: a launch of unknown outcome, a cleanup that
 * failed, or a teardown recent enough that a lagging listing could still turn something up. While any exists
 * the orphan sweep runs periodically, not only at activation.
 */
export function uncertainEntries(entries: readonly LedgerEntry[], now: number = Date.now()): LedgerEntry[] {
  return entries.filter(
    (e) =>
      e.state === 'launch-unknown' || e.state === 'cleanup-failed' || (e.state === 'terminated' && now - (e.endedAt ?? e.updatedAt) < RECENTLY_TERMINATED_MS),
  );
}

/** What the Runs view and the orphan report say of an entry whose instance may still bill; undefined otherwise. */
export function ledgerNote(entry: Pick<LedgerEntry, 'state'>): string | undefined {
  if (entry.state === 'launch-unknown') return 'launch outcome unknown: may be running';
  if (entry.state === 'cleanup-failed') return 'cleanup failed: may be running';
  return undefined;
}
