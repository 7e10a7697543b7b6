/// <reference lib="dom" />
// Host state in the log, GPU and metrics pages (issue 38.3), in real headless Chromium over the real chain: a
// real sshd, the run's files mirrored by runMirror.ts, the link tracked by hostLink.ts, the run read through
// RunPanelsContext's source. The host goes silent (its sshd processes SIGSTOPped, as in the keepalive test of
// test/integration/ssh/connect.test.ts) and comes back; then its sampler stops while it answers.
import { after, before, test } from 'node:test';
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { SHOTS, launchBrowser, missingPrerequisite, openPanel } from './harness';
import type { PanelPage } from './harness';
import { streamFile } from './logHost';
import type { StreamingHost } from './logHost';
import { startSshd } from '../support/sshd';
import type { Sshd } from '../support/sshd';
import { clientFor } from '../support/sshClient';
import { SshHost } from '../../src/core/ssh/reconnect';
import { mirrorRun } from '../../src/core/runs/sync/runMirror';
import { HostLinkTracker, linkCallbacks } from '../../src/core/runs/sync/hostLink';
import type { HostLink } from '../../src/core/runs/sync/hostLink';
import { RunStore } from '../../src/core/runs/store/runStore';
import type { RunRecord } from '../../src/core/runs/store/runRecord';
import { RunPanelsContext } from '../../src/features/runs/runPanelsContext';
import type { HostLinks } from '../../src/features/runs/runPanelsContext';
import { LocalRunDataSource } from '../../src/features/panels/localRunSource';
import { hostStateLine, onLinkedHostState } from '../../src/features/panels/linkedHostState';
import type { RunDataSource } from '../../src/features/panels/runDataSource';
import type { HostState } from '../../src/protocol/gpu';

const skip = missingPrerequisite();
if (skip) console.log(`# skipping the host state page tests: ${skip}`);
let browser: Browser;
let sshd: Sshd | undefined;
const dir = mkdtempSync(join(tmpdir(), 'rft-hoststate-'));
before(async () => {
  if (skip) return;
  browser = await launchBrowser();
  sshd = await startSshd();
});
after(async () => {
  await browser?.close();
  await sshd?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const gpuLine = (i: number): string => `${(Date.now() / 1000).toFixed(3)}, 0, NVIDIA A100-SXM4-40GB, ${i % 100}, 20, 10000, 40960, 50, 120.00, 400.00, 1400\n`;

/** What the three panel hosts do with a source's host state (gpuPanel.ts, logPanel.ts, metricsPanel.ts), minus vscode. */
/** The log page's init and lines come from the real streamer (logHost.ts); the status line is sent after it, as logPanel.ts does. */
function attachPages(source: Pick<RunDataSource, 'onHostState' | 'onGpuSamples' | 'label' | 'host'>, log: PanelPage, gpu: PanelPage, metrics: PanelPage): void {
  void gpu.post({ type: 'init', title: `GPUs of ${source.label}`, host: source.host });
  void metrics.post({ type: 'run', info: { key: 'primary', source: 'events', name: source.label, state: 'running' }, reset: true, points: [] });
  source.onHostState((state: HostState) => {
    void gpu.post({ type: 'hostState', state });
    const text = hostStateLine(state);
    if (text !== undefined) {
      void log.post({ type: 'status', state: text ? 'unreachable' : 'live', text });
      void metrics.post({ type: 'hostState', text });
    }
  });
  source.onGpuSamples((samples) => void gpu.post({ type: 'samples', samples }));
}

const text = (p: PanelPage, sel: string): Promise<string> => p.page.evaluate((s) => document.querySelector(s)?.textContent ?? '', sel);
const visible = (p: PanelPage, sel: string): Promise<boolean> => p.page.evaluate((s) => !(document.querySelector(s) as HTMLElement | null)?.hidden, sel);

async function until(what: string, cond: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const t0 = Date.now();
  while (!(await cond())) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return Date.now() - t0;
}

test(
  'a host that goes silent shows as reconnecting, then unreachable, in the log, GPU and metrics pages, and clears when it answers again',
  { skip, timeout: 120_000 },
  async () => {
    const s = sshd!;
    const c = clientFor(s, { options: { keepaliveIntervalMs: 1000, keepaliveCountMax: 1, readyTimeoutMs: 1500 } });
    const host = new SshHost({ host: c.alias }, c.options, { initialMs: 200, maxMs: 800 });
    const remote = join(s.home, 'run');
    mkdirSync(remote, { recursive: true });
    for (const f of ['output.log', 'events.jsonl']) writeFileSync(join(remote, f), '');
    writeFileSync(join(remote, 'gpu.csv'), gpuLine(0));
    let i = 1;
    const sampler = setInterval(() => appendFileSync(join(remote, 'gpu.csv'), gpuLine(i++)), 200);

    // The run manager's part: one run's link, in memory, told to whoever listens (RunManager.onHostLink).
    const linkListeners = new Set<(id: string, l: HostLink) => void>();
    const tracker = new HostLinkTracker((l) => linkListeners.forEach((f) => f('r1', l)), { unreachableAfterMs: 2500 });
    const links: HostLinks = {
      hostLink: (id) => (id === 'r1' ? tracker.current : undefined),
      onHostLink: (f) => {
        linkListeners.add(f);
        return { dispose: () => linkListeners.delete(f) };
      },
    };
    const local = join(dir, 'mirror');
    const abort = new AbortController();
    const mirrored = mirrorRun(host, remote, local, { signal: abort.signal, callbacks: linkCallbacks(tracker, 'gpu-box') });
    const store = new RunStore(join(dir, 'runs.json'));
    store.add({
      id: 'r1',
      name: 'silent-host',
      createdAt: new Date().toISOString(),
      updatedAt: new Date().toISOString(),
      status: 'running',
      host: 'gpu-box',
      localDir: local,
      specPath: '/ws/finetune.yaml',
      specHash: 'h',
      provider: 'ssh',
      workspaceDir: '/ws',
      origin: 'here',
      teardownPolicy: 'terminate',
    } as RunRecord);
    const ctx = new RunPanelsContext(store, () => local, links);
    const [log, gpu, metrics] = [await openPanel(browser, 'log'), await openPanel(browser, 'gpu'), await openPanel(browser, 'metrics')];
    const stopped: number[] = [];
    let streaming: StreamingHost | undefined;
    try {
      // The mirror's first bytes land before the source reads them: wait for the local copy.
      await until('the first mirrored samples', async () => (await import('node:fs')).existsSync(join(local, 'gpu.csv')), 15_000);
      const source = ctx.activeRun()!;
      streaming = await streamFile(log, join(local, 'output.log'));
      attachPages(source, log, gpu, metrics);
      await until('live GPU charts', async () => (await gpu.page.$$('canvas')).length > 0 && !(await visible(gpu, '#hostState')), 15_000);
      assert.equal(await visible(metrics, '#hostState'), false, 'nothing said while the host answers');

      // Silent: the connection's sshd and the listener stop answering (TCP stays up), like a laptop's dead Wi-Fi.
      const conn = execFileSync('pgrep', ['-P', String(s.pid)], { encoding: 'utf8' })
        .trim()
        .split('\n')
        .map(Number);
      for (const p of [s.pid, ...conn]) {
        process.kill(p, 'SIGSTOP');
        stopped.push(p);
      }
      const tSilent = Date.now();
      await until(
        '"Host not answering … reconnecting" in the GPU page',
        async () => /Host not answering since .*reconnecting/.test(await text(gpu, '#hostState')),
        20_000,
      );
      const reconnectingMs = Date.now() - tSilent;
      let shown: string[] = [];
      await until(
        '"Host unreachable since" in all three pages',
        async () => {
          shown = [await text(gpu, '#hostState'), await text(log, '#status'), await text(metrics, '#hostState')];
          return shown.every((t) => /Host unreachable since \d/.test(t));
        },
        20_000,
      ).catch((e: Error) => {
        throw new Error(`${e.message}; the pages say ${JSON.stringify(shown)}`);
      });
      const unreachableMs = Date.now() - tSilent;
      assert.equal(await visible(metrics, '#hostState'), true);
      await gpu.page.screenshot({ path: join(SHOTS, 'gpu-host-unreachable.png') });
      await log.page.screenshot({ path: join(SHOTS, 'log-host-unreachable.png') });
      await metrics.page.screenshot({ path: join(SHOTS, 'metrics-host-unreachable.png') });

      // Back: the listener answers again; the stopped connection is gone for good (SshHost makes a new one).
      for (const p of conn) process.kill(p, 'SIGKILL');
      process.kill(s.pid, 'SIGCONT');
      stopped.length = 0;
      const tBack = Date.now();
      await until(
        'every page to clear the host state',
        async () => {
          const [g, l, m] = [await visible(gpu, '#hostState'), await text(log, '#status'), await visible(metrics, '#hostState')];
          return !g && !/Host/.test(l) && !m;
        },
        30_000,
      );
      const clearedMs = Date.now() - tBack;
      assert.equal(tracker.current.kind, 'connected');
      console.log(
        `# silent → reconnecting shown after ${reconnectingMs} ms, unreachable after ${unreachableMs} ms; cleared ${clearedMs} ms after the host answered`,
      );
    } finally {
      for (const p of stopped) process.kill(p, 'SIGCONT');
      clearInterval(sampler);
      abort.abort();
      await mirrored.catch(() => undefined);
      streaming?.dispose();
      ctx.dispose();
      host.close();
      for (const p of [log, gpu, metrics]) await p.close();
    }
  },
);

test('"no GPU sample for N s" while a connected run\'s gpu.csv stops growing; gone when samples come again', { skip, timeout: 60_000 }, async () => {
  const path = join(dir, 'stall', 'gpu.csv');
  mkdirSync(join(dir, 'stall'), { recursive: true });
  writeFileSync(path, gpuLine(0));
  const src = await new LocalRunDataSource({ gpu: path }, { pollMs: 50 }).start();
  const feed = { current: (): HostLink => ({ kind: 'connected' }), onChange: () => ({ dispose: () => undefined }) };
  const gpu = await openPanel(browser, 'gpu');
  try {
    await gpu.post({ type: 'init', title: 'GPUs of stall', host: 'gpu-box' });
    const sub = onLinkedHostState(src, feed, (state) => void gpu.post({ type: 'hostState', state }), { checkMs: 100, noSampleAfterMs: 1500 });
    src.onGpuSamples((samples) => void gpu.post({ type: 'samples', samples }));
    await until('"No GPU sample for N s"', async () => /No GPU sample for [2-9] s/.test(await text(gpu, '#hostState')), 10_000);
    const first = await text(gpu, '#hostState');
    await new Promise((r) => setTimeout(r, 2200));
    assert.notEqual(await text(gpu, '#hostState'), first, 'the count goes on while it lasts');
    await gpu.page.screenshot({ path: join(SHOTS, 'gpu-no-sample.png') });
    appendFileSync(path, gpuLine(1));
    await until('the banner to clear on a new sample', async () => !(await visible(gpu, '#hostState')), 5_000);
    sub.dispose();
  } finally {
    src.dispose();
    await gpu.close();
  }
});
