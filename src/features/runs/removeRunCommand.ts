// "Remove from History": a finished run leaves the Runs view, its record and its local folder (mirrored logs,
// events, the run history files). Nothing on the host or in a cloud is touched, and a live run cannot be
// removed (it would keep billing while no longer shown). Only the folder this extension made for the run
// (storage/runs/<id>, from a validated id) is deleted, never a path read from the record.
import type * as vscode from 'vscode';
import { rmSync } from 'node:fs';
import { registerCommand } from '../commands';
import { showWarningMessage } from '../notify';
import type { FeatureDeps } from '../deps';
import type { RunServices } from './runServices';
import { isTerminal } from '../../core/runs/store/runRecord';
import { runOf } from './runActions';

export const REMOVE_RUN_COMMAND = 'remoteFinetune.removeRunFromHistory';

export function registerRemoveRun(deps: FeatureDeps, runs: RunServices): vscode.Disposable {
  return registerCommand(deps.log, REMOVE_RUN_COMMAND, async (arg: unknown) => {
    const r = await runOf(runs, arg, (x) => isTerminal(x.status), 'No finished run to remove: a running run is stopped first.');
    if (!r) return;
    if (!isTerminal(r.status)) {
      void showWarningMessage(`${r.name} is ${r.status}: stop it before removing it from the history.`);
      return;
    }
    const ok = await showWarningMessage(
      `Remove ${r.name} from the run history? Its record and the local copy of its logs, events and history files are deleted; nothing on ${r.host ?? 'the host'} is touched.`,
      { modal: true },
      'Remove',
    );
    if (ok !== 'Remove') return;
    const dir = runs.manager.localDirOf(r.id);
    runs.store.remove(r.id);
    rmSync(dir, { recursive: true, force: true });
    deps.log.info(`[${r.id}] removed from the run history (${dir} deleted)`);
  });
}
