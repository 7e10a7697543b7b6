// "Fine-Tune: Push to Hugging Face Hub" inside a real VS Code host (issue 20.3): a run of the demo's own script
// (which leaves an adapter folder) ends on a real loopback sshd, the extension finds it, and the command runs
// with the person's answers given through vscode.window's prompt functions (replaced for the length of the
// test; notify.ts and the command look them up at call time). The host pushes with the real huggingface_hub
// (the training venv's python is the host's python3) to the Hub EMULATOR (test/emulators/hfHub.ts, a stand-in
// for huggingface.co's upload API) named to the host by HF_ENDPOINT in its sessions' environment.
// Checked: with no token stored, the command asks for one and keeps it in the secret store; the repo name
// defaults to the run's; Private is the first choice; the repo on the Hub is private with the adapter's files.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import * as vscode from 'vscode';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { clientFor } from '../../support/sshClient';
import type { ClientSetup } from '../../support/sshClient';
import { SshHost } from '../../../src/core/ssh/reconnect';
import { startDetached } from '../../../src/core/ssh/detachedJob';
import { runnerCommand } from '../../../src/core/runs/lifecycle/runManager';
import { HfHubEmulator } from '../../emulators/hfHub';

const EXTENSION_ID = 'remote-finetune.remote-finetune';
const ALIAS = 'hub-suite-gpu';
const TOKEN = 'hf_' + 'VsCoDe'.repeat(6);

interface Row {
  id: string;
  contextValue: string;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 90_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

suite('hub: push a run to the Hugging Face Hub', () => {
  let sshd: Sshd;
  let client: ClientSetup;
  let host: SshHost;
  let hub: HfHubEmulator;
  const win = vscode.window as unknown as Record<string, unknown>;
  const originals = {
    info: win.showInformationMessage,
    error: win.showErrorMessage,
    warn: win.showWarningMessage,
    input: win.showInputBox,
    pick: win.showQuickPick,
  };
  // The run this suite made; removed from the history at the end so later suites start with an empty Runs view.
  let runId: string | undefined;
  const removeRun = async (id: string): Promise<string[]> => {
    const asked: string[] = [];
    win.showWarningMessage = async (text: string, ...rest: unknown[]) => {
      asked.push(text);
      return rest.includes('Remove') ? 'Remove' : undefined;
    };
    try {
      await vscode.commands.executeCommand('remoteFinetune.removeRunFromHistory', id);
    } finally {
      win.showWarningMessage = originals.warn;
    }
    return asked;
  };

  suiteSetup(async function () {
    this.timeout(600_000);
    await vscode.extensions.getExtension(EXTENSION_ID)!.activate();
    // The cached training venv (scripts/ensure-training-venv.sh; the bundle's own folder is not the repo's).
    const venv = execFileSync('bash', [join(process.env.RFT_REPO_ROOT!, 'scripts/ensure-training-venv.sh'), 'hf5-torch2.6plus'], { encoding: 'utf8' });
    const python = join(venv.trim().split('\n').pop()!, 'bin/python');
    hub = await new HfHubEmulator({ [TOKEN]: 'alice' }).start();
    // The host's python3 is the training venv's (it has huggingface_hub); the Hub it knows is the emulator.
    sshd = await startSshd({ pathPrepend: [dirname(python)], env: { HF_ENDPOINT: hub.url, HF_HUB_DISABLE_XET: '1' } });
    client = clientFor(sshd, { alias: ALIAS, knownHostsInConfig: true });
    await vscode.workspace.getConfiguration('remoteFinetune').update('ssh.configFile', client.sshConfigPath, vscode.ConfigurationTarget.Global);
    host = new SshHost({ host: ALIAS }, client.options);
  });

  suiteTeardown(async () => {
    if (runId) await removeRun(runId);
    win.showInformationMessage = originals.info;
    win.showErrorMessage = originals.error;
    win.showQuickPick = originals.pick;
    // Forget the token: the setHfToken prompt answered with nothing removes it.
    win.showInputBox = async () => '';
    await vscode.commands.executeCommand('remoteFinetune.setHfToken');
    win.showInputBox = originals.input;
    host?.close();
    await sshd?.stop();
    await hub?.stop();
    await vscode.workspace.getConfiguration('remoteFinetune').update('ssh.configFile', undefined, vscode.ConfigurationTarget.Global);
  });

  test('the adapter of a finished run goes to a private repo named after the run, with the token kept in the secret store', async function () {
    this.timeout(300_000);
    const ws = mkdtempSync(join(tmpdir(), 'rft-hub-run-'));
    cpSync(join(process.env.RFT_REPO_ROOT!, 'examples/demo-host-own-script/train.py'), join(ws, 'train.py'));
    const id = `rft-hub-${Date.now().toString(36)}`;
    runId = id;
    const session = await host.session();
    await startDetached(session, {
      runId: id,
      command: runnerCommand('python3', join(process.env.RFT_REPO_ROOT!, 'python-runner'), ws, true),
      cwd: ws,
      spec: { version: 1, name: 'demo-adapter', command: 'python3 train.py --steps 3 --sleep 0.1', outputs: { dir: 'outputs' } },
    });
    const state = async (): Promise<{ rows: Row[] }> => vscode.commands.executeCommand<{ rows: Row[] }>('remoteFinetune.runs._state');
    await vscode.commands.executeCommand('remoteFinetune.findRunsOnHost', ALIAS);
    await until('the run found on the host and ended', async () => {
      const row = (await state()).rows.find((r) => r.id === id);
      return row && /^run\.done/.test(row.contextValue) ? row : undefined;
    });

    const inputs: Array<{ password: boolean; value: string | undefined }> = [];
    const picks: string[][] = [];
    const infos: string[] = [];
    const errors: string[] = [];
    win.showInputBox = async (o: vscode.InputBoxOptions) => {
      inputs.push({ password: !!o.password, value: o.value });
      if (o.password) return TOKEN;
      assert.equal(
        o.validateInput?.('bad name!'),
        '"bad name!" may hold only letters, digits, "-", "_" and ".", must start and end with a letter or digit, 96 characters at most.',
      );
      return o.value;
    };
    win.showQuickPick = async (items: Array<vscode.QuickPickItem>) => {
      picks.push(items.map((i) => i.label));
      return items[0];
    };
    win.showInformationMessage = async (text: string) => {
      infos.push(text);
      return undefined;
    };
    win.showErrorMessage = async (text: string) => {
      errors.push(text);
      return undefined;
    };

    await vscode.commands.executeCommand('remoteFinetune.pushToHub', id, 'adapter');

    assert.deepEqual(errors, []);
    assert.deepEqual(
      inputs.map((i) => i.password),
      [true, false],
      'no token stored: the token prompt first, then the repo name',
    );
    // A run found on the host is named by its id (RunManager.discover): the default repo name follows it.
    assert.equal(inputs[1]!.value, `${id}-lora`, 'the repo name defaults to the run name');
    assert.deepEqual(picks, [['Private', 'Public']], 'Private is the first (default) choice');
    const repo = hub.repos.get(`alice/${id}-lora`);
    assert.ok(repo, `the repo on the Hub; info: ${infos.join(' | ')}`);
    assert.equal(repo.private, true);
    const files = [...repo.files.keys()].sort();
    for (const f of ['README.md', 'adapter_config.json', 'adapter_model.safetensors']) assert.ok(files.includes(f), files.join(', '));
    assert.ok(
      infos.some((t) => t.startsWith(`Pushed to alice/${id}-lora (private)`)),
      infos.join(' | '),
    );

    // A second push asks for no token: it came from the secret store.
    inputs.length = 0;
    await vscode.commands.executeCommand('remoteFinetune.pushToHub', id, 'adapter');
    assert.deepEqual(
      inputs.map((i) => i.password),
      [false],
    );
    assert.deepEqual(errors, []);
    assert.ok([...hub.authSeen].every((h) => h === `Bearer ${TOKEN}`));

    // Remove from History: asked once (modal), then the row is gone; the host keeps the run.
    const asked = await removeRun(id);
    assert.equal(asked.length, 1, asked.join(' | '));
    assert.match(asked[0]!, /^Remove rft-hub-.* from the run history\?.*nothing on hub-suite-gpu is touched\.$/);
    assert.equal(
      (await state()).rows.find((r) => r.id === id),
      undefined,
      'the row is gone',
    );
    runId = undefined;
    const onHost = await (await host.session()).exec(`ls -d ~/.remote-finetune/runs/${id}`);
    assert.equal(onHost.code, 0, 'the run folder on the host is untouched');
  });
});
