// Base for the three panel hosts: builds the locked-down HTML, holds messages until the webview says
// "ready", validates every inbound message with zod before dispatch, and reattaches after a reload.
import * as vscode from 'vscode';
import type { z } from 'zod';
import { makeNonce, panelHtml } from '../../core/webview/webviewHtml';
import { validate } from './messages';

export interface PanelKind {
  readonly viewType: string;
  /** Bundle name under dist/webview (webview/src/<bundle>/main.ts). */
  readonly bundle: 'log' | 'gpu' | 'metrics' | 'compare' | 'tryAdapter';
  readonly title: string;
}

export function webviewOptions(extensionUri: vscode.Uri): vscode.WebviewOptions & vscode.WebviewPanelOptions {
  return {
    enableScripts: true,
    // Only the built bundles and our css: nothing else on disk is reachable from the page.
    localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist'), vscode.Uri.joinPath(extensionUri, 'media')],
    // Hidden panels are torn down; the webview restores its view from getState and the host replays on "ready".
    retainContextWhenHidden: false,
    enableFindWidget: false,
  };
}

export abstract class PanelHost<In extends { readonly type: string }, Out> implements vscode.Disposable {
  private ready = false;
  /** How many times a page said "ready" (each load and each reload after hiding). */
  readyCount = 0;
  protected readonly disposables: vscode.Disposable[] = [];
  private disposed = false;
  readonly onDidDispose: vscode.Event<void>;
  private readonly disposeEmitter = new vscode.EventEmitter<void>();

  constructor(
    readonly panel: vscode.WebviewPanel,
    readonly kind: PanelKind,
    private readonly extensionUri: vscode.Uri,
    private readonly schema: z.ZodType<In>,
    protected readonly log: vscode.LogOutputChannel,
  ) {
    this.onDidDispose = this.disposeEmitter.event;
    panel.webview.options = webviewOptions(extensionUri);
    panel.iconPath = vscode.Uri.joinPath(extensionUri, 'media', 'activitybar.svg');
    this.render();
    this.disposables.push(
      panel.webview.onDidReceiveMessage((raw: unknown) => this.receive(raw)),
      panel.onDidDispose(() => this.dispose()),
      // A panel coming back from hidden reloads its page, which says "ready" again.
      panel.onDidChangeViewState(() => {
        if (!panel.visible) this.ready = false;
      }),
    );
  }

  private render(): void {
    const w = this.panel.webview;
    const dist = vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview');
    this.ready = false;
    w.html = panelHtml({
      cspSource: w.cspSource,
      nonce: makeNonce(),
      title: this.kind.title,
      scriptUri: w.asWebviewUri(vscode.Uri.joinPath(dist, `${this.kind.bundle}.js`)).toString(),
      styleUris: [
        w.asWebviewUri(vscode.Uri.joinPath(dist, `${this.kind.bundle}.css`)).toString(),
        w.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'media', 'panels.css')).toString(),
      ],
    });
  }

  private receive(raw: unknown): void {
    const v = validate(this.schema, raw);
    if (!v.ok) {
      this.log.warn(`${this.kind.title}: dropped a malformed webview message (${v.error})`);
      return;
    }
    if (v.message.type === 'ready') {
      this.ready = true;
      this.readyCount++;
      void Promise.resolve(this.onReady()).catch((e: unknown) => this.log.error(`${this.kind.title}: ${String(e)}`));
      return;
    }
    void Promise.resolve(this.onMessage(v.message)).catch((e: unknown) => this.log.error(`${this.kind.title}: ${String(e)}`));
  }

  /**
   * Posts only to a page that said "ready". Before that nothing is sent: onReady replays the whole state,
   * so a message dropped here would have been stale anyway.
   */
  post(message: Out): void {
    if (this.disposed || !this.ready) return;
    void this.panel.webview.postMessage(message);
  }

  get isReady(): boolean {
    return this.ready;
  }

  /** The page (re)loaded: send it everything it needs to show the current state. */
  protected abstract onReady(): void | Promise<void>;
  protected abstract onMessage(message: In): void | Promise<void>;

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.disposeEmitter.fire();
    this.disposeEmitter.dispose();
    for (const d of this.disposables.splice(0)) d.dispose();
    this.panel.dispose();
  }
}
