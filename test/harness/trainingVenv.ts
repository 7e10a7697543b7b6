// The Python a GPU image would ship, for the loopback host of the e2e suite and the demo: the cached venv with
// the CPU build of torch and the runner's newest lock (scripts/ensure-training-venv.sh builds it once, outside
// the clone). The host's sessions get it as RFT_PYTHON, which the runner's bootstrap tries first.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from './codeServer';

export const NEWEST_LOCK = 'hf5-torch2.6plus';

/** The venv's python, building the venv first when it is not cached (minutes, once). */
export function trainingPython(lock = NEWEST_LOCK): string {
  const out = execFileSync('bash', [join(REPO_ROOT, 'scripts/ensure-training-venv.sh'), lock], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return join(out.trim().split('\n').pop()!, 'bin/python');
}

/** A tiny Llama-shaped model with random weights and a locally trained tokenizer in `dir` (no hub access). */
export function buildTinyModel(python: string, dir: string): void {
  execFileSync(python, ['-m', 'tests_training.tiny', dir, 'llama'], { cwd: join(REPO_ROOT, 'python-runner'), stdio: ['ignore', 'pipe', 'inherit'] });
}
