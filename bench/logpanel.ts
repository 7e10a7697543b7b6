/// <reference lib="dom" />
// Log panel ingest vs plain xterm.js, in one headless Chromium page and one run (A B A B …):
//  - ours: the built panel bundle (dist/webview/log.js) fed chunk messages through window.postMessage by an
//    in-page host that keeps at most 512 KiB unacknowledged (the extension's flow control), so the figure
//    includes message dispatch, line splitting, level/signature checks, the bounded ring and xterm's parse;
//  - reference: a plain xterm.js Terminal (same options, same size, same page) written the same chunks.
// Then the panel alone is streamed at an offered 5 MB/s while requestAnimationFrame intervals are recorded:
// p95 frame time must stay under 50 ms.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { launchBrowser, missingPrerequisite, openPanel, ROOT } from '../test/panels/harness';
import { median, percentile, printTable, printVerdict } from './lib/pairs';
import { logSignatures } from '../src/features/panels/logSignatures';

const PAIRS = Number(process.env.RFT_BENCH_PAIRS ?? 5);
const BYTES = 8 * 1024 * 1024;
const CHUNK = 64 * 1024;
const WINDOW = 512 * 1024;

function makeLog(bytes: number): string {
  const parts: string[] = [];
  let n = 0;
  let size = 0;
  while (size < bytes) {
    n++;
    let line: string;
    if (n % 500 === 0) line = `\x1b[33mWARNING\x1b[0m torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly (step ${n})`;
    else if (n % 97 === 0)
      line = `${Array.from({ length: 5 }, (_, i) => `\r${(i + 1) * 20}%|${'█'.repeat(i + 1)}${' '.repeat(4 - i)}| ${(i + 1) * 20}/100 [00:0${i}<00:00, 3.1it/s]`).join('')}`;
    else
      line = `{'loss': ${(2 / Math.sqrt(n)).toFixed(4)}, 'grad_norm': 0.${n % 997}, 'learning_rate': 0.0002, 'epoch': ${(n / 10000).toFixed(3)}} \x1b[32mstep ${n}\x1b[0m`;
    parts.push(line);
    size += line.length + 1;
  }
  return `${parts.join('\n')}\n`;
}

async function main(): Promise<void> {
  execFileSync(process.execPath, [join(ROOT, 'esbuild.mjs')], { cwd: ROOT, stdio: 'ignore' });
  const missing = missingPrerequisite();
  if (missing) {
    console.error(`cannot run: ${missing}`);
    process.exit(2);
  }
  const reference = await build({
    stdin: {
      contents: "import { Terminal } from '@xterm/xterm'; (window as unknown as { __Terminal: unknown }).__Terminal = Terminal;",
      resolveDir: ROOT,
      loader: 'ts',
    },
    bundle: true,
    format: 'iife',
    write: false,
    platform: 'browser',
    minify: true,
  });
  const referenceJs = reference.outputFiles[0]!.text;
  const xtermCss = join(ROOT, 'node_modules/@xterm/xterm/css/xterm.css');
  if (!existsSync(xtermCss)) throw new Error('xterm.css missing');

  const browser = await launchBrowser();
  const panel = await openPanel(browser, 'log', { width: 1200, height: 1500 });
  const page = panel.page;
  await page.evaluate(() => {
    (window as unknown as { __rftQuiet: boolean }).__rftQuiet = true;
  });
  // The panel in the top half, the reference terminal in the bottom half: both visible, both rendered.
  await page.addStyleTag({ content: '#root{height:720px !important} #ref{position:absolute;left:12px;top:760px;width:1150px;height:700px}' });
  await page.evaluate(referenceJs);
  await panel.post({ type: 'init', title: 'bench', signatures: logSignatures(), startOffset: 0, truncated: false, scrollback: 10_000 });
  await page.waitForSelector('.xterm-rows');
  const data = makeLog(BYTES);
  await page.evaluate(
    ({ data, CHUNK }) => {
      const w = window as unknown as Record<string, unknown>;
      const chunks: string[] = [];
      for (let i = 0; i < data.length; i += CHUNK) chunks.push(data.slice(i, i + CHUNK));
      w.__chunks = chunks;
      const host = document.createElement('div');
      host.id = 'ref';
      document.body.append(host);
      const T = w.__Terminal as new (o: unknown) => {
        open(e: HTMLElement): void;
        resize(c: number, r: number): void;
        write(d: string, cb?: () => void): void;
        reset(): void;
        cols: number;
        rows: number;
      };
      const term = new T({ scrollback: 10_000, convertEol: true, disableStdin: true, fontSize: 12, fontFamily: 'monospace' });
      term.open(host);
      w.__ref = term;
    },
    { data, CHUNK },
  );
  // Same geometry for both terminals.
  await page.evaluate(() => {
    const w = window as unknown as Record<string, unknown>;
    const rows = document.querySelectorAll('#root .xterm-rows > div').length;
    const cols = Math.floor(((document.querySelector('#root .xterm-rows > div') as HTMLElement | null)?.clientWidth ?? 1100) / 7.2);
    (w.__ref as { resize(c: number, r: number): void }).resize(Math.max(80, cols), Math.max(24, rows));
  });

  let offset = 0;
  /** Streams all chunks into the panel with ack-based flow control; returns MB/s. */
  const ours = async (): Promise<number> => {
    const r = await page.evaluate(
      ({ WINDOW, start }) =>
        new Promise<{ ms: number; bytes: number; end: number }>((resolve) => {
          const w = window as unknown as Record<string, unknown>;
          const chunks = w.__chunks as string[];
          const sizes = new Map<number, number>();
          let seq = 1_000_000 * Math.floor(Math.random() * 1000);
          let next = 0;
          let inFlight = 0;
          let offset = start;
          let bytes = 0;
          let acked = 0;
          const t0 = performance.now();
          const pump = (): void => {
            while (inFlight < WINDOW && next < chunks.length) {
              const c = chunks[next++]!;
              seq++;
              sizes.set(seq, c.length);
              inFlight += c.length;
              window.postMessage({ type: 'chunk', seq, offset, bytes: c.length, data: c }, '*');
              offset += c.length;
              bytes += c.length;
            }
          };
          w.__rftOnPost = (m: { type: string; seq?: number }) => {
            if (m.type !== 'ack' || m.seq === undefined) return;
            inFlight -= sizes.get(m.seq) ?? 0;
            acked++;
            if (acked === chunks.length) resolve({ ms: performance.now() - t0, bytes, end: offset });
            else pump();
          };
          pump();
        }),
      { WINDOW, start: offset },
    );
    offset = r.end;
    return r.bytes / 1e6 / (r.ms / 1000);
  };
  const plain = async (): Promise<number> => {
    const r = await page.evaluate(
      () =>
        new Promise<{ ms: number; bytes: number }>((resolve) => {
          const w = window as unknown as Record<string, unknown>;
          const chunks = w.__chunks as string[];
          const term = w.__ref as { write(d: string, cb?: () => void): void };
          let bytes = 0;
          const t0 = performance.now();
          chunks.forEach((c, i) => {
            bytes += c.length;
            term.write(c, i === chunks.length - 1 ? () => resolve({ ms: performance.now() - t0, bytes }) : undefined);
          });
        }),
    );
    return r.bytes / 1e6 / (r.ms / 1000);
  };

  // One warm-up of each (JIT, font measurement), then A B A B …
  await ours();
  await plain();
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < PAIRS; i++) {
    a.push(await ours());
    b.push(await plain());
  }

  // 5 MB/s offered for 6 s, held back by the same flow control; frame intervals recorded.
  const live = await page.evaluate(
    ({ WINDOW, start }) =>
      new Promise<{ frames: number[]; sentMB: number; seconds: number; backlogMB: number }>((resolve) => {
        const w = window as unknown as Record<string, unknown>;
        const all = (w.__chunks as string[]).join('');
        const frames: number[] = [];
        let last = performance.now();
        let running = true;
        const tick = (t: number): void => {
          frames.push(t - last);
          last = t;
          if (running) requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
        const sizes = new Map<number, number>();
        let seq = 9_000_000_000;
        let inFlight = 0;
        let offset = start;
        let pos = 0;
        let sent = 0;
        const t0 = performance.now();
        const queue: string[] = [];
        w.__rftOnPost = (m: { type: string; seq?: number }) => {
          if (m.type === 'ack' && m.seq !== undefined) inFlight -= sizes.get(m.seq) ?? 0;
        };
        let offered = 0;
        const timer = setInterval(() => {
          // Offer exactly 5 MB/s of wall time, however late the timer fires.
          const due = Math.floor((5e6 * (performance.now() - t0)) / 1000) - offered;
          if (due > 0) {
            let slice = all.slice(pos, pos + due);
            if (slice.length < due) slice += all.slice(0, due - slice.length);
            pos = (pos + due) % all.length;
            offered += due;
            queue.push(slice);
          }
          while (queue.length && inFlight < WINDOW) {
            const c = queue.shift()!;
            seq++;
            sizes.set(seq, c.length);
            inFlight += c.length;
            window.postMessage({ type: 'chunk', seq, offset, bytes: c.length, data: c }, '*');
            offset += c.length;
            sent += c.length;
          }
          if (performance.now() - t0 > 6000) {
            clearInterval(timer);
            running = false;
            resolve({
              frames: frames.slice(1),
              sentMB: sent / 1e6,
              seconds: (performance.now() - t0) / 1000,
              backlogMB: queue.reduce((n, q) => n + q.length, 0) / 1e6,
            });
          }
        }, 10);
      }),
    { WINDOW, start: offset },
  );
  const p95 = percentile(live.frames, 95);
  const lastShown = await page.evaluate(() => document.querySelectorAll('#root .xterm-rows > div').length);
  await page.screenshot({ path: join(ROOT, '.test-output', 'panels', 'bench-logpanel.png') });
  await browser.close();

  const ourMed = median(a);
  const refMed = median(b);
  printTable('log panel ingest (MB/s, median of pairs; same page, same run)', [
    ['pairs', String(PAIRS)],
    ['bytes per trial', `${(BYTES / 1e6).toFixed(1)} MB in ${Math.ceil(BYTES / CHUNK)} chunks of ${CHUNK / 1024} KiB`],
    ['panel (ours) per pair', a.map((x) => x.toFixed(2)).join(' ')],
    ['plain xterm.js per pair', b.map((x) => x.toFixed(2)).join(' ')],
    ['panel median', ourMed],
    ['plain xterm.js median', refMed],
    ['ratio (goal >= 0.5)', ourMed / refMed],
    ['5 MB/s offered: delivered', `${(live.sentMB / live.seconds).toFixed(2)} MB/s over ${live.seconds.toFixed(1)} s`],
    ['  still waiting for credit at the end', `${live.backlogMB.toFixed(2)} MB (held by flow control, never dropped)`],
    ['frames recorded', String(live.frames.length)],
    ['frame time p50 / p95 / max (ms)', `${percentile(live.frames, 50).toFixed(1)} / ${p95.toFixed(1)} / ${Math.max(...live.frames).toFixed(1)}`],
    ['terminal rows rendered', String(lastShown)],
  ]);
  const pass = printVerdict({
    bench: 'logpanel',
    metric: 'ingest throughput, log panel / plain xterm.js',
    ours: ourMed,
    reference: refMed,
    goal: '>= 0.5',
    checks: [{ name: 'p95 frame time ms at 5 MB/s', value: p95, goal: '< 50' }],
    samples: { ours: a, reference: b },
    covers: ['webview/src/log', 'src/features/panels'],
    referenceCommand: 'plain xterm.js Terminal.write of the same chunks, in the same page and run',
    extra: { deliveredMBps: Math.round((live.sentMB / live.seconds) * 100) / 100 },
  });
  process.exit(pass ? 0 : 1);
}

void main().catch((e: unknown) => {
  console.error(e);
  process.exit(2);
});
