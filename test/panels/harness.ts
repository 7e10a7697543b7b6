/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// Renders a panel's built bundle (dist/webview/<panel>.js) in real headless Chromium inside the same HTML
// shell and CSP the extension uses (panelHtml), served from a stand-in origin that exposes only dist/ and
// media/ (the extension's localResourceRoots). acquireVsCodeApi is provided by an init script: what the
// page posts reaches the test in Node (like the extension host would), and the test posts back with
// window.postMessage, which is how VS Code delivers host messages to a webview.
import { chromium } from 'playwright-core';
import type { Browser, CDPSession, Page } from 'playwright-core';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { extname, join, normalize, resolve } from 'node:path';
import { makeNonce, panelHtml } from '../../src/core/webview/webviewHtml';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
export const ORIGIN = 'http://panel.test';
export const ROOT = resolve(__dirname, '../..');
export const SHOTS = join(ROOT, '.test-output', 'panels');

const TYPES: Record<string, string> = {
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.map': 'application/json',
  '.ttf': 'font/ttf',
  '.woff2': 'font/woff2',
  '.svg': 'image/svg+xml',
};

/** Why the panel tests cannot run here, or undefined when they can. */
export function missingPrerequisite(): string | undefined {
  if (!existsSync(CHROMIUM)) return `${CHROMIUM} is missing: apt-get install -y chromium`;
  for (const b of ['log', 'gpu', 'metrics', 'compare', 'tryAdapter'])
    if (!existsSync(join(ROOT, 'dist', 'webview', `${b}.js`))) return `dist/webview/${b}.js is missing: npm run build`;
  return undefined;
}

export async function launchBrowser(): Promise<Browser> {
  mkdirSync(SHOTS, { recursive: true });
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
}

/** A VS Code-like theme: the variables the panels read, so screenshots look like a dark editor. */
const THEME_CSS = `body{--vscode-foreground:#cccccc;--vscode-editor-background:#1e1e1e;--vscode-font-family:sans-serif;--vscode-font-size:13px;
--vscode-descriptionForeground:#9d9d9d;--vscode-errorForeground:#f48771;--vscode-editorWidget-border:#454545;--vscode-focusBorder:#007fd4;
--vscode-editor-font-family:monospace;--vscode-terminal-ansiRed:#cd3131;--vscode-terminal-ansiGreen:#0dbc79;--vscode-charts-blue:#3794ff;}`;

export interface PanelPage {
  readonly page: Page;
  /** Everything the page posted to the "host", in order. */
  readonly sent: unknown[];
  /** Content-Security-Policy violations reported by Chromium. */
  readonly cspViolations: string[];
  readonly pageErrors: string[];
  /** Called for each message the page posts (after it is recorded). */
  onMessage: (m: { type: string; [k: string]: unknown }) => void;
  /** Posts host → webview messages, in order. */
  post(...messages: unknown[]): Promise<void>;
  waitForSent(type: string, count?: number, timeoutMs?: number): Promise<void>;
  /** The last state the page saved with setState. */
  state(): Promise<unknown>;
  cdp(): Promise<CDPSession>;
  close(): Promise<void>;
}

export async function openPanel(
  browser: Browser,
  bundle: 'log' | 'gpu' | 'metrics' | 'compare' | 'tryAdapter',
  opts: { state?: unknown; width?: number; height?: number } = {},
): Promise<PanelPage> {
  const page = await browser.newPage({ viewport: { width: opts.width ?? 1100, height: opts.height ?? 760 } });
  const sent: unknown[] = [];
  const cspViolations: string[] = [];
  const pageErrors: string[] = [];
  const html = panelHtml({
    cspSource: ORIGIN,
    nonce: makeNonce(),
    title: bundle,
    scriptUri: `${ORIGIN}/dist/webview/${bundle}.js`,
    styleUris: [`${ORIGIN}/dist/webview/${bundle}.css`, `${ORIGIN}/media/panels.css`, `${ORIGIN}/theme.css`],
  });
  await page.route(`${ORIGIN}/**`, async (route) => {
    const path = new URL(route.request().url()).pathname;
    if (path === '/' || path === '/index.html') return route.fulfill({ status: 200, contentType: 'text/html', body: html });
    if (path === '/theme.css') return route.fulfill({ status: 200, contentType: 'text/css', body: THEME_CSS });
    const file = normalize(join(ROOT, decodeURIComponent(path)));
    const allowed = [join(ROOT, 'dist') + '/', join(ROOT, 'media') + '/'].some((r) => file.startsWith(r));
    if (!allowed || !existsSync(file)) return route.fulfill({ status: 404, body: 'not found' });
    return route.fulfill({ status: 200, contentType: TYPES[extname(file)] ?? 'application/octet-stream', body: readFileSync(file) });
  });
  // Anything else (a remote image, a javascript: navigation) must never load.
  await page.route(/^(?!http:\/\/panel\.test\/).*/, (route) => route.abort());
  const panel: PanelPage = {
    page,
    sent,
    cspViolations,
    pageErrors,
    onMessage: () => undefined,
    async post(...messages) {
      await page.evaluate((ms) => {
        for (const m of ms) window.postMessage(m, '*');
      }, messages);
    },
    async waitForSent(type, count = 1, timeoutMs = 10_000) {
      const t0 = Date.now();
      while (sent.filter((m) => (m as { type?: string }).type === type).length < count) {
        if (Date.now() - t0 > timeoutMs) throw new Error(`page did not post ${count} × ${type} within ${timeoutMs} ms; got ${JSON.stringify(sent.slice(-5))}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    state: () => page.evaluate(() => (window as unknown as { __rftState?: unknown }).__rftState),
    cdp: () => page.context().newCDPSession(page),
    close: () => page.close(),
  };
  await page.exposeFunction('__rftPost', (m: { type: string }) => {
    sent.push(m);
    panel.onMessage(m);
  });
  page.on('console', (msg) => {
    const t = msg.text();
    if (/Content Security Policy|Refused to/.test(t)) cspViolations.push(t);
  });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  if (process.env.RFT_PANEL_DEBUG) {
    page.on('console', (m) => console.log('console:', m.text()));
    page.on('pageerror', (e) => console.log('pageerror:', String(e)));
    page.on('requestfailed', (r) => console.log('failed:', r.url()));
  }
  // A string, not a function: tsx compiles test functions with esbuild's keepNames, whose __name helper
  // does not exist in the page. __name is defined here too so page.evaluate callbacks can use named helpers.
  await page.addInitScript(`(() => {
    window.__name = (f) => f;
    window.__rftState = ${JSON.stringify(opts.state ?? null)} ?? undefined;
    let acquired = false;
    window.acquireVsCodeApi = () => {
      if (acquired) throw new Error('acquireVsCodeApi called twice');
      acquired = true;
      return {
        postMessage: (m) => {
          // An in-page listener (the benchmark's host) sees messages at once; the Node side gets a copy.
          if (window.__rftOnPost) window.__rftOnPost(m);
          if (!window.__rftQuiet) void window.__rftPost(JSON.parse(JSON.stringify(m)));
        },
        getState: () => window.__rftState,
        setState: (s) => { window.__rftState = s; },
      };
    };
  })();`);
  await page.goto(`${ORIGIN}/`);
  await panel.waitForSent('ready');
  return panel;
}

/** Elements an injected payload could have created; the panels create none of these themselves. */
export async function injectedElements(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const found: string[] = [];
    const sel =
      'img, iframe, object, embed, svg, math, form:not([role]), a[href], script:not([nonce]), link:not([rel="stylesheet"]), meta[http-equiv]:not([http-equiv="Content-Security-Policy"]), [onerror], [onload], [onclick], [onmouseover], [onfocus], [srcdoc], marquee, details[open], x-evil';
    for (const el of document.querySelectorAll(sel)) found.push(el.outerHTML.slice(0, 120));
    // Shadow roots of toolkit components too.
    for (const host of document.querySelectorAll('*')) {
      const sr = host.shadowRoot;
      if (sr)
        for (const el of sr.querySelectorAll('img, iframe, script, a[href], [onerror], [onload], [onclick], x-evil'))
          found.push(`shadow:${el.outerHTML.slice(0, 120)}`);
    }
    if ((window as unknown as { __xss?: unknown }).__xss !== undefined) found.push('window.__xss was set');
    return found;
  });
}

/** Strings that try to become markup or script wherever a remote string is shown. */
export const XSS_CORPUS: readonly string[] = [
  '<img src=x onerror="window.__xss=1">',
  '<script>window.__xss=2</script>',
  '"><svg onload=window.__xss=3>',
  '<a href="javascript:window.__xss=4">click</a>',
  'javascript:window.__xss=5',
  '<iframe srcdoc="<script>parent.__xss=6</script>"></iframe>',
  '<x-evil onclick="window.__xss=7">x</x-evil>',
  '</textarea></style></title><img src=x onerror=window.__xss=8>',
  '\u001b]8;;javascript:window.__xss=9\u0007OSC 8 link\u001b]8;;\u0007',
  '\u001b]8;;https://evil.example/?q=<img src=x onerror=window.__xss=10>\u001b\\hyperlink\u001b]8;;\u001b\\',
  '<details open ontoggle=window.__xss=11>',
  `${'A'.repeat(200_000)}<img src=x onerror=window.__xss=12>`,
  '\ud800\udfff\uffff invalid \u0000 nul <b onmouseover=window.__xss=13>bold</b>',
];

/** Invalid UTF-8 as raw bytes (lone continuation bytes, truncated sequences, overlongs). */
export const INVALID_UTF8 = Buffer.from([
  0x3c, 0x69, 0x6d, 0x67, 0x20, 0xc0, 0xaf, 0x3e, 0xff, 0xfe, 0x80, 0xe2, 0x82, 0x0a, 0xed, 0xa0, 0x80, 0x3c, 0x2f, 0x62, 0x3e, 0x0a,
]);
