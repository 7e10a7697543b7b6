// A check that kills the process cannot report itself: VS Code restarts the extension host, the file is still
// open, it is checked again on activation, and the host dies again (three times and VS Code gives up on the
// extension). So a check in progress is written down, synchronously, before it starts and crossed out after;
// a mark found at start-up names the file whose check never finished, and that file is not checked again on
// its own until the user asks (by saving it). Synchronous writes because an asynchronous one may never leave
// the process before it dies.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export class CheckGuard {
  private readonly suspects = new Set<string>();

  /** `markFile`: where the mark lives (the extension's global storage); undefined keeps no mark (tests, CLI). */
  constructor(private readonly markFile: string | undefined) {
    if (!markFile) return;
    try {
      // A mark is one document key (a URI); anything longer is not ours.
      const key = readFileSync(markFile, 'utf8');
      if (key.length > 0 && key.length < 4096) this.suspects.add(key);
    } catch {
      // No mark: the last session ended between checks.
    }
    rmSync(markFile, { force: true });
  }

  /** Whether the last check of this document never finished (it stopped the process). */
  isSuspect(key: string): boolean {
    return this.suspects.has(key);
  }

  /** The user asked for a check (saved, or ran Validate): it runs again, still guarded. */
  clear(key: string): void {
    this.suspects.delete(key);
  }

  /** Runs `check` with the mark written around it; an exception is a finished check (the caller reports it). */
  run<T>(key: string, check: () => T): T {
    if (!this.markFile) return check();
    try {
      mkdirSync(dirname(this.markFile), { recursive: true });
      writeFileSync(this.markFile, key);
    } catch {
      // No storage: check without the guard rather than not at all.
    }
    try {
      return check();
    } finally {
      rmSync(this.markFile, { force: true });
    }
  }
}
