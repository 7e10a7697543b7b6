// Runs told apart, inside a real VS Code host (issue 18.3 and 18.7). Three real runs of the python runner
// (own-script mode, the demo's train.py) are started detached on a real loopback sshd, then the extension
// finds them with "Find Runs on Host", follows them to their end and notifies. Read back through the
// extension's internal state command (remoteFinetune.runs._state, as the panels tests read theirs):
// the Runs view's rows and tooltips, the status bar, the end-of-run notification and its buttons, and the
// context keys that keep run commands out of the palette until a run exists.
// The notification toast itself cannot be clicked from the extension host: vscode.window's message
// functions are replaced for the length of one test (notify.ts looks them up at call time) to press a
// button, and what the button did is read from the panels' own state command.
import * as assert from 'node:assert/strict';
import { cpSync, mkdtempSync } from 'node:fs';
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
const ALIAS = 'host-suite-gpu';

interface Row {
  id: string;
  host: string;
  label: string;
  description: string;
  tooltip: string;
  contextValue: string;
}
interface RunsState {
  rows: Row[];
  statusBar: { visible: boolean; text: string; tooltip: string };
  lastNotification: { runId: string; text: string; error: boolean; buttons: string[] } | null;
  context: { hasRuns: boolean; hasLiveRuns: boolean };
}
interface PanelState {
  viewType: string;
  ready: boolean;
  source: string | null;
}

const state = async (): Promise<RunsState> => vscode.commands.executeCommand<RunsState>(STATE);

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 90_000): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out: ${what}; last ${JSON.stringify(last ?? (await state()))}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function env(name: string): string {
  const v = process.env[name];
  assert.ok(v, `${name} is not set by the test runner`);
  return v;
}

suite('runs: three runs told apart', () => {
  let sshd: Sshd;
  let client: ClientSetup;
  let host: SshHost;
  const ids: string[] = [];
  /** Each notification shown, with the means to press one of its buttons (or dismiss it) later. */
  const shown: Array<{ kind: 'info' | 'error'; text: string; buttons: string[]; press: (b: string | undefined) => void }> = [];
  const win = vscode.window as unknown as Record<string, unknown>;
  const originals = { info: win.showInformationMessage, error: win.showErrorMessage };

  suiteSetup(async function () {
    this.timeout(120_000);
    await vscode.extensions.getExtension(EXTENSION_ID)!.activate();
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    sshd = await startSshd();
    client = clientFor(sshd, { alias: ALIAS, knownHostsInConfig: true });
    // The extension reads its ssh_config from the user's settings only (never the workspace's).
    await vscode.workspace.getConfiguration('remoteFinetune').update('ssh.configFile', client.sshConfigPath, vscode.ConfigurationTarget.Global);
    host = new SshHost({ host: ALIAS }, client.options);
  });

  suiteTeardown(async () => {
    win.showInformationMessage = originals.info;
    win.showErrorMessage = originals.error;
    host?.close();
    await sshd?.stop();
    await vscode.workspace.getConfiguration('remoteFinetune').update('ssh.configFile', undefined, vscode.ConfigurationTarget.Global);
  });

  test('before any run: no rows, no status bar entry, and the context keys hide the run commands', async () => {
    const s = await state();
    assert.deepEqual(s.rows, []);
    assert.equal(s.statusBar.visible, false);
    assert.deepEqual(s.context, { hasRuns: false, hasLiveRuns: false });
    const pkg = vscode.extensions.getExtension(EXTENSION_ID)!.packageJSON as {
      contributes: { menus: { commandPalette: Array<{ command: string; when?: string }> } };
    };
    const when = new Map(pkg.contributes.menus.commandPalette.map((m) => [m.command, m.when]));
    assert.equal(when.get('remoteFinetune.stopRun'), 'remoteFinetune.hasLiveRuns');
    assert.equal(when.get('remoteFinetune.downloadArtifacts'), 'remoteFinetune.hasRuns');
    assert.equal(when.get('remoteFinetune.runAgain'), 'remoteFinetune.hasRuns');
  });

  test('three real runs found on the host: rows with start time, step (30, not 31), loss and duration; notifications with buttons that work; status bar finished', async function () {
    this.timeout(240_000);
    const ws = mkdtempSync(join(tmpdir(), 'rft-host-runs-'));
    cpSync(join(env('RFT_REPO_ROOT'), 'examples/demo-host-own-script/train.py'), join(ws, 'train.py'));
    const command = runnerCommand('python3', join(env('RFT_REPO_ROOT'), 'python-runner'), ws, true);
    // Long enough that all three are still running when the extension finds them, a second apart so their
    // start times differ.
    const plans = [
      { name: 'a', train: 'python3 train.py --steps 30 --sleep 0.25' },
      { name: 'b', train: 'python3 train.py --steps 12 --sleep 0.5 --exit-code 1 --fail-with "RuntimeError: the test asked for a failure"' },
      { name: 'c', train: 'python3 train.py --steps 20 --sleep 0.4' },
    ];
    const stamp = Date.now().toString(36);
    for (const p of plans) {
      const session = await host.session();
      const id = `rft-host-${stamp}-${p.name}`;
      await startDetached(session, { runId: id, command, cwd: ws, spec: { version: 1, name: p.name, command: p.train, outputs: { dir: 'outputs' } } });
      ids.push(id);
      await new Promise((r) => setTimeout(r, 1100));
    }

    // The end notifications are recorded; their buttons are pressed one at a time below, since the panels
    // follow the run last picked.
    const fake =
      (kind: 'info' | 'error') =>
      (text: string, ...rest: unknown[]): Thenable<unknown> => {
        const buttons = rest.filter((x): x is string => typeof x === 'string');
        return new Promise((resolve) => shown.push({ kind, text, buttons, press: resolve }));
      };
    win.showInformationMessage = fake('info');
    win.showErrorMessage = fake('error');

    await vscode.commands.executeCommand('remoteFinetune.findRunsOnHost', ALIAS);
    const found = await until('the three runs in the Runs view', async () => {
      const s = await state();
      return ids.every((id) => s.rows.some((r) => r.id === id)) ? s : undefined;
    });
    assert.deepEqual(found.context, { hasRuns: true, hasLiveRuns: true }, 'live runs: Stop and the other run commands are in the palette');
    assert.ok(found.rows.every((r) => r.host === ALIAS));

    const ended = await until(
      'all three runs ended',
      async () => {
        const s = await state();
        const rows = ids.map((id) => s.rows.find((r) => r.id === id));
        return rows.every((r) => r && /^run\.done/.test(r.contextValue)) && shown.filter((x) => ids.some((i) => x.text.startsWith(i))).length >= 3
          ? s
          : undefined;
      },
      180_000,
    );
    const row = (id: string): Row => ended.rows.find((r) => r.id === id)!;
    // Start time (to the second, today), status, step, loss, duration.
    // A failed run's row names its exception (issue 39.2).
    const shape = /^(\d\d:\d\d:\d\d) · (completed|failed \(RuntimeError\)) · step (\d+) · loss (\d+\.\d{4}) · (\d+s|\d+m \d\ds)/;
    const parsed = ids.map((id) => shape.exec(row(id).description));
    parsed.forEach((m, i) => assert.ok(m, `row ${i}: ${row(ids[i]!).description}`));
    assert.deepEqual(
      parsed.map((m) => [m![2], Number(m![3])]),
      [
        ['completed', 30],
        ['failed (RuntimeError)', 12],
        ['completed', 20],
      ],
      'a 30-step run ends at step 30',
    );
    assert.equal(new Set(parsed.map((m) => m![1])).size, 3, 'the three start times differ');
    assert.equal(Number(parsed[0]![4]), 0.0833, 'the last loss of 30 steps (2.5 / 30)');
    // The tooltip: id, host, start, duration; the failure with its message.
    const tip = row(ids[1]!).tooltip;
    assert.ok(tip.includes(ids[1]!), tip);
    assert.match(tip, new RegExp(`ssh · ${ALIAS}`));
    assert.match(tip, /^Started /m);
    assert.match(tip, /^Duration (\d+s|\d+m \d\ds)$/m);
    assert.match(tip, /RuntimeError: the test asked for a failure|exited with code 1/);

    // One notification each: completed ones informational, the failed one an error; Open Metrics and Show Logs offered.
    for (const id of ids) {
      const n = shown.filter((x) => x.text.startsWith(id));
      assert.equal(n.length, 1, `${id}: ${JSON.stringify(shown)}`);
      assert.equal(n[0]!.kind, id === ids[1] ? 'error' : 'info');
      assert.deepEqual(n[0]!.buttons, ['Open Metrics', 'Show Logs'], 'found runs have no downloaded adapter, so no Reveal Adapter');
    }
    // The buttons work: Open Metrics on the first run's notification opens the metrics panel on that run,
    // Show Logs on the second's the log panel on that one; the third is dismissed.
    const notice = (id: string): (typeof shown)[number] => shown.find((x) => x.text.startsWith(id))!;
    const panels = async (): Promise<PanelState[]> => vscode.commands.executeCommand<PanelState[]>(PANELS_STATE);
    const panelOn = (kind: string, id: string) => async (): Promise<true | undefined> =>
      // A panel names its run as the tab does: the run's name, then its start time (runDisplayName).
      (await panels()).some((p) => p.viewType.endsWith(kind) && p.ready && p.source?.split(' · ')[0] === id) ? true : undefined;
    assert.equal(await panelOn('metricsPanel', ids[0]!)(), undefined, 'no metrics panel on the run before the button');
    notice(ids[0]!).press('Open Metrics');
    await until('the metrics panel on the first run', panelOn('metricsPanel', ids[0]!), 60_000);
    notice(ids[1]!).press('Show Logs');
    await until('the log panel on the second run', panelOn('logPanel', ids[1]!), 60_000);
    notice(ids[2]!).press(undefined);

    // The status bar keeps the run it follows as ended, with its step.
    const bar = (await state()).statusBar;
    assert.equal(bar.visible, true, 'the ended run stays in the status bar');
    assert.match(bar.text, /^\$\((pass|error)\) rft-host-\S+ (finished|failed) · step \d+/);
    assert.deepEqual((await state()).context, { hasRuns: true, hasLiveRuns: false }, 'no live run: Stop leaves the palette');
    const last = (await state()).lastNotification;
    assert.ok(last && ids.includes(last.runId));
  });
});
