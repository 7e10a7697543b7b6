// Host of "Fine-Tune: Show Run Logs".
import * as vscode from 'vscode';
import { showInformationMessage } from '../notify';
import { createReadStream } from 'node:fs';
import type { LogFromWebview, LogToWebview } from '../../protocol/log';
import { logSignatures } from './logSignatures';
import { logFromWebview } from './messages';
import type { PanelKind } from './panelHost';
import { RunPanelHost } from './runPanel';
import type { PanelServices } from './runPanel';
import type { RunDataSource } from './runDataSource';
import { LogStreamer } from './logStreamer';
import { hostStateLine } from './linkedHostState';
import { remoteWorkspaceName } from '../../core/runs/store/runPaths';
import { openAtLine } from '../runs/failureSource';
import { tracebackSource } from '../../core/runs/view/failureReason';

export const LOG_PANEL: PanelKind = { viewType: 'remoteFinetune.logPanel', bundle: 'log', title: 'Run Logs' };

/** Newlines in the first `bytes` bytes of a file: turns the panel's line numbers into the file's. */
async function linesBefore(path: string, bytes: number): Promise<number> {
  if (bytes <= 0) return 0;
  let n = 0;
  const stream = createReadStream(path, { start: 0, end: bytes - 1 });
  for await (const chunk of stream) {
    const b = chunk as Buffer;
    let i = -1;
    while ((i = b.indexOf(0x0a, i + 1)) !== -1) n++;
  }
  return n;
}

export class LogPanelHost extends RunPanelHost<LogFromWebview, LogToWebview> {
  private streamer: LogStreamer | undefined;
  private startOffset = 0;
  private workspaceDir: string | undefined;

  constructor(panel: vscode.WebviewPanel, services: PanelServices) {
    super(panel, LOG_PANEL, logFromWebview, services, 'log file');
    this.disposables.push({ dispose: () => this.streamer?.dispose() });
  }

  protected override async attach(source: RunDataSource): Promise<void> {
    this.streamer?.dispose();
    // Traceback frames in the run's synced workspace become links to the local files (a run of this extension only).
    // A run of this extension is the source `run:<id>` (runPanelsContext.ts); a local file has no workspace.
    const runId = source.id.startsWith('run:') ? source.id.slice('run:'.length) : undefined;
    const workspaceDir = runId ? this.services.runContext?.runHistories?.([runId])[0]?.record.workspaceDir : undefined;
    this.workspaceDir = workspaceDir;
    const streamer = new LogStreamer(
      source,
      (m) => {
        if (m.type === 'init') this.startOffset = m.startOffset;
        this.post(m.type === 'init' && workspaceDir ? { ...m, workspaceFolder: remoteWorkspaceName(workspaceDir) } : m);
      },
      source.label,
      logSignatures(),
    );
    this.streamer = streamer;
    await streamer.start();
    // After init, since the page drops a status line that comes before it. The status line says when the
    // log is not live: host unreachable (the tail resumes by offset) or the run is over.
    this.subscribe(
      source.onHostState((state) => {
        const text = hostStateLine(state);
        if (text !== undefined) this.post({ type: 'status', state: text ? 'unreachable' : 'live', text });
      }),
      source.onEvents((events) => {
        const fin = events.find((e) => e.type === 'finished');
        if (fin?.type === 'finished')
          this.post({
            type: 'status',
            state: 'ended',
            outcome: fin.status,
            text: `Run ${fin.status}${fin.exit_code !== null ? ` (exit code ${fin.exit_code})` : ''}.`,
          });
      }),
    );
  }

  protected override details(): Record<string, number | string | null> {
    return { sentBytes: this.streamer?.stats.sentBytes ?? 0, inFlightBytes: this.streamer?.inFlightNow ?? 0, logBytes: this.source?.logSize() ?? 0 };
  }

  protected override attachEmpty(): void {
    this.streamer?.dispose();
    this.workspaceDir = undefined;
    this.streamer = undefined;
  }

  protected override async onMessage(m: LogFromWebview): Promise<void> {
    switch (m.type) {
      case 'ack':
        this.streamer?.ack(m.seq);
        return;
      case 'copy':
        await vscode.env.clipboard.writeText(m.text);
        return;
      case 'openFullLog':
        await this.openFullLog(m.line);
        return;
      case 'openSource': {
        const path = tracebackSource(this.workspaceDir, m.path);
        if (path) await openAtLine(path, m.line);
        else void showInformationMessage(`${m.path} is not a file of this run's workspace on this machine.`);
        return;
      }
      case 'action':
        await this.runAction(m);
        return;
      case 'ready':
        return;
    }
  }

  private async openFullLog(line: number | undefined): Promise<void> {
    const path = this.source?.fullLogPath();
    if (!path) {
      void showInformationMessage('The full log is not on this machine yet; it is fetched when the run finishes.');
      return;
    }
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(path));
    const options: vscode.TextDocumentShowOptions = { preview: false };
    if (line !== undefined) {
      const abs = (await linesBefore(path, this.startOffset)) + line - 1;
      const pos = new vscode.Position(Math.min(abs, doc.lineCount - 1), 0);
      options.selection = new vscode.Range(pos, pos);
    }
    await vscode.window.showTextDocument(doc, options);
  }
}
