// Last step of `npm test`: no suite may leave a `remote_finetune watchdog` behind. On a test host (this
// machine) a stray watchdog would keep polling for 30 idle minutes, and a mis-armed one would power the
// machine off. Leftovers under the temp dir (every test host's HOME lives there) are listed, stopped by
// pid, and fail the run; a watchdog elsewhere is only reported, never touched.
import { tmpdir } from 'node:os';
import { watchdogProcesses, stopWatchdogsUnder } from '../test/support/watchdogs';

async function main(): Promise<number> {
  const all = watchdogProcesses();
  const tmp = tmpdir();
  const ours = all.filter((w) => w.root.startsWith(`${tmp}/`));
  for (const w of all.filter((x) => !ours.includes(x))) console.log(`leftovers: watchdog pid ${w.pid} (root ${w.root || '?'}) is not a test's; left alone`);
  if (ours.length === 0) {
    console.log('leftovers: 0 passed, 0 failed (no remote_finetune watchdog left by the suites)');
    return 0;
  }
  for (const w of ours) console.log(`leftovers: watchdog pid ${w.pid} still running, root ${w.root}`);
  await stopWatchdogsUnder(tmp);
  console.log(`leftovers: 0 passed, 1 failed (${ours.length} watchdog(s) left by the suites, now stopped)`);
  return 1;
}

main().then((c) => process.exit(c), (e: unknown) => { console.error(e); process.exit(1); });
