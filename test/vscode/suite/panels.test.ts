// The three panels inside a real VS Code host: each opens from its command, its webview bundle loads under
// the real CSP and says "ready", and the log panel's page parses a whole local log (every chunk acked).
import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';

const EXTENSION_ID = 'remote-finetune.remote-finetune';
const STATE = 'remoteFinetune.panels._state';

interface PanelState {
  readonly viewType: string;
  readonly ready: boolean;
  readonly readyCount: number;
  readonly visible: boolean;
  readonly source: string | null;
  readonly sentBytes?: number;
  readonly inFlightBytes?: number;
  readonly logBytes?: number;
}

async function panel(viewType: string): Promise<PanelState | undefined> {
  const all = await vscode.commands.executeCommand<PanelState[]>(STATE);
  return all.find((p) => p.viewType === viewType);
}

async function waitFor(viewType: string, pred: (p: PanelState) => boolean, what: string, ms = 45_000): Promise<PanelState> {
  const t0 = Date.now();
  let last: PanelState | undefined;
  for (;;) {
    last = await panel(viewType);
    if (last && pred(last)) return last;
    if (Date.now() - t0 > ms) throw new Error(`${viewType}: ${what}; last state ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

suite('panels', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-panels-host-'));

  suiteSetup(async () => {
    await vscode.extensions.getExtension(EXTENSION_ID)!.activate();
  });

  suiteTeardown(async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  for (const [command, viewType] of [
    ['remoteFinetune.showRunLogs', 'remoteFinetune.logPanel'],
    ['remoteFinetune.showGpuDashboard', 'remoteFinetune.gpuPanel'],
    ['remoteFinetune.showTrainingMetrics', 'remoteFinetune.metricsPanel'],
  ] as const) {
    test(`${command} opens its panel, whose page loads and completes the ready handshake (no run: empty state)`, async () => {
      await vscode.commands.executeCommand(command);
      const s = await waitFor(viewType, (p) => p.ready, 'the webview never said ready');
      assert.equal(s.source, null, 'no active run: the empty state, no data');
      const tab = vscode.window.tabGroups.all
        .flatMap((g) => g.tabs)
        .find((t) => t.input instanceof vscode.TabInputWebview && t.input.viewType.endsWith(viewType));
      assert.ok(tab, 'a webview tab of that type is open');
    });
  }

  test('the log panel streams a local output.log through its page: every byte sent and acknowledged', async () => {
    const log = join(dir, 'output.log');
    let body = '';
    for (let i = 0; i < 20_000; i++) body += `\x1b[32mstep ${i}\x1b[0m loss=${(1 / (i + 1)).toFixed(5)}\n`;
    body += 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n';
    writeFileSync(log, body);
    await vscode.commands.executeCommand('remoteFinetune.showRunLogs', { path: log });
    const size = readFileSync(log).length;
    const s = await waitFor('remoteFinetune.logPanel', (p) => p.ready && p.sentBytes === size && p.inFlightBytes === 0, 'the page did not ack the whole log');
    assert.equal(s.source, `${dir.split('/').pop()}/output.log`);
  });

  test('the GPU and metrics panels attach to a local gpu.csv / events.jsonl', async () => {
    const gpu = join(dir, 'gpu.csv');
    writeFileSync(gpu, '1763737200.5, 0, NVIDIA A100-SXM4-40GB, 37, 12, 10240, 40960, 45, 60.32, 400.00, 1410\n');
    await vscode.commands.executeCommand('remoteFinetune.showGpuDashboard', { path: gpu });
    await waitFor('remoteFinetune.gpuPanel', (p) => p.ready && p.source === `${dir.split('/').pop()}/gpu.csv`, 'GPU panel did not attach');
    const events = join(dir, 'events.jsonl');
    writeFileSync(events, `${JSON.stringify({ v: 1, ts: 1763737200, type: 'metrics', step: 1, loss: 1.5 })}\n`);
    await vscode.commands.executeCommand('remoteFinetune.showTrainingMetrics', { path: events });
    await waitFor('remoteFinetune.metricsPanel', (p) => p.ready && p.source !== null, 'metrics panel did not attach');
  });

  test('a hidden panel shown again reloads its page, which says ready again and gets its state replayed', async () => {
    await vscode.commands.executeCommand('remoteFinetune.showRunLogs');
    const before = await waitFor('remoteFinetune.logPanel', (p) => p.ready && p.visible, 'log panel not ready');
    const doc = await vscode.workspace.openTextDocument({ content: 'cover the panel' });
    await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Active, preview: false });
    await waitFor('remoteFinetune.logPanel', (p) => !p.visible, 'log panel still visible');
    await vscode.commands.executeCommand('remoteFinetune.showRunLogs');
    await waitFor(
      'remoteFinetune.logPanel',
      (p) => p.visible && p.ready && p.readyCount > before.readyCount && p.inFlightBytes === 0 && (p.sentBytes ?? 0) > 0,
      'no second handshake after showing again',
    );
  });

  test('serializers are declared for every panel (restored after a reload)', () => {
    const pkg = vscode.extensions.getExtension(EXTENSION_ID)!.packageJSON as { activationEvents: string[] };
    for (const v of ['remoteFinetune.logPanel', 'remoteFinetune.gpuPanel', 'remoteFinetune.metricsPanel']) {
      assert.ok(pkg.activationEvents.includes(`onWebviewPanel:${v}`), v);
    }
  });
});
