// Host of "Fine-Tune: Try Adapter…": one panel per run; the work is TryAdapterSession's (tryAdapterSession.ts).
import type * as vscode from 'vscode';
import type { TryFromWebview, TryToWebview } from '../../protocol/tryAdapterMessages';
import { tryFromWebview } from './messages';
import { PanelHost } from './panelHost';
import type { PanelKind } from './panelHost';
import { TryAdapterSession } from './tryAdapterSession';
import type { TryAdapterTarget } from './tryAdapterSession';

export type { TryAdapterTarget } from './tryAdapterSession';

export const TRY_ADAPTER_PANEL: PanelKind = { viewType: 'remoteFinetune.tryAdapterPanel', bundle: 'tryAdapter', title: 'Try Adapter' };

export class TryAdapterPanelHost extends PanelHost<TryFromWebview, TryToWebview> {
  private readonly session: TryAdapterSession;

  constructor(panel: vscode.WebviewPanel, extensionUri: vscode.Uri, log: vscode.LogOutputChannel, target: TryAdapterTarget) {
    super(panel, TRY_ADAPTER_PANEL, extensionUri, tryFromWebview, log);
    this.session = new TryAdapterSession(
      target,
      (m) => this.post(m),
      (l) => log.warn(l),
    );
    panel.title = `Try ${target.runName}`;
  }

  protected override onReady(): void {
    this.session.replay();
  }

  protected override onMessage(m: TryFromWebview): Promise<void> {
    return this.session.handle(m);
  }

  override dispose(): void {
    this.session.dispose();
    super.dispose();
  }
}
