// Issue 18.1 and 18.2 inside a real VS Code host, against two real sshds on loopback:
//  - "suite-nogpu": no nvidia-smi at all;
//  - "suite-t4": an nvidia-smi STAND-IN on its PATH (test/support/nvidiaSmiStandIn.ts) reporting one Tesla T4.
// The pickers and modals are answered by stubs put on vscode.window (the extension looks them up at call
// time), so the test reads exactly what the person would see: items, their order, warning texts, and what
// happens after each answer. Connections, probes and the ssh config reading are the extension's own.
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { nvidiaSmiStandIn } from '../../support/nvidiaSmiStandIn';

const EXTENSION_ID = 'remote-finetune.remote-finetune';

type Item = vscode.QuickPickItem;

/** A stand-in for vscode.window.createQuickPick: what the extension sets is recorded; the test accepts or hides. */
class FakeQuickPick {
  title: string | undefined;
  placeholder: string | undefined;
  matchOnDescription = false;
  matchOnDetail = false;
  busy = false;
  items: readonly Item[] = [];
  activeItems: readonly Item[] = [];
  selectedItems: readonly Item[] = [];
  private readonly accepted = new vscode.EventEmitter<void>();
  private readonly hidden = new vscode.EventEmitter<void>();
  // The real QuickPick's events, so the extension's wrappers (linkSafeUi.createQuickPick) find what they wrap.
  private readonly active = new vscode.EventEmitter<readonly Item[]>();
  private readonly selection = new vscode.EventEmitter<readonly Item[]>();
  readonly onDidAccept = this.accepted.event;
  readonly onDidHide = this.hidden.event;
  readonly onDidChangeActive = this.active.event;
  readonly onDidChangeSelection = this.selection.event;
  private hiddenOnce = false;
  constructor(private readonly onShow: (qp: FakeQuickPick) => void) {}
  show(): void {
    this.onShow(this);
  }
  hide(): void {
    if (!this.hiddenOnce) {
      this.hiddenOnce = true;
      this.hidden.fire();
    }
  }
  dispose(): void {
    this.accepted.dispose();
    this.hidden.dispose();
    this.active.dispose();
    this.selection.dispose();
  }
  accept(item: Item): void {
    this.selectedItems = [item];
    this.selection.fire(this.selectedItems);
    this.accepted.fire();
  }
  /** Waits until the cloud offers are in (busy cleared). */
  async settled(): Promise<void> {
    for (let i = 0; i < 200 && this.busy; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(this.busy, false, `${this.title} stayed busy`);
  }
  labels(): string[] {
    return this.items.map((i) => (i.kind === vscode.QuickPickItemKind.Separator ? `-- ${i.label}` : i.label));
  }
  item(label: string): Item {
    const it = this.items.find((i) => i.label === label);
    assert.ok(it, `no item "${label}" in ${JSON.stringify(this.labels())}`);
    return it;
  }
}

interface Answers {
  /** Called for each picker shown, in order; must accept or hide it. */
  pick(qp: FakeQuickPick, n: number): Promise<void>;
  warning?(message: string, options: unknown, buttons: string[]): string | undefined;
  info?(message: string, options: unknown, buttons: string[]): string | undefined;
  input?(options: vscode.InputBoxOptions | undefined): string | undefined;
  quickPick?(items: readonly Item[] | readonly string[], options: vscode.QuickPickOptions | undefined): Item | string | undefined;
}

interface Seen {
  pickers: FakeQuickPick[];
  warnings: Array<{ message: string; options: unknown; buttons: string[] }>;
  infos: Array<{ message: string; options: unknown }>;
  inputs: string[];
}

/** Runs `body` with vscode.window's pickers and message boxes answered by `answers`; restores them after. */
async function withAnswers<T>(answers: Answers, body: () => Thenable<T>): Promise<{ result: T; seen: Seen }> {
  const w = vscode.window as unknown as Record<string, unknown>;
  const saved = ['createQuickPick', 'showWarningMessage', 'showInformationMessage', 'showInputBox', 'showQuickPick'].map((k) => [k, w[k]] as const);
  const seen: Seen = { pickers: [], warnings: [], infos: [], inputs: [] };
  const pending: Array<Promise<void>> = [];
  const split = (rest: unknown[]): { options: unknown; buttons: string[] } => {
    const options = typeof rest[0] === 'object' && rest[0] !== null && !('title' in rest[0]) ? rest[0] : undefined;
    return { options, buttons: rest.filter((r): r is string => typeof r === 'string') };
  };
  w.createQuickPick = () =>
    new FakeQuickPick((qp) => {
      seen.pickers.push(qp);
      const n = seen.pickers.length - 1;
      // Answered on a later tick, as a person would: the extension subscribes to accept/hide right after show().
      pending.push(
        new Promise((r) => setTimeout(r, 10))
          .then(() => answers.pick(qp, n))
          .catch((e: unknown) => {
            qp.hide();
            throw e;
          }),
      );
    });
  w.showWarningMessage = async (message: string, ...rest: unknown[]) => {
    const { options, buttons } = split(rest);
    seen.warnings.push({ message, options, buttons });
    return answers.warning?.(message, options, buttons);
  };
  w.showInformationMessage = async (message: string, ...rest: unknown[]) => {
    const { options, buttons } = split(rest);
    seen.infos.push({ message, options });
    return answers.info?.(message, options, buttons);
  };
  w.showInputBox = async (options?: vscode.InputBoxOptions) => {
    seen.inputs.push(options?.title ?? '');
    return answers.input?.(options);
  };
  w.showQuickPick = async (items: readonly Item[] | readonly string[], options?: vscode.QuickPickOptions) => answers.quickPick?.(items, options);
  try {
    const result = await body();
    await Promise.all(pending);
    return { result, seen };
  } finally {
    for (const [k, v] of saved) w[k] = v;
  }
}

export function specText(name: string, target: readonly string[], teardown: readonly string[]): string {
  return [
    'version: 1',
    `name: ${name}`,
    'command: "python train.py --steps 3 --sleep 0"',
    'target:',
    ...target,
    '  gpu: A100-40GB',
    'outputs:',
    '  dir: outputs',
    '  download: [adapter]',
    'teardown:',
    ...teardown,
    '',
  ].join('\n');
}

/** Issue 39.7: a spec that names its GPU is not asked "Which GPU?" again; the first picker is the target. */
function noGpuQuestion(qp: FakeQuickPick): void {
  assert.notEqual(qp.title, 'Which GPU?', 'the spec names its GPU (A100-40GB): no GPU picker');
}

suite('host pickers and GPU checks (real sshd)', function () {
  this.timeout(120_000);
  let nogpu: Sshd;
  let t4: Sshd;
  let dir: string;
  let specUri: vscode.Uri;
  let lambdaSpecUri: vscode.Uri;
  const cfg = (): vscode.WorkspaceConfiguration => vscode.workspace.getConfiguration('remoteFinetune');

  suiteSetup(async () => {
    await vscode.extensions.getExtension(EXTENSION_ID)!.activate();
    nogpu = await startSshd();
    t4 = await startSshd({ pathPrepend: [nvidiaSmiStandIn([{ name: 'Tesla T4', memoryMiB: 15360 }])] });
    dir = mkdtempSync(join(tmpdir(), 'rft-suite-hosts-'));
    const host = (alias: string, s: Sshd): string[] => [
      `Host ${alias}`,
      '  HostName 127.0.0.1',
      `  Port ${s.port}`,
      `  User ${s.user}`,
      `  IdentityFile ${s.userKeyPath}`,
      '  IdentitiesOnly yes',
    ];
    writeFileSync(join(dir, 'known_hosts'), `${nogpu.knownHostsLine}\n${t4.knownHostsLine}\n`);
    writeFileSync(
      join(dir, 'config'),
      [...host('suite-nogpu', nogpu), ...host('suite-t4', t4), 'Host *', `  UserKnownHostsFile ${join(dir, 'known_hosts')}`, ''].join('\n'),
    );
    await cfg().update('ssh.configFile', join(dir, 'config'), vscode.ConfigurationTarget.Global);
    const ws = process.env.RFT_TEST_WORKSPACE!;
    for (const [folder, target, teardown] of [
      ['hosts-suite', ['  provider: ssh', '  host: suite-nogpu'], ['  policy: keep', '  idle_minutes: 30']],
      ['hosts-suite-lambda', ['  provider: lambda', '  region: us-east-1'], ['  policy: terminate']],
      ['hosts-suite-gcp', ['  provider: gcp', '  zone: us-central1-a'], ['  policy: terminate']],
    ] as const) {
      mkdirSync(join(ws, folder), { recursive: true });
      cpSync(join(ws, 'demo-host-own-script', 'train.py'), join(ws, folder, 'train.py'));
      writeFileSync(join(ws, folder, 'finetune.yaml'), specText(folder, target, teardown));
    }
    specUri = vscode.Uri.file(join(ws, 'hosts-suite', 'finetune.yaml'));
    lambdaSpecUri = vscode.Uri.file(join(ws, 'hosts-suite-lambda', 'finetune.yaml'));
  });

  suiteTeardown(async () => {
    await cfg().update('ssh.configFile', undefined, vscode.ConfigurationTarget.Global);
    await nogpu?.stop();
    await t4?.stop();
  });

  test('target picker: the spec\'s host first, ssh_config hosts, "Add SSH host…", and a missing Lambda key as an item that prompts for it', async () => {
    const { result, seen } = await withAnswers(
      {
        async pick(qp, n) {
          noGpuQuestion(qp);
          await qp.settled();
          if (n === 0) {
            const labels = qp.labels();
            const hostRows = labels.slice(0, labels.indexOf('$(add) Add SSH host…') + 1);
            assert.deepEqual(
              hostRows.filter((l) => /suite-|SSH host/.test(l)),
              ['-- SSH hosts', '$(server) suite-nogpu', '$(server) suite-t4', '$(add) Add SSH host…'],
            );
            assert.match(qp.item('$(server) suite-nogpu').description ?? '', /in the spec.*ssh config/);
            const key = labels.indexOf('$(key) Lambda Cloud: set API key…');
            assert.ok(key > labels.indexOf('$(add) Add SSH host…'), `cloud set-up after the hosts: ${JSON.stringify(labels)}`);
            assert.ok(!labels.some((l) => l.startsWith('$(warning) Lambda')), 'no dead-end warning row for Lambda');
            qp.accept(qp.item('$(key) Lambda Cloud: set API key…'));
            return;
          }
          // After the key prompt (cancelled here) the picker comes back: no dead end.
          assert.match(qp.title ?? '', /Where should hosts-suite run/);
          qp.hide();
        },
        input: () => undefined,
      },
      () => vscode.commands.executeCommand<string | undefined>('remoteFinetune.startTraining', specUri),
    );
    assert.equal(result, undefined);
    assert.equal(seen.pickers.length, 2, 'target picker, target picker again');
    assert.deepEqual(seen.inputs, ['Lambda Cloud API Key']);
  });

  test('ssh_config hosts and "Add SSH host…" are offered for a Lambda spec too; adding a host brings the picker back with it highlighted', async () => {
    const { seen } = await withAnswers(
      {
        async pick(qp, n) {
          noGpuQuestion(qp);
          if (n === 0) {
            assert.deepEqual(
              qp.labels().filter((l) => /suite-|SSH host/.test(l)),
              ['-- SSH hosts', '$(server) suite-nogpu', '$(server) suite-t4', '$(add) Add SSH host…'],
            );
            qp.accept(qp.item('$(add) Add SSH host…'));
            return;
          }
          assert.equal(qp.activeItems[0]?.label, '$(server) suite-t4', 'the added host is highlighted');
          assert.match(qp.activeItems[0]?.description ?? '', /1 × Tesla T4 \(15 GiB\)/);
          qp.hide();
        },
        // Add GPU Host's own picker: the ssh_config host.
        quickPick: (items) => (items as readonly Item[]).find((i) => i.label === 'suite-t4'),
      },
      () => vscode.commands.executeCommand('remoteFinetune.startTraining', lambdaSpecUri),
    );
    assert.equal(seen.pickers.length, 2);
    await vscode.commands.executeCommand('remoteFinetune.removeHost', { kind: 'host', host: { host: 'suite-t4' } });
  });

  test('target picker for a GCP spec: one row per missing GCP setting, no other cloud, no GCP row twice', async () => {
    const project = cfg().inspect<string>('gcp.project')?.globalValue;
    await cfg().update('gcp.project', undefined, vscode.ConfigurationTarget.Global);
    try {
      const { seen } = await withAnswers(
        {
          async pick(qp) {
            noGpuQuestion(qp);
            await qp.settled();
            const setup = qp.labels().filter((l) => l.startsWith('$(key)') || l.startsWith('$(warning)'));
            assert.equal(setup.filter((l) => l === '$(key) GCP: set project…').length, 1, `one project row: ${JSON.stringify(setup)}`);
            assert.ok(!setup.some((l) => /Lambda|AWS|EC2|lambda|ec2/.test(l)), `only the spec's cloud: ${JSON.stringify(setup)}`);
            assert.ok(setup.filter((l) => /GCP: sign in/.test(l)).length <= 1);
            assert.ok(!setup.some((l) => /not configured/.test(l)), 'the setup row says it already');
            qp.hide();
          },
        },
        () =>
          vscode.commands.executeCommand(
            'remoteFinetune.startTraining',
            vscode.Uri.file(join(process.env.RFT_TEST_WORKSPACE!, 'hosts-suite-gcp', 'finetune.yaml')),
          ),
      );
      assert.equal(seen.pickers.length, 1);
    } finally {
      await cfg().update('gcp.project', project, vscode.ConfigurationTarget.Global);
    }
  });

  test('a host without an NVIDIA GPU: "suite-nogpu has no NVIDIA GPU — start anyway?", and Cancel starts nothing', async () => {
    const { result, seen } = await withAnswers(
      {
        async pick(qp) {
          noGpuQuestion(qp);
          qp.accept(qp.item('$(server) suite-nogpu'));
        },
        warning: () => undefined, // the modal's Cancel
      },
      () => vscode.commands.executeCommand<string | undefined>('remoteFinetune.startTraining', specUri),
    );
    assert.equal(result, undefined, 'no run started');
    const w = seen.warnings.find((x) => /NVIDIA/.test(x.message));
    assert.equal(w?.message, 'suite-nogpu has no NVIDIA GPU — start anyway?');
    assert.deepEqual(w?.buttons, ['Start Anyway']);
    assert.equal((w?.options as { modal?: boolean } | undefined)?.modal, true);
    assert.match((w?.options as { detail?: string }).detail ?? '', /nvidia-smi is not installed/);
    assert.ok(!seen.infos.some((i) => /^Start hosts-suite on/.test(i.message)), 'the start confirmation never came');
  });

  test('a host with another GPU: "suite-t4 has Tesla T4, not the A100 …"; Start Anyway goes on to the confirmation; the probe is cached', async () => {
    const { result, seen } = await withAnswers(
      {
        async pick(qp) {
          noGpuQuestion(qp);
          qp.accept(qp.item('$(server) suite-t4'));
        },
        warning: (_m, _o, buttons) => buttons[0],
        info: () => undefined, // stop at the confirmation
      },
      () => vscode.commands.executeCommand<string | undefined>('remoteFinetune.startTraining', specUri),
    );
    assert.equal(result, undefined);
    assert.equal(seen.warnings.find((x) => /suite-t4/.test(x.message))?.message, 'suite-t4 has Tesla T4, not the A100 this run asks for — start anyway?');
    const confirm = seen.infos.find((i) => i.message === 'Start hosts-suite on suite-t4?');
    assert.ok(confirm, JSON.stringify(seen.infos));
    // Issue 39.1: the confirmation says what the host has, beside the spec's ask.
    assert.match((confirm.options as { detail?: string }).detail ?? '', /^Hardware on suite-t4: 1 × Tesla T4\. The spec asks for A100-40GB/);
  });

  test("Run Again's GPU and host: no pickers, checked against that GPU, straight to the confirmation", async () => {
    const { seen } = await withAnswers(
      {
        async pick(qp) {
          qp.hide();
          assert.fail(`no picker expected, got ${qp.title}`);
        },
        warning: () => undefined,
        info: () => undefined,
      },
      () => vscode.commands.executeCommand('remoteFinetune.startTraining', specUri, { gpu: 'T4', host: 'suite-t4' }),
    );
    assert.equal(seen.pickers.length, 0);
    assert.ok(!seen.warnings.some((x) => /start anyway/.test(x.message)), 'a T4 host for a T4 run needs no warning');
    const confirm = seen.infos.find((i) => i.message === 'Start hosts-suite on suite-t4?');
    assert.ok(confirm, JSON.stringify(seen.infos));
    assert.match((confirm.options as { detail?: string }).detail ?? '', /T4/);
    // Issue 39.3: an own host costs nothing here, and the confirmation says how long, or (an own command) why not.
    assert.match(
      (confirm.options as { detail?: string }).detail ?? '',
      /Your own host: no cloud charges from this extension\. No time estimate: your own command sets its own length\./,
    );
  });

  test('issue 39.1 and 39.2: Start Anyway on a GPU-less host: the row says CPU only beside the ask; the failure says what and where, and its button opens the file', async function () {
    this.timeout(180_000);
    const ws = process.env.RFT_TEST_WORKSPACE!;
    const folder = join(ws, 'hosts-suite-fail');
    mkdirSync(join(folder, 'lib'), { recursive: true });
    writeFileSync(
      join(folder, 'finetune.yaml'),
      specText('hosts-suite-fail', ['  provider: ssh', '  host: suite-nogpu'], ['  policy: keep']).replace(
        'python train.py --steps 3 --sleep 0',
        'python3 fail.py',
      ),
    );
    writeFileSync(
      join(folder, 'fail.py'),
      'import os\nimport sys\nsys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))\nimport helper\n\nhelper.check(3)\n',
    );
    writeFileSync(join(folder, 'lib', 'helper.py'), 'def check(n):\n    if n > 2:\n        raise ValueError("batch_size %d does not divide the data" % n)\n');
    // The end notification is caught as the person would see it, and its first button pressed.
    const w = vscode.window as unknown as Record<string, unknown>;
    const savedError = w.showErrorMessage;
    let pressed: ((b: string | undefined) => void) | undefined;
    const ended = new Promise<{ text: string; buttons: string[] }>((resolve) => {
      w.showErrorMessage = (text: string, ...rest: unknown[]) => {
        const buttons = rest.filter((x): x is string => typeof x === 'string');
        if (text.startsWith('hosts-suite-fail')) resolve({ text, buttons });
        return new Promise((r) => (pressed = r));
      };
    });
    let runId: string | undefined;
    try {
      const { result } = await withAnswers(
        {
          async pick(qp) {
            qp.accept(qp.item('$(server) suite-nogpu'));
          },
          warning: (m, _o, buttons) => (/no NVIDIA GPU/.test(m) ? 'Start Anyway' : buttons[0]),
          info: (m, _o, buttons) => (m.startsWith('Start hosts-suite-fail on') ? buttons[0] : undefined),
        },
        () => vscode.commands.executeCommand<string | undefined>('remoteFinetune.startTraining', vscode.Uri.file(join(folder, 'finetune.yaml'))),
      );
      assert.ok(result, 'a run started');
      runId = result;
      const notice = await Promise.race([ended, new Promise<never>((_, rej) => setTimeout(() => rej(new Error('no failure notification')), 150_000))]);
      assert.match(notice.text, /^hosts-suite-fail failed\. ValueError: batch_size 3 does not divide the data \((hosts-suite-fail\/)?lib\/helper\.py:3\)/);
      assert.match(notice.buttons[0] ?? '', /^Open (hosts-suite-fail\/)?lib\/helper\.py:3$/, JSON.stringify(notice.buttons));
      const rows = (await vscode.commands.executeCommand<{ rows: Array<{ id: string; description: string; tooltip: string }> }>('remoteFinetune.runs._state'))
        .rows;
      const row = rows.find((r) => r.id === result);
      assert.match(row?.description ?? '', /failed \(ValueError at (hosts-suite-fail\/)?lib\/helper\.py:3\)/);
      assert.match(row?.description ?? '', / · CPU only \(spec asked A100-40GB\)/);
      assert.match(row?.tooltip ?? '', /ssh · suite-nogpu · CPU only \(spec asked A100-40GB\)/);
      pressed?.(notice.buttons[0]);
      for (let i = 0; i < 100 && !vscode.window.activeTextEditor?.document.uri.fsPath.endsWith(join('lib', 'helper.py')); i++)
        await new Promise((r) => setTimeout(r, 100));
      const editor = vscode.window.activeTextEditor;
      assert.equal(editor?.document.uri.fsPath, join(folder, 'lib', 'helper.py'));
      assert.equal(editor?.selection.active.line, 2, 'at the raising line (3, one-based)');
    } finally {
      w.showErrorMessage = savedError;
      // The suites after this one start with no run in this window (the panels' empty state, the Runs view's
      // first rows, the Hosts view's words): the failed run leaves the history it joined.
      if (runId) {
        const id = runId;
        await withAnswers(
          {
            async pick(qp) {
              qp.hide();
            },
            warning: (m, _o, buttons) => (m.startsWith('Remove hosts-suite-fail') ? 'Remove' : buttons[0]),
          },
          () => vscode.commands.executeCommand('remoteFinetune.removeRunFromHistory', id),
        );
      }
    }
  });

  test('the Hosts view lists the ssh_config hosts with their GPUs after Refresh', async () => {
    const rows = await vscode.commands.executeCommand<Array<{ label: string; description: string; tooltip: string }>>('remoteFinetune.refreshHosts');
    const t4Row = rows.find((r) => r.label === 'suite-t4');
    const noRow = rows.find((r) => r.label === 'suite-nogpu');
    assert.equal(t4Row?.description, '1 × Tesla T4 (15 GiB) · ssh config');
    assert.match(t4Row?.tooltip ?? '', /1 × Tesla T4 \(15 GiB\), driver 550\.54\.15, CUDA 12\.4/);
    assert.equal(noRow?.description, 'no NVIDIA GPU · ssh config');
    assert.ok(rows.findIndex((r) => r.label === 'suite-nogpu') < rows.findIndex((r) => r.label === 'suite-t4'), 'ssh_config order kept');
  });
});
