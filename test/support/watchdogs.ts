// The runner's on-host watchdog (`python -m remote_finetune watchdog --root R`) outlives the SSH session that
// started it by design. On a test host that is this machine, so every suite stops the ones it started, found
// by their --root under the test's own temp dir (never any other process).
import { readdirSync, readFileSync } from 'node:fs';

export interface WatchdogProcess {
  readonly pid: number;
  readonly root: string;
}

/** Live `remote_finetune watchdog` processes, with their --root (empty when none was given). */
export function watchdogProcesses(): WatchdogProcess[] {
  const found: WatchdogProcess[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let argv: string[];
    try { argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0'); } catch { continue; }
    const m = argv.indexOf('remote_finetune');
    if (m < 0 || argv[m + 1] !== 'watchdog') continue;
    const r = argv.indexOf('--root');
    found.push({ pid: Number(name), root: r >= 0 ? argv[r + 1] ?? '' : '' });
  }
  return found;
}

/** SIGTERMs (then SIGKILLs) every watchdog whose root lies under `dir`; returns their pids. */
export async function stopWatchdogsUnder(dir: string): Promise<number[]> {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  const mine = watchdogProcesses().filter((w) => w.root === dir || w.root.startsWith(prefix)).map((w) => w.pid);
  for (const pid of mine) { try { process.kill(pid, 'SIGTERM'); } catch { /* gone */ } }
  const deadline = Date.now() + 3000;
  while (Date.now() < deadline && mine.some(alive)) await new Promise((r) => setTimeout(r, 50));
  for (const pid of mine.filter(alive)) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
  return mine;
}

function alive(pid: number): boolean {
  try { process.kill(pid, 0); } catch { return false; }
  try { return !/^State:\s*Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8')); } catch { return false; }
}
