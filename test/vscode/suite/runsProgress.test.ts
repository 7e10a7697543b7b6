// Issue 39.3 inside a real VS Code host: a real run on a loopback sshd, its training loop reporting through the
// runner's callback core (the Trainer's max_steps included), found with "Find Runs on Host" and followed. While it
// trains the Runs row, the status bar and the metrics panel say "step N of 60, ≈ T left"; ended, the row keeps its
// last step and promises no time. Read back through the extension's state commands, as runs.test.ts does.
import * as assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { clientFor } from '../../support/sshClient';
import type { ClientSetup } from '../../support/sshClient';
import { SshHost } from '../../../src/core/ssh/reconnect';
import { startDetached } from '../../../src/core/ssh/detachedJob';
import { runnerCommand } from '../../../src/core/runs/lifecycle/runManager';

const EXTENSION_ID = 'remote-finetune.remote-finetune';
const STATE = 'remoteFinetune.runs._state';
const PANELS_STATE = 'remoteFinetune.panels._state';
const ALIAS = 'host-suite-progress';

interface RunsState {
  rows: Array<{ id: string; description: string; tooltip: string; contextValue: string }>;
  statusBar: { visible: boolean; text: string; tooltip: string };
}
interface PanelState {
  viewType: string;
  ready: boolean;
  source: string | null;
  progress?: string;
}

const state = async (): Promise<RunsState> => vscode.commands.executeCommand<RunsState>(STATE);

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 90_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out: ${what}; last ${JSON.stringify(await state())}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function env(name: string): string {
  const v = process.env[name];
  assert.ok(v, `${name} is not set by the test runner`);
  return v;
}

// Sixty optimizer steps of 0.75 s (still live when found and followed under CI load), each logged with the
// Trainer state's max_steps, as the runner's callback does.
const TRAIN_PY = `
import os, time
from remote_finetune.callback import EventsCallbackCore
from remote_finetune.events import EventWriter
core = EventsCallbackCore(EventWriter(os.environ["RFT_EVENTS_FILE"]), run_id="progress", model="stand-in", method="own-script",
                          marker_dir=os.environ["RFT_RUN_DIR"])
core.train_begin(True, None, None, 0, None)
for step in range(1, 61):
    time.sleep(0.75)
    core.step_end(step)
    core.log(True, {"loss": 2.0 - step / 100}, step, None, 60)
`;

suite('runs: step of total and time left (issue 39.3)', () => {
  let sshd: Sshd;
  let client: ClientSetup;
  let host: SshHost;

  suiteSetup(async function () {
    this.timeout(120_000);
    await vscode.extensions.getExtension(EXTENSION_ID)!.activate();
    sshd = await startSshd();
    client = clientFor(sshd, { alias: ALIAS, knownHostsInConfig: true });
    await vscode.workspace.getConfiguration('remoteFinetune').update('ssh.configFile', client.sshConfigPath, vscode.ConfigurationTarget.Global);
    host = new SshHost({ host: ALIAS }, client.options);
  });

  suiteTeardown(async () => {
    host?.close();
    await sshd?.stop();
    await vscode.workspace.getConfiguration('remoteFinetune').update('ssh.configFile', undefined, vscode.ConfigurationTarget.Global);
  });

  test('a live run: the row, the status bar and the metrics panel say step N of 60 and the time left; ended, the last step', async function () {
    this.timeout(180_000);
    const ws = mkdtempSync(join(tmpdir(), 'rft-host-progress-'));
    writeFileSync(join(ws, 'train.py'), TRAIN_PY);
    const command = runnerCommand('python3', join(env('RFT_REPO_ROOT'), 'python-runner'), ws, true);
    const id = `rft-progress-${Date.now().toString(36)}`;
    await startDetached(await host.session(), {
      runId: id,
      command,
      cwd: ws,
      spec: { version: 1, name: 'progress', command: 'python3 train.py', outputs: { dir: 'outputs' } },
    });
    await vscode.commands.executeCommand('remoteFinetune.findRunsOnHost', ALIAS);
    const live = / · step (\d+) of 60, ≈ (\d+s|\d+m \d\ds) left · /;
    const row = await until('the row with its step of total and time left', async () => {
      const r = (await state()).rows.find((x) => x.id === id);
      return r && live.test(r.description) ? r : undefined;
    });
    assert.match(row.tooltip, /^Progress: step \d+ of 60, ≈ (\d+s|\d+m \d\ds) left$/m);

    await vscode.commands.executeCommand('remoteFinetune.run.showMetrics', id);
    const metrics = await until('the metrics panel says how far the run is', async () => {
      const all = await vscode.commands.executeCommand<PanelState[]>(PANELS_STATE);
      const p = all.find((x) => x.viewType.endsWith('metricsPanel') && x.ready && x.source?.startsWith(id));
      return p?.progress && /^step \d+ of 60, ≈ (\d+s|\d+m \d\ds) left$/.test(p.progress) ? p : undefined;
    });
    assert.ok(metrics.progress);
    const bar = await until('the status bar with step of total', async () => {
      const b = (await state()).statusBar;
      return b.visible && /step \d+ of 60, ≈ (\d+s|\d+m \d\ds) left/.test(b.text) ? b : undefined;
    });
    assert.match(bar.text, /^\$\(pulse\) /);

    const ended = await until(
      'the run ended',
      async () => {
        const r = (await state()).rows.find((x) => x.id === id);
        return r && /^run\.done/.test(r.contextValue) ? r : undefined;
      },
      120_000,
    );
    assert.match(ended.description, / · completed · step 60 · /);
    assert.doesNotMatch(ended.tooltip, /^Progress:/m);
  });
});
