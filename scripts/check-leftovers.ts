// Last step of `npm test`: no suite may leave a process behind: no `remote_finetune watchdog` (on a test host,
// which is this machine, a mis-armed one would power it off), no TensorBoard, sshd, code-server or Chromium. Each is
// recognised by its folder under the temp dir, where every test keeps its state; leftovers are listed,
// stopped by pid, and fail the run. Nothing outside the temp dir is touched.
import { tmpdir } from 'node:os';
import { leftoverProcesses, stopPids } from '../test/support/leftovers';

async function main(): Promise<number> {
  const ours = leftoverProcesses(tmpdir());
  if (ours.length === 0) {
    console.log('leftovers: 0 passed, 0 failed (no watchdog, TensorBoard, sshd, code-server or Chromium left by the suites)');
    return 0;
  }
  for (const p of ours) console.log(`leftovers: ${p.kind} pid ${p.pid} still running (${p.dir})`);
  await stopPids(ours.map((p) => p.pid));
  console.log(`leftovers: 0 passed, 1 failed (${ours.length} process(es) left by the suites, now stopped)`);
  return 1;
}

main().then(
  (c) => process.exit(c),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
