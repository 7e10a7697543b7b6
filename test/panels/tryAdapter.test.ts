/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The Try Adapter panel's bundle in real headless Chromium, driven by the real TryAdapterSession (what the panel
// host does, minus vscode) over a real generate process: the training venv's python (real torch, transformers,
// peft on CPU), a tiny Llama-shaped model built here and a real LoRA adapter with random weights (issue 20.2).
// The page's messages pass the same zod validation the host applies. Model output is untrusted text.
import { after, before, test } from 'node:test';
import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { ROOT, SHOTS, XSS_CORPUS, injectedElements, launchBrowser, missingPrerequisite, openPanel } from './harness';
import type { PanelPage } from './harness';
import { buildRandomAdapter, buildTinyModel, trainingPython } from '../harness/trainingVenv';
import { openLocalGenerator } from '../../src/core/runs/outputs/tryAdapter';
import { TryAdapterSession } from '../../src/features/panels/tryAdapterSession';
import { tryFromWebview, validate } from '../../src/features/panels/messages';
import type { TryToWebview } from '../../src/protocol/tryAdapterMessages';

const skip = missingPrerequisite();
if (skip) console.log(`# skipping the Try Adapter panel tests: ${skip}`);
let browser: Browser;
const dir = mkdtempSync(join(tmpdir(), 'rft-trypanel-'));
let python = '';
let adapter = '';
before(async () => {
  if (skip) return;
  python = trainingPython();
  buildTinyModel(python, join(dir, 'model'));
  adapter = join(dir, 'adapter');
  buildRandomAdapter(python, join(dir, 'model'), adapter);
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The session on the page: validated page messages in, its answers posted back; every post recorded. */
function wire(p: PanelPage, runName: string, localUnavailable?: string): { session: TryAdapterSession; posted: TryToWebview[]; dropped: string[] } {
  const posted: TryToWebview[] = [];
  const dropped: string[] = [];
  const session = new TryAdapterSession(
    {
      runId: 'r1',
      runName,
      host: 'gpu-box',
      ...(localUnavailable ? { localUnavailable } : {}),
      open: async (where) => {
        if (where === 'host') throw new Error('no host in this test');
        return openLocalGenerator({ python, runnerDir: join(ROOT, 'python-runner'), adapterPath: adapter });
      },
    },
    (m) => {
      posted.push(m);
      void p.post(m);
    },
  );
  p.onMessage = (raw) => {
    const v = validate(tryFromWebview, raw);
    if (!v.ok) return void dropped.push(v.error);
    if (v.message.type === 'ready') session.replay();
    else void session.handle(v.message);
  };
  session.replay();
  return { session, posted, dropped };
}

const exchange = (p: PanelPage, id: number): Promise<{ state: string | null; pieces: number; output: string }> =>
  p.page.evaluate((i) => {
    const ex = document.querySelector(`[data-request="${i}"]`);
    return {
      state: ex?.getAttribute('data-state') ?? null,
      pieces: Number(ex?.getAttribute('data-pieces') ?? 0),
      output: ex?.querySelector('pre.output')?.textContent ?? '',
    };
  }, id);

test('Try Adapter panel: a prompt streams the adapter’s answer piece by piece, Stop cancels, the model loads once', { skip, timeout: 300_000 }, async () => {
  const p = await openPanel(browser, 'tryAdapter');
  const { session, posted, dropped } = wire(p, 'tiny <b>run</b>');
  try {
    await p.page.waitForFunction(() => document.querySelector('h1')?.textContent === 'Try the adapter of tiny <b>run</b>');
    await p.page.selectOption('#where', 'local');
    await p.page.fill('#temperature', '0');
    await p.page.fill('#max-tokens', '40');
    await p.page.uncheck('#chat');
    await p.page.fill('#prompt', 'The capital of Peru');
    await p.page.click('#generate');
    await p.page.waitForFunction(() => document.querySelector('[data-request="1"]')?.getAttribute('data-state') !== 'generating', undefined, {
      timeout: 120_000,
    });
    const first = await exchange(p, 1);
    assert.equal(first.state, 'done', JSON.stringify(posted.filter((m) => m.type !== 'token')));
    const tokens = posted.filter((m): m is Extract<TryToWebview, { type: 'token' }> => m.type === 'token' && m.requestId === 1);
    assert.ok(tokens.length > 1, `streamed in ${tokens.length} piece(s)`);
    assert.equal(first.pieces, tokens.length);
    assert.equal(first.output, tokens.map((t) => t.text).join(''), 'the page shows exactly the streamed text');
    assert.match((await p.page.textContent('#status')) ?? '', /^Local CPU: ready: .*model \+ .*adapter on cpu · chat template$/);
    const sent = p.sent.find((m) => (m as { type: string }).type === 'generate');
    assert.deepEqual(sent, { type: 'generate', requestId: 1, where: 'local', prompt: 'The capital of Peru', temperature: 0, maxNewTokens: 40, chat: false });
    await p.page.screenshot({ path: join(SHOTS, 'try-adapter-done.png'), fullPage: true });

    // A long answer, stopped once its first piece is on the page.
    await p.page.fill('#max-tokens', '200');
    await p.page.click('#generate');
    await p.page.waitForFunction(() => Number(document.querySelector('[data-request="2"]')?.getAttribute('data-pieces') ?? 0) >= 1, undefined, {
      timeout: 60_000,
    });
    await p.page.click('#stop');
    await p.page.waitForFunction(() => document.querySelector('[data-request="2"]')?.getAttribute('data-state') !== 'generating', undefined, {
      timeout: 60_000,
    });
    const second = await exchange(p, 2);
    assert.equal(second.state, 'stopped');
    const done = posted.find((m): m is Extract<TryToWebview, { type: 'done' }> => m.type === 'done' && m.requestId === 2);
    assert.ok(done && done.stopped && done.tokens < 200, JSON.stringify(done));
    assert.equal(await p.page.isEnabled('#generate'), true);
    assert.equal(posted.filter((m) => m.type === 'status' && m.state === 'loading').length, 1, 'one model load for both prompts');
    assert.deepEqual(dropped, []);
    assert.deepEqual(p.cspViolations, []);
    assert.deepEqual(p.pageErrors, []);
  } finally {
    session.dispose();
    await p.close();
  }
});

test('Try Adapter panel: model output and run names are text, never markup; local CPU off says why', { skip, timeout: 60_000 }, async () => {
  const p = await openPanel(browser, 'tryAdapter');
  const { session } = wire(p, XSS_CORPUS[0]!, 'Local CPU needs remoteFinetune.tryAdapter.localPython <img src=x onerror=window.__xss=1>');
  try {
    await p.page.waitForFunction(() => (document.querySelector('#local-note')?.textContent ?? '').startsWith('Local CPU needs'));
    assert.equal(await p.page.isDisabled('#where option[value="local"]'), true);
    // An exchange to stream into, then hostile pieces as a model could emit them.
    await p.page.fill('#prompt', 'x');
    await p.page.click('#generate');
    const id = 1;
    for (const text of XSS_CORPUS) await p.post({ type: 'token', requestId: id, text });
    await p.post({ type: 'error', requestId: id, message: XSS_CORPUS[1] });
    await p.page.waitForFunction(() => document.querySelector('[data-request="1"]')?.getAttribute('data-state') === 'error');
    const out = await exchange(p, id);
    assert.equal(out.output, XSS_CORPUS.join(''));
    assert.deepEqual(await injectedElements(p.page), []);
    assert.equal(await p.page.textContent('#problem'), XSS_CORPUS[1]);
    assert.deepEqual(p.cspViolations, []);
  } finally {
    session.dispose();
    await p.close();
  }
});
