/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The GPU dashboard's bundle in real headless Chromium. The samples are parsed from gpu.csv lines in the
// runner's format by the real parser and tail (no GPU here: the lines are a stand-in for nvidia-smi output).
import { after, before, test } from 'node:test';
import * as assert from 'node:assert/strict';
import { appendFileSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { SHOTS, XSS_CORPUS, injectedElements, launchBrowser, missingPrerequisite, openPanel } from './harness';
import type { PanelPage } from './harness';
import { LocalRunDataSource } from '../../src/features/panels/localRunSource';
import type { GpuToWebview } from '../../src/protocol/gpu';

const skip = missingPrerequisite();
if (skip) console.log(`# skipping the GPU panel tests: ${skip}`);
let browser: Browser;
const dir = mkdtempSync(join(tmpdir(), 'rft-gpupanel-'));
before(async () => {
  if (!skip) browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A gpu.csv line as python-runner writes it: epoch seconds, then nvidia-smi's --query-gpu fields. */
function csvLine(t: number, index: number, name: string, util: number, memUsed: number): string {
  return `${t.toFixed(3)}, ${index}, ${name}, ${util}, ${Math.round(util / 2)}, ${memUsed}, 40960, ${40 + util / 5}, ${(60 + util * 3).toFixed(2)}, 400.00, ${1000 + util * 4}\n`;
}

/** What the GPU panel host does, minus vscode: replay and forward the source's streams. */
function attach(p: PanelPage, src: LocalRunDataSource): void {
  const post = (m: GpuToWebview): void => void p.post(m);
  post({ type: 'init', title: `GPUs of ${src.label}`, host: src.host });
  src.onHostState((state) => post({ type: 'hostState', state }));
  src.onGpuSamples((samples) => post({ type: 'samples', samples }));
  src.onHostSamples((samples) => post({ type: 'hostSamples', samples }));
  src.onGpuProcesses((processes) => post({ type: 'processes', processes }));
}

const canvasHashes = (p: PanelPage): Promise<string[]> =>
  p.page.evaluate(() =>
    [...document.querySelectorAll('canvas')].map((c) => {
      const d = c.toDataURL();
      let h = 0;
      for (let i = 0; i < d.length; i++) h = (h * 31 + d.charCodeAt(i)) | 0;
      return `${d.length}:${h}`;
    }),
  );

test('per-GPU charts update live from a growing gpu.csv; processes are listed', { skip }, async () => {
  const p = await openPanel(browser, 'gpu');
  const gpu = join(dir, 'gpu.csv');
  const procs = join(dir, 'gpu_procs.csv');
  const t0 = Date.now() / 1000 - 120;
  let body = '';
  for (let i = 0; i < 120; i++) for (const g of [0, 1]) body += csvLine(t0 + i, g, 'NVIDIA A100-SXM4-40GB', (i * 7 + g * 30) % 100, 10000 + i * 50);
  writeFileSync(gpu, body);
  writeFileSync(procs, `${(t0 + 119).toFixed(3)}, 4242, python train.py, 20480, GPU-aaaa\n`);
  const src = await new LocalRunDataSource({ gpu, procs }, { pollMs: 50 }).start();
  attach(p, src);
  await p.page.waitForFunction(() => document.querySelectorAll('section.gpu').length === 2);
  await p.page.waitForFunction(() => /Utilisation \d+ %/.test(document.querySelector('section.gpu .stats')?.textContent ?? ''));
  assert.equal(await p.page.evaluate(() => document.querySelectorAll('section.gpu canvas').length), 10, 'five charts per GPU');
  assert.match((await p.page.textContent('#processes')) ?? '', /4242.*python train\.py.*20480 MiB/);
  await new Promise((r) => setTimeout(r, 300));
  const before = await canvasHashes(p);
  await p.page.screenshot({ path: join(SHOTS, 'gpu-before.png'), fullPage: true });
  let more = '';
  for (let i = 120; i < 180; i++) for (const g of [0, 1]) more += csvLine(t0 + i, g, 'NVIDIA A100-SXM4-40GB', 95, 30000 + i * 10);
  appendFileSync(gpu, more);
  await p.page.waitForFunction(() => /Memory 31790 \/ 40960 MiB/.test(document.querySelector('section.gpu .stats')?.textContent ?? ''), undefined, {
    timeout: 10_000,
  });
  await new Promise((r) => setTimeout(r, 300));
  const afterHashes = await canvasHashes(p);
  const changed = afterHashes.filter((h, i) => h !== before[i]).length;
  assert.ok(changed >= 8, `charts redrew with the new samples (${changed} of ${afterHashes.length} changed)`);
  await p.page.screenshot({ path: join(SHOTS, 'gpu-live.png'), fullPage: true });
  assert.deepEqual(p.cspViolations, []);
  assert.deepEqual(p.pageErrors, []);
  src.dispose();
  await p.close();
});

test('clear states for "no GPU" and "host unreachable"', { skip }, async () => {
  const p = await openPanel(browser, 'gpu');
  await p.post(
    { type: 'init', title: 'GPUs of run-1', host: 'lambda-a100' },
    { type: 'hostState', state: { kind: 'noGpu', detail: 'nvidia-smi: No devices were found' } },
  );
  await p.page.waitForFunction(() =>
    /No NVIDIA GPU on this host: nvidia-smi: No devices were found/.test(document.getElementById('hostState')?.textContent ?? ''),
  );
  await p.page.screenshot({ path: join(SHOTS, 'gpu-no-gpu.png') });
  await p.post({ type: 'hostState', state: { kind: 'unreachable', detail: 'connection timed out', since: Date.now() - 60_000 } });
  await p.page.waitForFunction(() => /Host unreachable since .*connection timed out/.test(document.getElementById('hostState')?.textContent ?? ''));
  assert.equal(await p.page.getAttribute('#hostState', 'role'), 'status');
  await p.page.screenshot({ path: join(SHOTS, 'gpu-unreachable.png') });
  await p.post({
    type: 'hostState',
    state: { kind: 'gpuLost', detail: 'A GPU stopped responding (it fell off the bus or needs a reset): reset the GPU or reboot the host.' },
  });
  await p.page.waitForFunction(() =>
    /GPU lost: A GPU stopped responding .* The charts stop at the last sample\./.test(document.getElementById('hostState')?.textContent ?? ''),
  );
  await p.close();
});

test("a host without a GPU: the runner's CPU and memory lines of gpu.csv become a live card, not one yellow line", { skip }, async () => {
  const p = await openPanel(browser, 'gpu');
  const d = join(dir, 'cpu-only');
  mkdirSync(d, { recursive: true });
  const gpu = join(d, 'gpu.csv');
  const events = join(d, 'events.jsonl');
  // What the runner wrote on this project's GPU-less build machine (test/fixtures/host-samples).
  copyFileSync(join(__dirname, '../fixtures/host-samples/gpu_csv_cpu-only_debian12-2cpu.csv'), gpu);
  writeFileSync(
    events,
    `${JSON.stringify({ v: 1, ts: 1, type: 'warning', code: 'no-gpu', message: "No NVIDIA GPU on this host: nvidia-smi was not found on PATH. The GPU panel shows this host's CPU and memory instead; training will run on CPU or fail." })}\n`,
  );
  const src = await new LocalRunDataSource({ gpu, events }, { pollMs: 50 }).start();
  attach(p, src);
  await p.page.waitForFunction(() => /CPU 53 % busy of 2 CPUs/.test(document.querySelector('section.host .stats')?.textContent ?? ''));
  assert.match((await p.page.textContent('section.host .stats')) ?? '', /Memory 1413 \/ 24106 MiB/);
  assert.equal(await p.page.evaluate(() => document.querySelectorAll('section.host canvas').length), 2, 'CPU and memory charts');
  assert.equal(await p.page.evaluate(() => document.querySelectorAll('section.gpu').length), 0);
  await p.page.waitForFunction(() => /No NVIDIA GPU on this host: nvidia-smi was not found/.test(document.getElementById('hostState')?.textContent ?? ''));
  assert.deepEqual(await p.page.evaluate(() => [...(document.getElementById('hostState')?.classList ?? [])]), ['banner', 'info'], 'not a warning');
  const before = await canvasHashes(p);
  appendFileSync(gpu, '1795829606.098, cpu, 97.5, 2, 9000, 24105.6\n');
  await p.page.waitForFunction(() =>
    /CPU 98 % busy of 2 CPUs.*Memory 9000 \/ 24106 MiB/.test(document.querySelector('section.host .stats')?.textContent ?? ''),
  );
  await new Promise((r) => setTimeout(r, 300));
  assert.ok(
    (await canvasHashes(p)).some((h, i) => h !== before[i]),
    'charts redrew with the live sample',
  );
  await p.page.screenshot({ path: join(SHOTS, 'gpu-cpu-only.png'), fullPage: true });
  assert.deepEqual(p.cspViolations, []);
  assert.deepEqual(p.pageErrors, []);
  src.dispose();
  await p.close();
});

test('a remembered time window is restored, and changing it is saved with setState', { skip }, async () => {
  const p = await openPanel(browser, 'gpu', { state: { windowS: 900 } });
  await p.post({ type: 'init', title: 'GPUs', host: 'h' });
  await p.page.waitForFunction(() => (document.getElementById('window') as (HTMLElement & { value: string }) | null)?.value === '900');
  await p.page.evaluate(() => {
    const dd = document.getElementById('window') as HTMLElement & { value: string };
    dd.value = '60';
    dd.dispatchEvent(new Event('change'));
  });
  assert.deepEqual(await p.state(), { windowS: 60 });
  await p.close();
});

test('XSS corpus through GPU names, process names and host state details leaves no injected element', { skip }, async () => {
  const p = await openPanel(browser, 'gpu');
  const now = Date.now();
  await p.post({ type: 'init', title: XSS_CORPUS[0]!, host: XSS_CORPUS[1]! });
  await p.post({
    type: 'samples',
    samples: XSS_CORPUS.map((name, i) => ({
      t: now,
      index: i,
      name,
      utilizationPct: 50,
      memoryUsedMiB: 1,
      memoryTotalMiB: 2,
      temperatureC: 40,
      powerW: 100,
      powerLimitW: null,
      smClockMHz: null,
    })),
  });
  await p.post({
    type: 'processes',
    processes: XSS_CORPUS.map((name, i) => ({ gpu: XSS_CORPUS[(i + 3) % XSS_CORPUS.length]!, pid: i, name, usedMemoryMiB: null })),
  });
  await p.post({ type: 'hostState', state: { kind: 'noGpu', detail: XSS_CORPUS[2]! } });
  // One card per corpus entry, each with its charts: on a loaded 2-core machine that can take well over the
  // default 30 s (CI saw it), so the wait is generous; the assertion is about what is injected, not speed.
  await p.page.waitForFunction((n) => document.querySelectorAll('section.gpu').length === n, XSS_CORPUS.length, { timeout: 180_000 });
  await new Promise((r) => setTimeout(r, 200));
  assert.deepEqual(await injectedElements(p.page), []);
  assert.match((await p.page.textContent('#processes')) ?? '', /<img src=x onerror="window.__xss=1">/);
  await p.page.screenshot({ path: join(SHOTS, 'gpu-xss.png') });
  assert.deepEqual(p.pageErrors, []);
  await p.close();
});
