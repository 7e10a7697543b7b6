// The runner's on-host watchdog (`python -m remote_finetune watchdog --root R`) outlives the SSH session that
// started it by design. On a test host that is this machine, so every suite stops the ones it started, found
// by their --root under the test's own temp dir (never any other process).
import { leftoverProcesses, stopPids } from './leftovers';

/** SIGTERMs (then SIGKILLs) every watchdog whose root lies under `dir`; returns their pids. */
export async function stopWatchdogsUnder(dir: string): Promise<number[]> {
  const mine = leftoverProcesses(dir)
    .filter((p) => p.kind === 'watchdog')
    .map((p) => p.pid);
  await stopPids(mine);
  return mine;
}
