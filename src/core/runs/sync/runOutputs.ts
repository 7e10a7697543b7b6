// Where a run's own outputs are: each run saves its adapter (or full model) under <outputs.dir>/<run id>/
// (python-runner trainer_plan.run_outputs_dir), so no later run of the workspace writes over it. The exact folder
// is the one the runner reported in its finished event; runs from before the per-run folders reported
// <outputs.dir>/adapter there, and keep working through it.
import { readEventsFile } from '../store/runFolder';

/** The run's adapter folder, relative to its workspace on the host (or absolute, as the runner reported it). */
export function runAdapterPath(outputsDir: string | undefined, runId: string, localEventsFile: string | undefined): string {
  let reported: string | undefined;
  for (const { event: e } of readEventsFile(localEventsFile).events) if (e.type === 'finished' && e.adapter_path) reported = e.adapter_path;
  return reported ?? `${(outputsDir ?? 'outputs').replace(/\/+$/, '')}/${runId}/adapter`;
}
