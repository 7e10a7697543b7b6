// What a run leaves running on its host by design, outliving the SSH session that started it: the runner's
// watchdog (`python -m remote_finetune watchdog --root R`) and TensorBoard (`python -m tensorboard.main --logdir
// D`, "Open TensorBoard"). On a test host that is this machine, so every test sshd stops the ones under its
// own temp dir when it stops (never any other process).
import { leftoverProcesses, stopPids } from './leftovers';

/** SIGTERMs (then SIGKILLs) every watchdog and TensorBoard whose folder lies under `dir`; returns their pids. */
export async function stopHostDaemonsUnder(dir: string): Promise<number[]> {
  const mine = leftoverProcesses(dir)
    .filter((p) => p.kind === 'watchdog' || p.kind === 'tensorboard')
    .map((p) => p.pid);
  await stopPids(mine);
  return mine;
}
