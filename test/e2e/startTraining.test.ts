// End to end, as a person does it: Chromium drives a real VS Code (code-server) with the built VSIX
// installed; "Fine-Tune: Start Training on A100" runs an own-script spec (a real Python script that logs
// and writes an adapter). No cloud and no GPU exist here, so two stand-ins are named:
//  - an EMULATED Lambda Cloud (test/emulators/lambda.ts, its documented REST API on loopback) whose
//    instances' address is the loopback sshd;
//  - an nvidia-smi STAND-IN reporting an A100 (test/support/standins/nvidia-smi) on that host's PATH.
// The SSH server, the VS Code host, the browser, the runner and the script are real.
// Asserted: progress shown, log lines streaming in the log panel, the GPU panel showing the A100, the run
// completing, the adapter downloaded, the instance terminated in the emulator; the same on an existing
// SSH host; then a run survives "Developer: Reload Window" mid-run and its mirrored log equals the
// host's, every line once. Last, the Runs view after those runs: a row per run told apart by its start
// time, with step, loss, duration and GPU (screenshot runs-view-after-runs.png), and Compare Runs of the
// built-in trainer's run and an own-script run (screenshot compare-runs.png). Then, on the built-in trainer's
// finished run (it reports to TensorBoard), without training again: Try Adapter streams generated text from the
// host (try-adapter.png), Open TensorBoard shows the run's scalars in the Simple Browser (tensorboard.png), and
// Merge Adapter merges it on the host in the recommended dtype (merge-adapter.png). Push to Hub is not driven
// here (it needs a Hub token and the Hub emulator named in the host's env; test/integration covers it).
// Screenshots, all under .test-output/e2e: cloud-progress, cloud-end, start-training-log, start-training-gpu,
// reveal-adapter, start-training-end, builtin-metrics, builtin-end, reattach-after-reload, runs-view-after-runs,
// compare-runs, try-adapter, tensorboard, merge-adapter (.png). docs/screenshots/ keeps copies for the README.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { buildTinyModel, trainingPython as ensureTrainingPython } from '../harness/trainingVenv';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Frame, Page } from 'playwright-core';
import { REPO_ROOT, ensureCodeServer, installVsix, startCodeServer } from '../harness/codeServer';
import type { CodeServer } from '../harness/codeServer';
import { launchChromium } from '../harness/chromium';
import { buildVsix } from '../harness/vsix';
import { openFile, runCommand, startTrainingVia, waitForWorkbench } from '../harness/workbench';
import { clickDialogButton, frameWithText, waitForNotification } from '../harness/frames';
import { startSshd } from '../support/sshd';
import type { Sshd } from '../support/sshd';
import { clientFor } from '../support/sshClient';
import { LambdaEmulator } from '../emulators/lambda';

const HOST_ALIAS = 'e2e-a100';
const BUILTIN_STEPS = 300;
const OUT = join(REPO_ROOT, '.test-output/e2e');
const LAMBDA_KEY = 'e2e-lambda-key-0123456789abcdef';
let sshd: Sshd;
let lambda: LambdaEmulator;
let authorizeTimer: NodeJS.Timeout | undefined;
let cs: CodeServer;
let browser: Browser;
let ws: string;
let userDataDir: string;
/** The cached venv with CPU torch and the newest lock (scripts/ensure-training-venv.sh): the host's "GPU image" Python. */
let trainingPython: string;

interface StoredRun {
  id: string;
  name: string;
  status: string;
  remoteDir?: string;
  localDir?: string;
  artifactsDir?: string;
  exitCode?: number | null;
}

function storedRuns(): StoredRun[] {
  const file = join(userDataDir, 'User/globalStorage/remote-finetune.remote-finetune/runs.json');
  if (!existsSync(file)) return [];
  return (JSON.parse(readFileSync(file, 'utf8')) as { runs: StoredRun[] }).runs;
}

async function waitFor<T>(what: string, fn: () => T | undefined, timeoutMs: number, explain?: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${explain ? `\n${explain()}` : ''}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

function spec(name: string, steps: number, sleep: number, cloud = false): string {
  return [
    'version: 1',
    `name: ${name}`,
    `command: "python train.py --steps ${steps} --sleep ${sleep}"`,
    'target:',
    ...(cloud ? ['  provider: lambda', '  region: us-east-1'] : ['  provider: ssh', `  host: ${HOST_ALIAS}`]),
    '  gpu: A100-40GB',
    'outputs:',
    '  dir: outputs',
    '  download: [adapter]',
    'teardown:',
    '  policy: terminate',
    '',
  ].join('\n');
}

/** The metrics panel's frame once its chart holds `minPoints` steps; returns its "step N, loss X" description. */
async function metricsWithPoints(page: Page, minPoints: number, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const f of page.frames()) {
      try {
        const got = await f.evaluate(() => {
          const root = document.querySelector('[data-points]');
          return root
            ? { points: Number(root.getAttribute('data-points')), desc: root.querySelector('.charts')?.getAttribute('aria-description') ?? '' }
            : undefined;
        });
        if (got && got.points >= minPoints) return got.desc;
      } catch {
        /* a frame that navigated away */
      }
    }
    if (Date.now() > deadline) throw new Error(`the metrics panel showed fewer than ${minPoints} steps within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** The extension log's text: the files of its output channel under the user-data dir's logs (one per window). */
function extensionLogText(): string {
  const files: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('Remote Fine-Tune.log')) files.push(p);
    }
  };
  if (existsSync(join(userDataDir, 'logs'))) walk(join(userDataDir, 'logs'));
  return files.map((f) => readFileSync(f, 'utf8')).join('\n');
}

/**
 * What a failed wait on a reattach should show, since CI prints only the output: the stored record, the
 * extension host's lines about this extension (activation, or "Not activating … Timed out while searching"),
 * and the end of the extension's own log, for every window.
 */
function reattachEvidence(name: string): string {
  const exthost: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('exthost.log'))
        exthost.push(
          ...readFileSync(p, 'utf8')
            .split('\n')
            .filter((l) => /remote-finetune|Not activating/i.test(l))
            .map((l) => `${p.slice(userDataDir.length)}: ${l}`),
        );
    }
  };
  if (existsSync(join(userDataDir, 'logs'))) walk(join(userDataDir, 'logs'));
  return [
    `stored record: ${JSON.stringify(storedRuns().find((r) => r.name === name))}`,
    'extension host lines:',
    ...exthost.slice(-30),
    'extension log (end):',
    ...extensionLogText().split('\n').slice(-60),
  ].join('\n');
}

/** Whether the command palette lists a command (its `when` clause in contributes.menus.commandPalette). */
async function paletteLists(page: Page, title: string): Promise<boolean> {
  await page.keyboard.press('Escape').catch(() => undefined);
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ timeout: 30_000 });
  await input.fill(`>${title}`);
  // The palette filters as it opens; a moment lets a late list settle before absence is read.
  await new Promise((r) => setTimeout(r, 1500));
  const listed = await page.locator('.quick-input-list .monaco-list-row', { hasText: title }).count();
  await page.keyboard.press('Escape');
  return listed > 0;
}

/** The Runs view's run rows (label and description), once the Fine-Tune container is open. */
async function runsViewRows(page: Page): Promise<string[]> {
  const rows = page.locator('.monaco-list-row', { hasText: /\d\d:\d\d:\d\d · / });
  return rows.allInnerTexts();
}

function startOnHost(page: Page, targetText: string | RegExp = HOST_ALIAS): Promise<void> {
  return startTrainingVia(page, 'Fine-Tune: Start Training on A100', targetText, join(OUT, 'target-pick-failed.png'));
}

before(async () => {
  mkdirSync(OUT, { recursive: true });
  // A GPU image ships a Python with torch; this host's is the cached training venv (CPU torch, the real
  // transformers/peft/trl/datasets/accelerate), named to the bootstrap as RFT_PYTHON as a user would.
  trainingPython = ensureTrainingPython();
  sshd = await startSshd({ pathPrepend: [join(REPO_ROOT, 'test/support/standins')], env: { RFT_PYTHON: trainingPython } });
  lambda = await new LambdaEmulator(LAMBDA_KEY, { instanceIp: '127.0.0.1', bootMs: 1500 }).start();
  // The emulated cloud "installs" the launch's SSH key on its instance, as Lambda does with ssh_key_names.
  const authorized = new Set<string>();
  authorizeTimer = setInterval(() => {
    for (const k of lambda.keys)
      if (!authorized.has(k.public_key)) {
        authorized.add(k.public_key);
        sshd.authorize(k.public_key);
      }
  }, 100);
  const vsix = buildVsix();
  const entry = ensureCodeServer();
  const base = mkdtempSync(join(tmpdir(), 'rft-e2e-run-'));
  const extensionsDir = join(base, 'extensions');
  userDataDir = join(base, 'user');
  mkdirSync(extensionsDir, { recursive: true });
  installVsix(entry, vsix, extensionsDir, userDataDir);
  const client = clientFor(sshd, {
    alias: HOST_ALIAS,
    knownHostsInConfig: true,
    dir: base,
    // The emulated instance's address: the person's ssh_config names the user for it, as for any host.
    extraConfig: ['Host 127.0.0.1', `  User ${sshd.user}`],
  });
  ws = join(base, 'ws');
  cpSync(join(REPO_ROOT, 'examples'), ws, { recursive: true });
  for (const [dir, steps, sleep, cloud] of [
    ['e2e-cloud', 12, 0.2, true],
    ['e2e-run', 12, 0.2, false],
    ['e2e-reload', 40, 0.25, false],
  ] as const) {
    mkdirSync(join(ws, dir), { recursive: true });
    cpSync(join(REPO_ROOT, 'examples/demo-host-own-script/train.py'), join(ws, dir, 'train.py'));
    writeFileSync(join(ws, dir, 'finetune.yaml'), spec(dir, steps, sleep, cloud));
  }
  // The built-in trainer's example, with its tiny Llama-shaped model built here (random weights, no hub).
  buildTinyModel(trainingPython, join(ws, 'demo-host-builtin-lora', 'tiny-model'));
  writeFileSync(
    join(ws, 'demo-host-builtin-lora', 'finetune.yaml'),
    // Long enough (about 20 s of steps here) that the metrics panel is seen filling while the run is live.
    readFileSync(join(ws, 'demo-host-builtin-lora', 'finetune.yaml'), 'utf8')
      .replace('host: demo-host', `host: ${HOST_ALIAS}`)
      .replace('max_steps: 30', `max_steps: ${BUILTIN_STEPS}`)
      .replace('save_steps: 10', 'save_steps: 100')
      // TensorBoard event files for "Open TensorBoard" (the host's python has tensorboard: no install).
      .replace('logging_steps: 1\n', 'logging_steps: 1\n  report_to: [tensorboard]\n'),
  );
  cs = await startCodeServer(entry, {
    folder: ws,
    extensionsDir,
    userDataDir,
    settings: {
      'remoteFinetune.ssh.configFile': client.sshConfigPath,
      'remoteFinetune.lambda.apiUrl': `${lambda.url}/api/v1`,
      'remoteFinetune.cloud.sshPort': sshd.port,
    },
  });
  browser = await launchChromium();
});

after(async () => {
  if (authorizeTimer) clearInterval(authorizeTimer);
  await browser?.close();
  await cs?.stop();
  await lambda?.stop();
  await sshd?.stop();
});

test(
  'e2e: Start Training on A100 on a new (emulated) Lambda instance: progress, live logs, A100, completion, adapter, instance terminated',
  { timeout: 420_000 },
  async () => {
    const page = await browser.newPage({ viewport: { width: 1500, height: 950 } });
    try {
      await page.goto(`${cs.url}?folder=${encodeURIComponent(ws)}`);
      await waitForWorkbench(page);
      // No run yet: the commands that act on one are not in the palette (issue 18.7).
      assert.equal(await paletteLists(page, 'Fine-Tune: Run Again'), false, 'Run Again is hidden before any run');
      assert.equal(await paletteLists(page, 'Fine-Tune: Stop Run'), false, 'Stop Run is hidden before any run');
      // The API key goes into VS Code's secret storage through the extension's own command.
      await runCommand(page, 'Fine-Tune: Set Lambda Cloud API Key');
      const keyInput = page.locator('.quick-input-widget input[type="password"]');
      await keyInput.waitFor();
      await keyInput.fill(LAMBDA_KEY);
      await keyInput.press('Enter');
      await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
      await openFile(page, 'e2e-cloud/finetune.yaml');
      await startOnHost(page, /lambda gpu_1x_a100\b/);
      await waitForNotification(page, /launching gpu_1x_a100 on lambda|connecting|syncing/, 60_000);
      await page.screenshot({ path: join(OUT, 'cloud-progress.png') });
      // Lambda publishes no host keys: the new instance's key is shown once, under the instance's own name (a
      // recycled address is a new host, not a changed key), with the fingerprint to compare.
      const dialog = page.locator('.monaco-dialog-box', { hasText: /authenticity of host rft-lambda-/ }).first();
      await dialog.waitFor({ timeout: 120_000 });
      assert.ok((await dialog.innerText()).includes(sshd.hostKeyFingerprint), 'the dialog shows the host key fingerprint');
      await clickDialogButton(page, /Trust and Connect/);
      await frameWithText(page, /line \d+ of the run/, 120_000);
      await runCommand(page, 'Fine-Tune: Show GPU Dashboard');
      await frameWithText(page, /A100/, 60_000);
      const text = await waitForNotification(page, /e2e-cloud completed/, 180_000);
      assert.match(text, /adapter downloaded/);
      assert.match(text, /Instance terminated/);
      const run = storedRuns().find((r) => r.name === 'e2e-cloud');
      assert.equal(run?.status, 'completed');
      assert.ok(run?.artifactsDir && existsSync(join(run.artifactsDir, 'adapter_config.json')), 'adapter downloaded');
      // In the emulated cloud: one instance was launched for the run, and it is terminated.
      const launched = [...lambda.instances.values()];
      assert.equal(launched.length, 1);
      assert.equal(lambda.billing().length, 0, 'no instance left running');
      assert.ok(lambda.calls.includes('terminate'));
      // A run exists now (ended): Run Again is offered, Stop Run (no live run) still is not.
      assert.equal(await paletteLists(page, 'Fine-Tune: Run Again'), true, 'Run Again is listed once a run exists');
      assert.equal(await paletteLists(page, 'Fine-Tune: Stop Run'), false, 'Stop Run needs a live run');
    } finally {
      await page.screenshot({ path: join(OUT, 'cloud-end.png') }).catch(() => undefined);
      await page.close();
    }
  },
);

test(
  'e2e: Start Training on A100 runs an own script on the SSH host: progress, live logs, A100 on the GPU panel, completion, adapter',
  { timeout: 420_000 },
  async () => {
    const page = await browser.newPage({ viewport: { width: 1500, height: 950 } });
    try {
      await page.goto(`${cs.url}?folder=${encodeURIComponent(ws)}`);
      await waitForWorkbench(page);
      await openFile(page, 'e2e-run/finetune.yaml');
      await startOnHost(page);
      // Progress of the stages is reported in a notification.
      await waitForNotification(page, /Fine-Tune: e2e-run|syncing|connecting|running/, 60_000);
      // The log panel opens on the run and streams its lines.
      const logFrame = await frameWithText(page, /line \d+ of the run/, 120_000);
      assert.ok(logFrame);
      await page.screenshot({ path: join(OUT, 'start-training-log.png') });
      // The GPU panel shows the (stand-in) A100.
      await runCommand(page, 'Fine-Tune: Show GPU Dashboard');
      await frameWithText(page, /A100/, 60_000);
      await page.screenshot({ path: join(OUT, 'start-training-gpu.png') });
      // The run completes and the adapter comes back into the workspace.
      const text = await waitForNotification(page, /e2e-run completed/, 180_000);
      assert.match(text, /adapter downloaded/);
      const run = storedRuns().find((r) => r.name === 'e2e-run');
      assert.equal(run?.status, 'completed');
      assert.ok(run?.artifactsDir && existsSync(join(run.artifactsDir, 'adapter_config.json')), 'adapter downloaded into the workspace');
      assert.ok(run.artifactsDir.startsWith(join(ws, 'e2e-run', 'outputs')));
      // The end notification's buttons (issue 18.3); Reveal Adapter shows the downloaded adapter in the Explorer.
      const toast = page.locator('.notifications-toasts .notification-toast', { hasText: /e2e-run completed/ }).first();
      const buttons = (await toast.locator('.monaco-button').allInnerTexts()).map((b) => b.trim()).filter((b) => b);
      assert.deepEqual(buttons, ['Reveal Adapter', 'Open Metrics', 'Show Logs']);
      await toast.locator('.monaco-button', { hasText: 'Reveal Adapter' }).click();
      await page
        .locator('.explorer-folders-view .monaco-list-row.selected, .explorer-folders-view .monaco-list-row.focused', { hasText: 'adapter' })
        .first()
        .waitFor({ timeout: 30_000 });
      await page.screenshot({ path: join(OUT, 'reveal-adapter.png') });
      // The extension log records the download and the end, with step, loss, length and the adapter's place.
      const log = await waitFor(
        'the end of e2e-run in the extension log',
        () => {
          const t = extensionLogText();
          return t.includes(`[${run.id}] e2e-run completed`) ? t : undefined;
        },
        30_000,
      );
      assert.match(log, new RegExp(`\\[${run.id}\\] downloaded adapter \\S+ to \\S+ \\([\\d.]+ MB\\)`));
      assert.match(
        log,
        new RegExp(
          `\\[${run.id}\\] e2e-run completed \\(step 12, loss [\\d.]+, [^)]+\\); adapter at ${run.artifactsDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`,
        ),
      );
      // The status bar keeps the run as finished, at its last step: 12 steps end at step 12.
      await page
        .locator('.statusbar-item', { hasText: /e2e-run finished · step 12 · loss [\d.]+/ })
        .first()
        .waitFor({ timeout: 30_000 });
      // The Runs view lists it under its host: start time, completed, step, loss, duration, GPU.
      await page.locator('.monaco-workbench .activitybar [aria-label^="Fine-Tune"]').first().click();
      const row = page
        .locator('.monaco-list-row', { hasText: 'e2e-run' })
        .filter({ hasText: /\d\d:\d\d:\d\d · completed · step 12 · loss [\d.]+ · (\d+s|\d+m \d\ds) · A100-40GB/ })
        .first();
      await row.waitFor({ timeout: 30_000 });
      await page.locator('.monaco-list-row', { hasText: HOST_ALIAS }).first().waitFor();
    } finally {
      await page.screenshot({ path: join(OUT, 'start-training-end.png') }).catch(() => undefined);
      await page.close();
    }
  },
);

test(
  'e2e: the built-in trainer (no own script) through Start Training…: bootstrap on the host, real training of a tiny model, live loss in the metrics panel, adapter downloaded and reloadable',
  { timeout: 600_000 },
  async () => {
    const page = await browser.newPage({ viewport: { width: 1500, height: 950 } });
    try {
      await page.goto(`${cs.url}?folder=${encodeURIComponent(ws)}`);
      await waitForWorkbench(page);
      await openFile(page, 'demo-host-builtin-lora/finetune.yaml');
      // Enter on the GPU picker keeps the spec's GPU (A100-40GB), highlighted for that.
      await startTrainingVia(page, 'Fine-Tune: Start Training…', HOST_ALIAS, join(OUT, 'builtin-target-failed.png'), 'spec');
      // Real steps of the real Trainer: the log panel (opened at start) shows its loss lines, then the metrics
      // panel fills while the run is still running.
      await frameWithText(page, /'loss': '\d/, 240_000);
      await runCommand(page, 'Fine-Tune: Show Training Metrics');
      const desc = await metricsWithPoints(page, 3, 120_000);
      assert.equal(storedRuns().find((r) => r.name === 'demo-builtin-lora')?.status, 'running', 'the panel filled while the run was live');
      assert.match(desc, /^step \d+, loss \d+(\.\d+)?$/, desc);
      await page.screenshot({ path: join(OUT, 'builtin-metrics.png') });
      const text = await waitForNotification(page, /demo-builtin-lora completed/, 300_000);
      assert.match(text, /adapter downloaded/);
      const run = storedRuns().find((r) => r.name === 'demo-builtin-lora');
      assert.equal(run?.status, 'completed');
      assert.equal((run as { gpu?: string }).gpu, 'A100-40GB', "the spec's GPU, kept with Enter");
      // events.jsonl mirrored: started → metrics (finite, falling loss) → checkpoint → finished at step 30.
      const events = readFileSync(join(run.localDir!, 'events.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const kinds = events.map((e) => e.type).filter((k) => k === 'started' || k === 'metrics' || k === 'checkpoint' || k === 'finished');
      assert.equal(kinds[0], 'started');
      assert.equal(kinds[kinds.length - 1], 'finished');
      assert.ok(kinds.includes('checkpoint'), `a checkpoint event: ${kinds.join(',')}`);
      const losses = events.filter((e) => e.type === 'metrics' && typeof e.loss === 'number').map((e) => e.loss as number);
      assert.ok(losses.length >= 10 && losses.every(Number.isFinite), `losses: ${losses.join(',')}`);
      const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
      assert.ok(mean(losses.slice(-5)) < mean(losses.slice(0, 5)), `loss falls: ${losses.join(',')}`);
      assert.equal(
        Math.max(...events.filter((e) => e.type === 'metrics').map((e) => e.step as number)),
        BUILTIN_STEPS,
        `a ${BUILTIN_STEPS}-step run ends at step ${BUILTIN_STEPS}`,
      );
      assert.deepEqual(
        // The speed plan (speed.py) is reported as a warning event coded speed-plan on every built-in run; any other is a problem.
        events.filter((e) => e.type === 'warning' && e.code !== 'speed-plan').map((e) => e.message),
        [],
        'the example runs without a warning',
      );
      // The bootstrap built the run's venv on the host on top of RFT_PYTHON, with the lock for its torch.
      const boot = readFileSync(join(run.remoteDir!.replace(/^~\//, `${sshd.home}/`), 'bootstrap.json'), 'utf8')
        .trim()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .pop()!;
      const chosen = JSON.parse(boot) as { lock?: string; python?: string; base_python?: string };
      assert.equal(chosen.lock, 'hf5-torch2.6plus.txt');
      assert.equal(chosen.base_python, trainingPython);
      assert.ok(chosen.python?.startsWith(sshd.home), `the run's venv lives on the host: ${chosen.python}`);
      // The adapter came back into the workspace and loads with peft onto the base model.
      assert.ok(run.artifactsDir && existsSync(join(run.artifactsDir, 'adapter_config.json')), 'adapter downloaded');
      assert.ok(run.artifactsDir.startsWith(join(ws, 'demo-host-builtin-lora', 'outputs')));
      const probe = [
        'import sys, torch',
        'from transformers import AutoModelForCausalLM',
        'from peft import PeftModel',
        'base = AutoModelForCausalLM.from_pretrained(sys.argv[1])',
        'm = PeftModel.from_pretrained(base, sys.argv[2])',
        'n = sum(p.numel() for k, p in m.named_parameters() if "lora_" in k)',
        'out = m(torch.tensor([[1, 2, 3, 4]])).logits',
        'assert torch.isfinite(out).all()',
        'print("RELOADED", n)',
      ].join('\n');
      const reloaded = execFileSync(trainingPython, ['-c', probe, join(ws, 'demo-host-builtin-lora', 'tiny-model'), run.artifactsDir], { encoding: 'utf8' });
      const n = Number(/RELOADED (\d+)/.exec(reloaded)?.[1]);
      assert.ok(n > 0, `LoRA parameters in the reloaded adapter: ${reloaded}`);
    } finally {
      await page.screenshot({ path: join(OUT, 'builtin-end.png') }).catch(() => undefined);
      await page.close();
    }
  },
);

test('e2e: a run survives Developer: Reload Window mid-run and reattaches with no lost or repeated line', { timeout: 420_000 }, async () => {
  const page = await browser.newPage({ viewport: { width: 1500, height: 950 } });
  try {
    await page.goto(`${cs.url}?folder=${encodeURIComponent(ws)}`);
    await waitForWorkbench(page);
    await openFile(page, 'e2e-reload/finetune.yaml');
    await startOnHost(page);
    await frameWithText(page, /line [3-9] of the run/, 120_000);
    const before = storedRuns().find((r) => r.name === 'e2e-reload');
    assert.equal(before?.status, 'running');
    // The status bar follows the active run: its name, step and loss.
    await page
      .locator('.statusbar-item', { hasText: /e2e-reload · step \d+ · loss [\d.]+/ })
      .first()
      .waitFor({ timeout: 60_000 });
    await runCommand(page, 'Developer: Reload Window');
    await waitForWorkbench(page);
    const done = await waitFor(
      'the reloaded window to finish the run',
      () => {
        const r = storedRuns().find((x) => x.name === 'e2e-reload');
        return r && r.status === 'completed' ? r : undefined;
      },
      240_000,
      () => reattachEvidence('e2e-reload'),
    );
    const local = readFileSync(join(done.localDir!, 'output.log'), 'utf8');
    const remote = readFileSync(join(done.remoteDir!.replace(/^~\//, `${sshd.home}/`), 'output.log'), 'utf8');
    assert.equal(local, remote, "the mirrored log equals the host's byte for byte");
    for (let i = 1; i <= 40; i++) assert.equal(local.split(`line ${i} of the run\n`).length - 1, 1, `line ${i} exactly once`);
    await page.screenshot({ path: join(OUT, 'reattach-after-reload.png') });
  } finally {
    await page.close();
  }
});

test(
  'e2e: the Runs view after the runs tells them apart: start time, status, step, loss, duration and GPU on each row (screenshot)',
  { timeout: 120_000 },
  async () => {
    const page = await browser.newPage({ viewport: { width: 1500, height: 950 } });
    try {
      await page.goto(`${cs.url}?folder=${encodeURIComponent(ws)}`);
      await waitForWorkbench(page);
      await page.locator('.monaco-workbench .activitybar [aria-label^="Fine-Tune"]').first().click();
      const ended = storedRuns().filter((r) => r.status === 'completed');
      assert.ok(ended.length >= 3, `three or more runs ended: ${ended.map((r) => r.name).join(', ')}`);
      let texts: string[] = [];
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        texts = await runsViewRows(page);
        if (texts.length >= ended.length) break;
        await new Promise((r) => setTimeout(r, 500));
      }
      assert.ok(texts.length >= 3, `rows: ${JSON.stringify(texts)}`);
      const shape = /(\d\d:\d\d:\d\d) · completed · step \d+ · loss [\d.]+ · (\d+s|\d+m \d\ds|\d+h \d\dm) · A100-\d+GB/;
      const parsed = texts.map((t) => shape.exec(t.replace(/\s+/g, ' ')));
      parsed.forEach((m, i) => assert.ok(m, `row ${i}: ${texts[i]}`));
      assert.equal(new Set(parsed.map((m) => m![1])).size, parsed.length, `each run has its own start time: ${JSON.stringify(texts)}`);
      await page.screenshot({ path: join(OUT, 'runs-view-after-runs.png') });
    } finally {
      await page.close();
    }
  },
);

test(
  'e2e: Fine-Tune: Compare Runs puts two recorded runs side by side: summary, final metrics, loss curves, config diff (screenshot)',
  { timeout: 120_000 },
  async () => {
    const page = await browser.newPage({ viewport: { width: 1500, height: 950 } });
    try {
      await page.goto(`${cs.url}?folder=${encodeURIComponent(ws)}`);
      await waitForWorkbench(page);
      await runCommand(page, 'Fine-Tune: Compare Runs');
      // The multi-select quick pick of recorded runs: tick the built-in trainer's run and the own-script run.
      const input = page.locator('.quick-input-widget input');
      for (const name of ['demo-builtin-lora', 'e2e-run']) {
        await input.fill(name);
        const row = page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first();
        await row.waitFor({ timeout: 30_000 });
        // A click on the entry's label toggles its checkbox (VS Code's quick pick list renderer).
        await row.locator('label.quick-input-list-label').first().click();
      }
      await input.fill('');
      await input.press('Enter');
      const frame = await frameWithText(page, /TrainingArguments \(as used\)/, 60_000);
      const heads = await frame.locator('table.summary thead th').allInnerTexts();
      // Columns carry each run's start time after its name (runDisplayName).
      assert.deepEqual(new Set(heads.slice(1).map((h) => h.split(' · ')[0])), new Set(['demo-builtin-lora', 'e2e-run']));
      // The built-in trainer's resolved arguments came back from the host; the own script has none.
      const lr = await frame.locator('table.diff[data-section="trainingArgs"] tr[data-key="learning_rate"] td').allInnerTexts();
      assert.equal(lr.length, 2);
      assert.ok(lr.includes('0.005') && lr.includes('not set'), `learning_rate: ${lr.join(' | ')}`);
      assert.equal(await frame.locator('table.metrics tr[data-metric="loss"] td').count(), 2);
      assert.ok((await frame.locator('figure[data-metric="loss"] canvas').count()) > 0, 'the loss curves are drawn');
      await page.screenshot({ path: join(OUT, 'compare-runs.png') });
    } finally {
      await page.close();
    }
  },
);

/** Answers the "Which run?" quick pick of a run command with the run of that name. */
async function pickRunNamed(page: Page, name: string): Promise<void> {
  const pick = page.locator('.quick-input-widget', { hasText: 'Which run?' });
  await pick.waitFor({ timeout: 30_000 }).catch(async () => {
    const quickInput = await page
      .locator('.quick-input-widget')
      .first()
      .innerText({ timeout: 1000 })
      .catch(() => '(none)');
    const toasts = await page
      .locator('.notifications-toasts .notification-toast')
      .allInnerTexts()
      .catch(() => []);
    throw new Error(
      `the "Which run?" picker did not open (looking for ${name}); quick input: ${quickInput.replace(/\s+/g, ' ').slice(0, 300)}; ` +
        `notifications: ${toasts.map((t) => t.replace(/\s+/g, ' ')).join(' | ') || '(none)'}; focus in: ${await page.evaluate(() => document.activeElement?.tagName ?? '?')}`,
    );
  });
  const input = page.locator('.quick-input-widget input');
  await input.fill(name);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first().waitFor({ timeout: 10_000 });
  await input.press('Enter');
}

/** Takes the keyboard back from a webview's iframe, so the palette's F1 reaches the workbench. */
async function focusWorkbench(page: Page): Promise<void> {
  await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
}

/** The text of the newest error notification, for a failure message. */
async function errorToasts(page: Page): Promise<string> {
  const texts = await page.locator('.notifications-toasts .notification-toast', { has: page.locator('.codicon-error') }).allInnerTexts();
  return texts.map((t) => t.replace(/\s+/g, ' ')).join(' | ') || '(no error notification)';
}

/** The first frame whose document title is `title` (the Simple Browser's page is an iframe inside its webview). */
async function frameTitled(page: Page, title: string, timeoutMs: number): Promise<Frame> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const f of page.frames()) {
      try {
        if ((await f.title()) === title) return f;
      } catch {
        /* a frame that navigated away */
      }
    }
    if (Date.now() > deadline) throw new Error(`no frame titled ${title} within ${timeoutMs} ms; errors shown: ${await errorToasts(page)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

test(
  "e2e: on the built-in trainer's finished run: Try Adapter streams text, Open TensorBoard shows its scalars, Merge Adapter merges on the host (screenshots)",
  { timeout: 480_000 },
  async () => {
    const run = storedRuns().find((r) => r.name === 'demo-builtin-lora');
    assert.equal(run?.status, 'completed', 'the built-in trainer run of the earlier test finished');
    const remoteDir = run.remoteDir!.replace(/^~\//, `${sshd.home}/`);
    const page = await browser.newPage({ viewport: { width: 1500, height: 950 } });
    try {
      await page.goto(`${cs.url}?folder=${encodeURIComponent(ws)}`);
      await waitForWorkbench(page);

      // 1. Try Adapter: the host's run venv loads the base model with the adapter and streams tokens into the panel.
      await runCommand(page, 'Fine-Tune: Try Adapter…');
      await pickRunNamed(page, 'demo-builtin-lora');
      const tryFrame = await frameWithText(page, /Try the adapter of demo-builtin-lora/, 60_000);
      await tryFrame.locator('#temperature').fill('0');
      await tryFrame.locator('#max-tokens').fill('24');
      await tryFrame.locator('#prompt').fill('Write one sentence about fine-tuning.');
      await tryFrame.locator('#generate').click();
      const state = await tryFrame
        .waitForFunction(
          () => {
            const ex = document.querySelector('article.exchange');
            const s = ex?.getAttribute('data-state');
            return s && s !== 'generating' ? s : undefined;
          },
          undefined,
          { timeout: 180_000, polling: 500 },
        )
        .then((h) => h.jsonValue())
        .catch(async () => {
          const status = await tryFrame
            .locator('#status')
            .innerText()
            .catch(() => '?');
          throw new Error(`no answer finished within 180 s; panel status: ${status}`);
        });
      const answer = (await tryFrame.locator('article.exchange .output').first().textContent()) ?? '';
      const problem = await tryFrame.locator('#problem').innerText();
      assert.equal(state, 'done', `the generation ended ${state}: ${problem}`);
      assert.ok(answer.length > 0, `streamed text arrived in the panel (meta: ${await tryFrame.locator('article.exchange .meta').innerText()})`);
      assert.ok(Number(await tryFrame.locator('article.exchange').getAttribute('data-pieces')) >= 1, 'the answer came in streamed pieces');
      await page.screenshot({ path: join(OUT, 'try-adapter.png') });

      // 2. Open TensorBoard: started on the host with the run's python, reached over a forwarded port, shown in the Simple Browser.
      await focusWorkbench(page);
      await runCommand(page, 'Fine-Tune: Open TensorBoard');
      await pickRunNamed(page, 'demo-builtin-lora');
      const tb = await frameTitled(page, 'TensorBoard', 120_000);
      // The run's scalars as TensorBoard serves them to its page (relative to the page, so through any proxy).
      let scalarTags = '';
      const tagDeadline = Date.now() + 60_000;
      while (!scalarTags.includes('train/loss') && Date.now() < tagDeadline) {
        scalarTags = await tb.evaluate(() => fetch('data/plugin/scalars/tags').then((r) => r.text())).catch((e: Error) => `fetch failed: ${e.message}`);
        if (!scalarTags.includes('train/loss')) await new Promise((r) => setTimeout(r, 1000));
      }
      assert.ok(scalarTags.includes('train/loss'), `TensorBoard serves the run's train/loss scalar: ${scalarTags.slice(0, 300)}`);
      assert.ok(existsSync(join(remoteDir, 'tensorboard')), "the runner wrote event files to the run's tensorboard folder");
      // Give the dashboard a bounded moment to draw its scalar cards (the "train" group; cards below the fold,
      // train/loss among them, are drawn only when scrolled to) before the screenshot.
      const drawn = await tb
        .waitForFunction(() => document.body.innerText.includes('train/'), undefined, { timeout: 30_000 })
        .then(() => true)
        .catch(() => false);
      if (!drawn) console.log('note: the TensorBoard page had drawn no train/ card within 30 s; the screenshot shows it as it was');
      await page.screenshot({ path: join(OUT, 'tensorboard.png') });
      // The TensorBoard page keeps working in its nested iframe (it refreshes, the Simple Browser overlays it) and
      // may take the focus, which closes a quick pick opened meanwhile: its tab is closed before the next command.
      const tbTab = page.locator('.tabs-container .tab', { hasText: 'Simple Browser' }).first();
      await tbTab.click();
      await tbTab.locator('.codicon-close').click();
      await tbTab.waitFor({ state: 'detached', timeout: 10_000 });

      // 3. Merge Adapter: the recommended dtype for an A100 is bf16 (device auto: the CPU here); the host merges.
      await focusWorkbench(page);
      await runCommand(page, 'Fine-Tune: Merge Adapter');
      await pickRunNamed(page, 'demo-builtin-lora');
      await page.locator('.quick-input-widget', { hasText: 'Merge the adapter of demo-builtin-lora' }).waitFor({ timeout: 30_000 });
      const firstDtype = await page.locator('.quick-input-list .monaco-list-row').first().innerText();
      assert.match(firstDtype.replace(/\s+/g, ' '), /bf16.*recommended: A100-40GB supports bf16/, firstDtype);
      await page.locator('.quick-input-widget input').press('Enter');
      const merged = await waitForNotification(page, /Merged model saved on|Merge failed/, 240_000);
      assert.match(merged, /Merged model saved on e2e-a100 in \S+ \(bf16, [\d.]+ GB\)/, merged);
      const where = /in (\S+) \(bf16/.exec(merged)![1]!;
      const configs = execFileSync('find', [sshd.home, '-path', `*${where.replace(/^.*\//, '')}/config.json`], { encoding: 'utf8' }).trim();
      assert.ok(configs.length > 0, `a merged model (config.json) under ${where} on the host`);
      await page.screenshot({ path: join(OUT, 'merge-adapter.png') });
    } finally {
      await page.screenshot({ path: join(OUT, 'run-actions-end.png') }).catch(() => undefined);
      await page.close();
    }
  },
);
