// Commands and serializers of the three panels. One panel per kind: running a command again reveals it
// (and, with a file argument, points it at that file).
import { registerCommand } from '../commands';
import * as vscode from 'vscode';
import { showInformationMessage } from '../notify';
import type { FeatureDeps } from '../deps';
import type { SourceDescriptor } from '../../protocol/common';
import type { PanelKind } from './panelHost';
import { webviewOptions } from './panelHost';
import type { PanelDescription, PanelServices, RunPanelHost } from './runPanel';
import { sourceStateKey } from './runPanel';
import { LOG_PANEL, LogPanelHost } from './logPanel';
import { GPU_PANEL, GpuPanelHost } from './gpuPanel';
import { METRICS_PANEL, MetricsPanelHost, WANDB_KEY_SECRET, wandbApiKey } from './metricsPanel';
import { registerCompareRuns } from './registerCompare';

export const PANEL_COMMANDS = {
  logs: 'remoteFinetune.showRunLogs',
  gpu: 'remoteFinetune.showGpuDashboard',
  metrics: 'remoteFinetune.showTrainingMetrics',
  setWandbKey: 'remoteFinetune.setWandbApiKey',
  /** Internal (not in the manifest): the open panels' state, read by the VS Code host tests. */
  state: 'remoteFinetune.panels._state',
} as const;

type AnyHost = RunPanelHost<{ readonly type: string }, unknown>;
type HostFactory = (panel: vscode.WebviewPanel, services: PanelServices) => AnyHost;

const KINDS: ReadonlyArray<{ kind: PanelKind; command: string; create: HostFactory }> = [
  { kind: LOG_PANEL, command: PANEL_COMMANDS.logs, create: (p, s) => new LogPanelHost(p, s) as unknown as AnyHost },
  { kind: GPU_PANEL, command: PANEL_COMMANDS.gpu, create: (p, s) => new GpuPanelHost(p, s) as unknown as AnyHost },
  { kind: METRICS_PANEL, command: PANEL_COMMANDS.metrics, create: (p, s) => new MetricsPanelHost(p, s) as unknown as AnyHost },
];

/** A command argument naming a local run file: a Uri (explorer context) or { path }. */
function fileArg(arg: unknown): string | undefined {
  if (arg instanceof vscode.Uri) return arg.fsPath;
  if (typeof arg === 'object' && arg !== null && typeof (arg as { path?: unknown }).path === 'string') return (arg as { path: string }).path;
  return undefined;
}

function isDescriptor(v: unknown): v is SourceDescriptor {
  if (typeof v !== 'object' || v === null) return false;
  const d = v as { kind?: unknown; path?: unknown };
  return d.kind === 'active' || (d.kind === 'local' && typeof d.path === 'string');
}

export function registerPanels(deps: FeatureDeps): vscode.Disposable {
  const { context, log } = deps;
  const services: PanelServices = {
    extensionUri: context.extensionUri,
    log,
    runContext: deps.runContext,
    workspaceState: context.workspaceState,
    secrets: context.secrets,
    globalState: context.globalState,
  };
  const open = new Map<string, AnyHost>();
  const disposables: vscode.Disposable[] = [];

  const adopt = (kind: PanelKind, create: HostFactory, panel: vscode.WebviewPanel): AnyHost => {
    const host = create(panel, services);
    open.set(kind.viewType, host);
    host.onDidDispose(() => {
      if (open.get(kind.viewType) === host) open.delete(kind.viewType);
      if (open.size === 0) services.runContext?.panelsClosed?.();
    });
    return host;
  };

  for (const { kind, command, create } of KINDS) {
    disposables.push(
      registerCommand(log, command, async (arg?: unknown) => {
        const path = fileArg(arg);
        let host = open.get(kind.viewType);
        if (host) host.panel.reveal();
        else {
          const panel = vscode.window.createWebviewPanel(kind.viewType, kind.title, vscode.ViewColumn.Active, webviewOptions(context.extensionUri));
          host = adopt(kind, create, panel);
        }
        const descriptor: SourceDescriptor = path ? { kind: 'local', path } : { kind: 'active' };
        if (path || !host.source) await host.bind(descriptor);
      }),
    );
    disposables.push(
      vscode.window.registerWebviewPanelSerializer(kind.viewType, {
        async deserializeWebviewPanel(panel: vscode.WebviewPanel): Promise<void> {
          // The page's own view state comes back through getState; which run it showed is ours to remember.
          const saved = context.workspaceState.get<unknown>(sourceStateKey(kind));
          open.get(kind.viewType)?.dispose();
          const host = adopt(kind, create, panel);
          await host.bind(isDescriptor(saved) ? saved : { kind: 'active' });
        },
      }),
    );
  }

  disposables.push(
    registerCommand(log, PANEL_COMMANDS.setWandbKey, async () => {
      await context.secrets.delete(WANDB_KEY_SECRET);
      const key = await wandbApiKey(context.secrets, true);
      if (key) void showInformationMessage("W&B API key saved in VS Code's secret storage.");
    }),
  );

  const compare = registerCompareRuns(log, context.extensionUri, deps.runContext);
  disposables.push(compare);

  disposables.push(
    registerCommand(log, PANEL_COMMANDS.state, (): PanelDescription[] => {
      const c = compare.host();
      const compared: PanelDescription[] = c
        ? [{ viewType: c.kind.viewType, ready: c.isReady, readyCount: c.readyCount, visible: c.panel.visible, source: null, runs: c.runIds.join(',') }]
        : [];
      return [...[...open.values()].map((h) => h.describe()), ...compared];
    }),
  );

  return vscode.Disposable.from(...disposables, {
    dispose: () => {
      for (const h of [...open.values()]) h.dispose();
    },
  });
}
