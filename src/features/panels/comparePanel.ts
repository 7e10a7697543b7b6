// Host of "Fine-Tune: Compare Runs": the runs picked (several in the Runs view, or from a multi-select quick
// pick) side by side. The comparison is built in core (runCompare.ts) from the records and each run's history
// files, and sent whole; it is sent again when one of the runs changes (a live run ends, its config arrives).
// The page may ask to open a run's W&B page (only an https URL the record holds) or one of its history files.
import * as vscode from 'vscode';
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { buildComparison, WANDB_APP_ORIGIN, wandbPageUrl } from '../../core/runs/view/runCompare';
import { resolveWandbBaseUrl } from '../../core/telemetry/wandb';
import { setting } from '../settings';
import type { CompareFromWebview, CompareToWebview } from '../../protocol/compare';
import { PanelHost } from './panelHost';
import type { PanelKind } from './panelHost';
import type { RunContext, Unsubscribe } from './runDataSource';
import { compareFromWebview } from './messages';

export const COMPARE_PANEL: PanelKind = { viewType: 'remoteFinetune.comparePanel', bundle: 'compare', title: 'Compare Runs' };
/** More columns than this no longer fit side by side. */
export const MAX_COMPARED = 8;

/** W&B's site and, where the person set one, their W&B Server (remoteFinetune.wandb.baseUrl or WANDB_BASE_URL). */
function wandbOrigins(): string[] {
  try {
    return [WANDB_APP_ORIGIN, new URL(resolveWandbBaseUrl(setting('wandb.baseUrl'))).origin].filter((o) => o.startsWith('https://'));
  } catch {
    return [WANDB_APP_ORIGIN];
  }
}

export class ComparePanelHost extends PanelHost<CompareFromWebview, CompareToWebview> {
  private ids: string[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    panel: vscode.WebviewPanel,
    extensionUri: vscode.Uri,
    log: vscode.LogOutputChannel,
    private readonly runs: RunContext,
  ) {
    super(panel, COMPARE_PANEL, extensionUri, compareFromWebview, log);
    const sub: Unsubscribe | undefined = runs.onDidChangeRuns?.(() => this.refreshSoon());
    this.disposables.push({
      dispose: () => {
        sub?.dispose();
        if (this.timer) clearTimeout(this.timer);
      },
    });
  }

  get runIds(): readonly string[] {
    return this.ids;
  }

  show(ids: readonly string[]): void {
    this.ids = [...new Set(ids)].slice(0, MAX_COMPARED);
    this.panel.title = `Compare Runs (${this.ids.length})`;
    this.send();
  }

  protected onReady(): void {
    this.send();
  }

  protected async onMessage(m: CompareFromWebview): Promise<void> {
    if (m.type === 'ready' || !this.ids.includes(m.run)) return;
    const input = this.runs.runHistories?.([m.run])[0];
    if (!input) return;
    if (m.type === 'openWandb') {
      const url = wandbPageUrl(input.record.wandbUrl, wandbOrigins());
      if (url) await vscode.env.openExternal(vscode.Uri.parse(url, true));
      return;
    }
    // The name is one of the history files (checked by the message schema); the folder is the record's.
    const path = join(input.localDir, m.file);
    if (!existsSync(path)) return;
    await vscode.window.showTextDocument(vscode.Uri.file(path), { preview: true, viewColumn: vscode.ViewColumn.Beside });
  }

  /** Record updates come in bursts while a run is live (a step, a loss, the cost): one comparison per second at most. */
  private refreshSoon(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.send();
    }, 1000);
  }

  private send(): void {
    if (!this.isReady) return;
    const inputs = this.runs.runHistories?.(this.ids) ?? [];
    try {
      this.post({ type: 'compare', model: buildComparison(inputs, Date.now(), wandbOrigins()) });
    } catch (e) {
      this.log.error(`Compare Runs: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
}
