// "Fine-Tune: Try Adapter…": picks a run (or takes the Runs view's node) and opens its Try Adapter panel, one
// panel per run. On the host the run's own venv serves the prompts; "Local CPU" runs the same generate.py under
// the python named by remoteFinetune.tryAdapter.localPython (a user-only, machine-scoped setting: it decides
// what runs on this machine) on the adapter already downloaded.
import * as vscode from 'vscode';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { registerCommand } from '../commands';
import { setting } from '../settings';
import type { FeatureDeps } from '../deps';
import type { RunServices } from './runServices';
import { runOf } from './runActions';
import type { RunRecord } from '../../core/runs/store/runRecord';
import { localAdapterPath, openLocalGenerator } from '../../core/runs/outputs/tryAdapter';
import { TRY_ADAPTER_PANEL, TryAdapterPanelHost } from '../panels/tryAdapterPanel';
import type { TryAdapterTarget } from '../panels/tryAdapterPanel';
import { webviewOptions } from '../panels/panelHost';

export const TRY_ADAPTER_COMMAND = 'remoteFinetune.tryAdapter';

/** The adapter downloaded for a run: at the end of the run (artifactsDir) or by Download Artifacts. */
function downloadedAdapter(r: RunRecord): string | undefined {
  return localAdapterPath(r.artifactsDir) ?? localAdapterPath(r.workspaceDir ? join(r.workspaceDir, 'outputs', r.id, 'adapter') : undefined);
}

function localUnavailable(python: string | undefined, adapter: string | undefined): string | undefined {
  if (!python) return 'Local CPU needs remoteFinetune.tryAdapter.localPython: a python with torch, transformers and peft.';
  if (!adapter) return 'Local CPU needs the adapter on this machine: download it first (Fine-Tune: Download Run Artifacts…).';
  if (python.includes('/') && !existsSync(python)) return `remoteFinetune.tryAdapter.localPython (${python}) does not exist.`;
  return undefined;
}

export function registerTryAdapter(deps: FeatureDeps, runs: RunServices): vscode.Disposable {
  const open = new Map<string, TryAdapterPanelHost>();
  const runnerDir = join(deps.context.extensionPath, 'python-runner');
  return vscode.Disposable.from(
    registerCommand(deps.log, TRY_ADAPTER_COMMAND, async (arg: unknown) => {
      const r = await runOf(
        runs,
        arg,
        (x) => !!x.remoteDir || !!downloadedAdapter(x),
        'No run has an adapter to try: one appears when a run saves it, on its host or downloaded.',
      );
      if (!r) return;
      const existing = open.get(r.id);
      if (existing) {
        existing.panel.reveal();
        return;
      }
      const python = setting('tryAdapter.localPython') || undefined;
      const adapter = downloadedAdapter(r);
      const why = localUnavailable(python, adapter);
      const target: TryAdapterTarget = {
        runId: r.id,
        runName: r.name,
        host: r.host ?? 'the host',
        ...(why ? { localUnavailable: why } : {}),
        open: async (where) => {
          if (where === 'local') return openLocalGenerator({ python: python!, runnerDir, adapterPath: adapter! });
          return await runs.manager.openGenerator(r.id);
        },
      };
      const panel = vscode.window.createWebviewPanel(
        TRY_ADAPTER_PANEL.viewType,
        `Try ${r.name}`,
        vscode.ViewColumn.Active,
        // The answers live only in the page: hiding the tab must not throw them away (a small page, no charts).
        { ...webviewOptions(deps.context.extensionUri), retainContextWhenHidden: true },
      );
      const host = new TryAdapterPanelHost(panel, deps.context.extensionUri, deps.log, target);
      open.set(r.id, host);
      host.onDidDispose(() => open.delete(r.id));
    }),
    { dispose: () => [...open.values()].forEach((h) => h.dispose()) },
  );
}
