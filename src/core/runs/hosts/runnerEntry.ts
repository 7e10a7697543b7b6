// Runner subcommands on a host (merge, publish, generate) start from python-runner/remote_finetune_entry.py by
// path, never `python -m remote_finetune`: `-m` puts the working folder first on sys.path (Python 3.10 always,
// 3.11+ whenever PYTHONSAFEPATH is unset or empty), and the run folder they work in can be written by the run's
// own training script, as /tmp by anyone. A script puts only its own folder, the runner's, on the path.
export const RUNNER_ENTRY = 'remote_finetune_entry.py';

/** The entry script inside a runner folder given as a POSIX path (the host's). */
export function runnerEntry(runnerDir: string): string {
  return `${runnerDir.replace(/\/+$/, '')}/${RUNNER_ENTRY}`;
}
