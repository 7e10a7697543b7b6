// Builds the run lifecycle's services once, for the features that start, list and watch runs. Cheap to
// construct: nothing connects until a run is started or reattached.
import type * as vscode from 'vscode';
import { showWarningMessage } from '../notify';
import { setting } from '../settings';
import { join } from 'node:path';
import { RunStore } from '../../core/runs/store/runStore';
import { RunManager } from '../../core/runs/lifecycle/runManager';
import { ownerIdFor } from '../../core/runs/store/ownerId';
import type { SyncFn } from '../../core/runs/lifecycle/runManager';
import type { Ledger } from '../../core/runs/store/ledger';
import type { RunRecord } from '../../core/runs/store/runRecord';
import type { ConnectOptions } from '../../core/ssh/session';
import type { Provider } from '../../core/providers/provider';
import { RunPanelsContext } from './runPanelsContext';
import { notifyEnv } from '../../core/runs/hosts/hostNotify';
import { TensorboardService } from '../../core/runs/outputs/tensorboard';
import { readEnvFileWithin } from '../../core/runs/lifecycle/runPlan';
import { runEnv } from '../../core/runs/lifecycle/runEnv';
import { isOriginApproved } from '../../core/runs/store/originApprovals';
import { loadLocalSpec, runSpecOf } from '../../core/runs/lifecycle/runStart';
import { gatherSecrets } from './runSecrets';

/** The host's end-of-run notification targets from the user's settings; a bad one is named, not sent. */
function notifyTargets(log: vscode.LogOutputChannel): Readonly<Record<string, string>> {
  const n = notifyEnv({
    webhookUrl: setting('notify.webhookUrl') ?? '',
    ntfyTopic: setting('notify.ntfyTopic') ?? '',
    ntfyServer: setting('notify.ntfyServer') ?? '',
  });
  for (const p of n.problems) {
    log.warn(`end-of-run notification: ${p}`);
    void showWarningMessage(`Remote Fine-Tune: ${p}; this run will not notify you when it ends.`);
  }
  return n.env;
}

export interface RunServices extends vscode.Disposable {
  readonly store: RunStore;
  readonly manager: RunManager;
  readonly ledger: Ledger;
  readonly panels: RunPanelsContext;
  readonly storageDir: string;
  /** TensorBoard on run hosts, forwarded over their SSH connections; stopped at deactivate. */
  readonly tensorboard: TensorboardService;
}

export interface RunServicesOptions {
  readonly connectOptions: ConnectOptions;
  readonly sync: SyncFn;
  readonly providerFor: (record: RunRecord) => Provider | undefined;
  /** The ownership ledger shared with the orphan sweep. */
  readonly ledger: Ledger;
  readonly log: vscode.LogOutputChannel;
}

export function createRunServices(context: vscode.ExtensionContext, opts: RunServicesOptions): RunServices {
  const storageDir = context.globalStorageUri.fsPath;
  const store = new RunStore(join(storageDir, 'runs.json'));
  for (const p of store.problems) opts.log.warn(`run store: ${p}`);
  const ledger = opts.ledger;
  const version = String((context.extension.packageJSON as { version?: unknown }).version ?? '0');
  const manager = new RunManager({
    store,
    storageDir,
    runnerDir: join(context.extensionPath, 'python-runner'),
    runnerVersion: version,
    connectOptions: opts.connectOptions,
    ledger,
    ownerId: ownerIdFor(storageDir),
    sync: opts.sync,
    providerFor: opts.providerFor,
    remotePython: setting('remotePython') || 'python3',
    log: (l) => opts.log.info(l),
    notifyEnv: () => notifyTargets(opts.log),
    // A spot relaunch after a reload reads the run's variables again, as Start Training did (nothing is stored);
    // with no one to ask, a stored token goes only to the hosts already approved.
    relaunchEnv: async (rec) => {
      let text: string | undefined;
      if (rec.envFileRel && rec.workspaceDir) {
        const r = readEnvFileWithin(join(rec.workspaceDir, rec.envFileRel), rec.workspaceDir);
        if ('error' in r) throw new Error(r.error);
        text = r.text;
      }
      const spec = runSpecOf(loadLocalSpec(rec.localDir ?? join(storageDir, 'runs', rec.id)));
      const approved = (secret: string, origin: string): boolean => isOriginApproved(context.globalState, secret, origin);
      return runEnv({ ...(text !== undefined ? { envFileText: text } : {}), stored: await gatherSecrets(context), ...(spec ? { spec } : {}), approved }).env;
    },
    relaunchAtActivation: () => setting('cloud.reconcileOnStartup') ?? true,
  });
  const panels = new RunPanelsContext(store, (id) => manager.localDirOf(id), manager);
  const tensorboard = new TensorboardService(
    (r) => manager.hostOf(r),
    (l) => opts.log.info(l),
  );
  // The TensorBoards opened for runs end with the runs' panels (and at deactivate).
  panels.onPanelsClosed(() => void tensorboard.dispose());
  return {
    store,
    manager,
    ledger,
    panels,
    storageDir,
    tensorboard,
    dispose: () => {
      panels.dispose();
      // Runs go on on their hosts; only our tails, connections and the TensorBoards we started end.
      void tensorboard.dispose().finally(() => manager.dispose());
    },
  };
}
