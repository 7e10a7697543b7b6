// `npm run demo`'s promise, checked as a newcomer would use it: the demo starts code-server and its demo
// host (this machine over loopback SSH, a throwaway key), the own-script example runs there from "Start
// Training…", its log streams, and the GPU panel shows this machine's real state: no GPU here, said
// plainly, never simulated (no nvidia-smi stand-in is on the demo host's PATH).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../harness/codeServer';
import { launchChromium } from '../harness/chromium';
import { openFile, startTrainingVia, waitForWorkbench, runCommand } from '../harness/workbench';
import { frameWithText } from '../harness/frames';
import { leftoverProcesses, stopPids } from '../support/leftovers';

const OUT = join(REPO_ROOT, '.test-output/e2e');

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
  'demo: npm run demo serves VS Code with a demo host; the own-script example runs there and the GPU panel says there is no GPU; SIGTERM stops every child',
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
      const page = await browser.newPage({ viewport: { width: 1500, height: 950 } });
      await page.goto(demo.url);
      await waitForWorkbench(page);
      await openFile(page, 'demo-host-own-script/finetune.yaml');
      await startTrainingVia(page, 'Fine-Tune: Start Training…', 'demo-host', join(OUT, 'demo-target-failed.png'));
      await frameWithText(page, /line \d+ of the run/, 120_000);
      await runCommand(page, 'Fine-Tune: Show GPU Dashboard');
      await frameWithText(page, /No NVIDIA GPU on this host/, 90_000);
      await page.screenshot({ path: join(OUT, 'demo-no-gpu.png') });
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
