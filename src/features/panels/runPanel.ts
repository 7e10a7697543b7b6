// What the three panels share beyond the webview plumbing: a bound run (or the empty state), the
// subscriptions to its data, and the "open a local file" path for use without a remote run.
import type * as vscode from 'vscode';
import type { z } from 'zod';
import type { ActionMessage, SourceDescriptor } from '../../protocol/common';
import { PanelHost } from './panelHost';
import type { PanelKind } from './panelHost';
import type { RunContext, RunDataSource, Unsubscribe } from './runDataSource';
import { bindSource, emptyState, pickLocalFile, releaseSource, startRunCommand } from './sourceBinding';
import type { SourceBinding } from './sourceBinding';

export interface PanelServices {
  readonly extensionUri: vscode.Uri;
  readonly log: vscode.LogOutputChannel;
  readonly runContext: RunContext | undefined;
  readonly workspaceState: vscode.Memento;
  /** User-wide memory (approved W&B servers): never from the workspace. */
  readonly globalState: vscode.Memento;
  readonly secrets: vscode.SecretStorage;
}

export interface PanelDescription {
  readonly viewType: string;
  readonly ready: boolean;
  readonly readyCount: number;
  readonly visible: boolean;
  readonly source: string | null;
  readonly [detail: string]: number | string | boolean | null;
}

export function sourceStateKey(kind: PanelKind): string {
  return `remoteFinetune.panels.${kind.bundle}.source`;
}

export abstract class RunPanelHost<In extends { readonly type: string }, Out> extends PanelHost<In, Out> {
  protected binding: SourceBinding | undefined;
  private subs: Unsubscribe[] = [];

  constructor(
    panel: vscode.WebviewPanel,
    kind: PanelKind,
    schema: z.ZodType<In>,
    protected readonly services: PanelServices,
    private readonly what: string,
  ) {
    super(panel, kind, services.extensionUri, schema, services.log);
    this.disposables.push({
      dispose: () => {
        this.unsubscribe();
        releaseSource(this.binding);
      },
    });
    const ctx = services.runContext;
    if (ctx?.onDidChangeActiveRun) {
      const sub = ctx.onDidChangeActiveRun(() => {
        if (this.binding?.descriptor.kind === 'active') void this.bind({ kind: 'active' });
      });
      this.disposables.push({ dispose: () => sub.dispose() });
    }
  }

  get source(): RunDataSource | undefined {
    return this.binding?.source;
  }

  async bind(descriptor: SourceDescriptor): Promise<void> {
    const next = await bindSource(descriptor, this.services.runContext);
    this.unsubscribe();
    releaseSource(this.binding);
    this.binding = next;
    await this.services.workspaceState.update(sourceStateKey(this.kind), descriptor);
    this.panel.title = next.source ? `${this.kind.title}: ${next.source.label}` : this.kind.title;
    if (this.isReady) await this.onReady();
  }

  /** What the panel is doing, for the internal state command the VS Code host tests read. */
  describe(): PanelDescription {
    return {
      viewType: this.kind.viewType,
      ready: this.isReady,
      readyCount: this.readyCount,
      visible: this.panel.visible,
      source: this.source?.label ?? null,
      ...this.details(),
    };
  }

  protected details(): Record<string, number | string | null> {
    return {};
  }

  protected subscribe(...subs: Unsubscribe[]): void {
    this.subs.push(...subs);
  }

  private unsubscribe(): void {
    for (const s of this.subs.splice(0)) s.dispose();
  }

  protected override async onReady(): Promise<void> {
    this.unsubscribe();
    const src = this.binding?.source;
    if (!src) {
      this.post((await emptyState(this.what)) as Out);
      await this.attachEmpty();
      return;
    }
    await this.attach(src);
  }

  /** Subscribe to the source and replay its state to the (re)loaded page. */
  protected abstract attach(source: RunDataSource): void | Promise<void>;
  protected attachEmpty(): void | Promise<void> {
    return undefined;
  }

  protected async runAction(m: ActionMessage): Promise<void> {
    if (m.id === 'startRun') {
      await startRunCommand();
      return;
    }
    if (this.kind.bundle === 'compare') return; // not a run panel's bundle; narrows the type
    if (this.kind.bundle === 'tryAdapter') return; // not a run-file panel
    const path = await pickLocalFile(this.kind.bundle);
    if (path) await this.bind({ kind: 'local', path });
  }
}
