// `npm run demo`'s promise, checked as a newcomer would use it: the demo starts code-server and its demo
// host (this machine over loopback SSH, a throwaway key), with autosave off; the own-script example runs there
// from "Start Training…", its log streams, and the GPU panel shows this machine's real state: no GPU here,
// said plainly, and its CPU and memory instead, never a simulated GPU (no nvidia-smi stand-in is on the demo
// host's PATH). The dashboard as it looks on a GPU host is the replay of a real H200 capture, labelled so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../harness/codeServer';
import { launchChromium } from '../harness/chromium';
import { openFile, startTrainingVia, waitForWorkbench, runCommand } from '../harness/workbench';
import { frameWithText } from '../harness/frames';
import { leftoverProcesses, stopPids } from '../support/leftovers';

const OUT = join(REPO_ROOT, '.test-output/e2e');
/** Copies kept for the README. */
const DOCS_SHOTS = join(REPO_ROOT, 'docs/screenshots');

interface Demo {
  child: ChildProcess;
  url: string;
  output: () => string;
  dir: string;
}

/** Starts the demo (`argv` in its own process group, as a terminal would) and waits for its URL. */
async function startDemo(argv: string[]): Promise<Demo> {
  const demoDir = mkdtempSync(join(tmpdir(), 'rft-demo-'));
  const child = spawn(argv[0]!, argv.slice(1), {
    cwd: REPO_ROOT,
    env: { ...process.env, RFT_DEMO_DIR: demoDir },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`the demo printed no URL:\n${out}`)), 240_000);
    const check = (): void => {
      const m = /Remote Fine-Tune demo: open (http:\/\/127\.0\.0\.1:\d+\/\S*)/.exec(out);
      if (m?.[1]) {
        clearTimeout(t);
        resolve(m[1]);
      } else setTimeout(check, 250);
    };
    child.once('exit', (c) => {
      clearTimeout(t);
      reject(new Error(`the demo exited (${String(c)}):\n${out}`));
    });
    check();
  });
  return { child, url, output: () => out, dir: demoDir };
}

/**
 * Stops the demo with `signal` (sent to `target`: the npm process, or the whole group as Ctrl+C does) and
 * asserts that it exits by itself and leaves no code-server, sshd or Chromium it started. Anything left is
 * killed by pid afterwards so the suite stays clean, but the test has failed by then.
 */
async function stopDemoAndCheck(demo: Demo, signal: NodeJS.Signals, target: 'process' | 'group'): Promise<void> {
  const pid = demo.child.pid!;
  // Only the demo's own children count: code-server keeps its state under RFT_DEMO_DIR, and the demo host's
  // sshd under the folder of the remote HOME the demo prints. A Chromium or sshd that another suite runs on
  // the same machine at the same time is not taken for the demo's.
  const sshdDir = /remote HOME (\S+?)\/home\)/.exec(demo.output())?.[1];
  assert.ok(sshdDir, `the demo names its host's HOME:\n${demo.output()}`);
  const ours = (): ReturnType<typeof leftoverProcesses> => [...leftoverProcesses(demo.dir), ...leftoverProcesses(sshdDir)];
  const started = ours();
  assert.ok(
    started.some((p) => p.kind === 'code-server') && started.some((p) => p.kind === 'sshd'),
    `the demo runs code-server and sshd: ${JSON.stringify(started)}`,
  );
  const exited = new Promise<number | null>((r) => {
    if (demo.child.exitCode !== null) r(demo.child.exitCode);
    else demo.child.once('exit', (c) => r(c));
  });
  process.kill(target === 'group' ? -pid : pid, signal);
  const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 20_000))]);
  const left = started.filter((p) => ours().some((q) => q.pid === p.pid));
  if (left.length > 0 || code === 'timeout') {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* gone */
    }
    await stopPids(left.map((p) => p.pid));
  }
  assert.notEqual(code, 'timeout', `the demo did not exit within 20 s of ${signal}:\n${demo.output()}`);
  assert.deepEqual(left, [], `left behind after ${signal}`);
  assert.match(demo.output(), new RegExp(`${signal}: stopping code-server and the demo host`));
}

test(
  'demo: npm run demo serves VS Code with a demo host and autosave off; the own-script example runs there, the GPU panel shows the host has no GPU and its CPU and memory, the H200 replay fills the dashboard; SIGTERM stops every child',
  { timeout: 420_000 },
  async () => {
    mkdirSync(OUT, { recursive: true });
    const demo = await startDemo([process.execPath, '--import', 'tsx', join(REPO_ROOT, 'scripts/demo.ts')]);
    const browser = await launchChromium();
    let ok = false;
    try {
      assert.match(demo.output(), /Demo host: "demo-host"/);
      // The built-in trainer's example has its tiny local model (the e2e suite runs it; here it must be ready).
      assert.ok(existsSync(join(demo.dir, 'workspace/demo-host-builtin-lora/tiny-model/config.json')), 'tiny model built for the built-in example');
      assert.match(demo.output(), /demo-host-builtin-lora\/finetune\.yaml \(the built-in trainer/);
      const settings = JSON.parse(readFileSync(join(demo.dir, 'user/User/settings.json'), 'utf8')) as Record<string, unknown>;
      assert.equal(settings['files.autoSave'], 'off', "the demo's VS Code saves only when asked");
      assert.match(demo.output(), /replay of a real H200 capture\/gpu\.csv/);
      const page = await browser.newPage({ viewport: { width: 1500, height: 950 } });
      await page.goto(demo.url);
      await waitForWorkbench(page);
      // A fresh demo has no runs: the Runs view offers Start Training and the walkthrough, inside the editor.
      await page.locator('.monaco-workbench .activitybar [aria-label^="Fine-Tune"]').first().click();
      const welcome = page.locator('.welcome-view-content', { hasText: 'No runs yet' }).first();
      await welcome.waitFor({ timeout: 60_000 });
      assert.match(await welcome.innerText(), /Start Training…[\s\S]*Get started: your first run/);
      await page.screenshot({ path: join(OUT, 'demo-runs-view-empty.png') });
      mkdirSync(DOCS_SHOTS, { recursive: true });
      copyFileSync(join(OUT, 'demo-runs-view-empty.png'), join(DOCS_SHOTS, 'runs-view-empty.png'));
      await welcome.locator('a', { hasText: 'Get started: your first run' }).click();
      await page.getByText('Your first fine-tuning run').first().waitFor({ timeout: 30_000 });
      await page.getByText('Add a GPU host or a cloud key').first().waitFor({ timeout: 30_000 });
      // The step's Markdown media renders in its own frame, beside the steps.
      await frameWithText(page, /Where the training runs[\s\S]*Add GPU Host/, 30_000);
      await page.screenshot({ path: join(OUT, 'demo-walkthrough.png') });
      copyFileSync(join(OUT, 'demo-walkthrough.png'), join(DOCS_SHOTS, 'walkthrough-first-run.png'));
      await runCommand(page, 'View: Close All Editors');
      await openFile(page, 'demo-host-own-script/finetune.yaml');
      await startTrainingVia(page, 'Fine-Tune: Start Training…', 'demo-host', join(OUT, 'demo-target-failed.png'));
      await frameWithText(page, /line \d+ of the run/, 120_000);
      await runCommand(page, 'Fine-Tune: Show GPU Dashboard');
      await frameWithText(page, /No NVIDIA GPU on this host/, 90_000);
      await frameWithText(page, /This host: CPU and memory[\s\S]*CPU \d+ % busy of \d+ CPUs?[\s\S]*Memory \d+ \/ \d+ MiB/, 60_000);
      await page.screenshot({ path: join(OUT, 'demo-no-gpu.png') });
      copyFileSync(join(OUT, 'demo-no-gpu.png'), join(DOCS_SHOTS, 'gpu-panel-cpu-only-host.png'));
      // The replay: its gpu.csv opened in the editor, then the GPU dashboard from the editor's title bar.
      await openFile(page, 'replay of a real H200 capture/gpu.csv', 'NVIDIA H200');
      await page.locator('.editor-actions [aria-label*="Show GPU Dashboard"]').first().click();
      await frameWithText(page, /GPUs of replay of a real H200 capture\/gpu\.csv[\s\S]*GPU 0: NVIDIA H200[\s\S]*Memory \d+ \/ 143771 MiB/, 60_000);
      await page.screenshot({ path: join(OUT, 'demo-gpu-replay-h200.png') });
      copyFileSync(join(OUT, 'demo-gpu-replay-h200.png'), join(DOCS_SHOTS, 'gpu-panel-h200-replay.png'));
      ok = true;
    } finally {
      await browser.close();
      if (ok) await stopDemoAndCheck(demo, 'SIGTERM', 'process');
      else
        try {
          process.kill(-demo.child.pid!, 'SIGKILL');
        } catch {
          /* gone */
        }
    }
  },
);

test('demo: `npm run demo` stopped with Ctrl+C (SIGINT to its process group) stops code-server and the demo host', { timeout: 300_000 }, async () => {
  const demo = await startDemo(['npm', 'run', '-s', 'demo']);
  await stopDemoAndCheck(demo, 'SIGINT', 'group');
});

test('demo: `npm run demo` stopped with SIGTERM to npm alone stops code-server and the demo host', { timeout: 300_000 }, async () => {
  const demo = await startDemo(['npm', 'run', '-s', 'demo']);
  await stopDemoAndCheck(demo, 'SIGTERM', 'process');
});
