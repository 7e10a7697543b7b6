/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The log panel's bundle in real headless Chromium, fed by the real host streamer over a real file tail.
import { after, before, test } from 'node:test';
import * as assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, rmSync, writeFileSync, createWriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { INVALID_UTF8, SHOTS, XSS_CORPUS, injectedElements, launchBrowser, missingPrerequisite, openPanel } from './harness';
import type { PanelPage } from './harness';
import { streamFile } from './logHost';

const skip = missingPrerequisite();
if (skip) console.log(`# skipping the log panel tests: ${skip}`);
let browser: Browser;
const dir = mkdtempSync(join(tmpdir(), 'rft-logpanel-'));

before(async () => {
  if (!skip) browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

const rowsText = (p: PanelPage): Promise<string[]> =>
  p.page.evaluate(() => [...document.querySelectorAll('.xterm-rows > div')].map((d) => d.textContent ?? ''));

async function waitForRow(p: PanelPage, pred: (rows: string[]) => boolean, what: string, timeoutMs = 15_000): Promise<string[]> {
  const t0 = Date.now();
  for (;;) {
    const rows = await rowsText(p);
    if (pred(rows)) return rows;
    if (Date.now() - t0 > timeoutMs) throw new Error(`${what}; rows: ${JSON.stringify(rows.filter(Boolean).slice(-8))}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('the ready handshake comes first; then ANSI colours and tqdm carriage-return bars render as in a terminal', { skip }, async () => {
  const p = await openPanel(browser, 'log');
  assert.deepEqual(p.sent[0], { type: 'ready' });
  const file = join(dir, 'ansi.log');
  writeFileSync(
    file,
    [
      '\x1b[31mred error text\x1b[0m and \x1b[32mgreen\x1b[0m',
      'Epoch 1: ' +
        Array.from({ length: 11 }, (_, i) => `\r${String(i * 10).padStart(3)}%|${'█'.repeat(i)}${' '.repeat(10 - i)}| ${i * 10}/100`).join('') +
        '\n',
      'after the bar',
      '',
    ].join('\n'),
  );
  const host = await streamFile(p, file);
  const rows = await waitForRow(p, (r) => r.some((x) => x.includes('after the bar')), 'bar never finished');
  const barRow = rows.find((r) => r.includes('/100')) ?? '';
  assert.match(barRow, /100%\|██████████\| 100\/100/);
  assert.ok(!barRow.includes(' 50%'), `a carriage return must overwrite: ${barRow}`);
  const red = await p.page.evaluate(() =>
    [...document.querySelectorAll('.xterm-rows span')].some((s) => s.className.includes('xterm-fg-1') && s.textContent?.includes('red error')),
  );
  assert.ok(red, 'the red SGR run keeps its colour class');
  await p.post({ type: 'status', state: 'ended', text: 'Run completed (exit code 0).' });
  await p.page.waitForFunction(() => /Run completed \(exit code 0\)/.test(document.getElementById('status')?.textContent ?? ''));
  await p.page.screenshot({ path: join(SHOTS, 'log-ansi-tqdm.png') });
  assert.deepEqual(p.cspViolations, []);
  assert.deepEqual(p.pageErrors, []);
  host.dispose();
  await p.close();
});

test('1,000,000 lines stream with flow control and bounded memory, and the last line is shown', { skip, timeout: 600_000 }, async () => {
  const p = await openPanel(browser, 'log');
  const file = join(dir, 'million.log');
  const N = 1_000_000;
  await new Promise<void>((resolve, reject) => {
    const ws = createWriteStream(file);
    let i = 1;
    const write = (): void => {
      let ok = true;
      while (i <= N && ok) {
        let chunk = '';
        for (let k = 0; k < 5000 && i <= N; k++, i++) chunk += `L${String(i).padStart(7, '0')} INFO step=${i} loss=${(1 / i).toFixed(6)}\n`;
        ok = ws.write(chunk);
      }
      if (i <= N) ws.once('drain', write);
      else ws.end(resolve);
    };
    ws.on('error', reject);
    write();
  });
  const size = (await import('node:fs')).statSync(file).size;
  const windowBytes = 512 * 1024;
  const host = await streamFile(p, file, { tailBytes: Number.MAX_SAFE_INTEGER, windowBytes });
  const cdp = await p.cdp();
  // JS heap plus ArrayBuffer backing stores: xterm keeps its buffer lines in typed arrays.
  const heap = async (): Promise<number> => {
    await cdp.send('HeapProfiler.collectGarbage');
    const u = (await cdp.send('Runtime.getHeapUsage')) as { usedSize: number; backingStorageSize?: number; embedderHeapUsedSize?: number };
    return u.usedSize + (u.backingStorageSize ?? 0) + (u.embedderHeapUsedSize ?? 0);
  };
  const samples: Array<[number, number]> = [];
  const t0 = Date.now();
  while (host.streamer.sentOffset < size) {
    await new Promise((r) => setTimeout(r, 1500));
    samples.push([host.streamer.sentOffset / size, await heap()]);
  }
  await host.drained(size);
  const seconds = (Date.now() - t0) / 1000;
  const endHeap = await heap();
  samples.push([1, endHeap]);
  await waitForRow(p, (r) => r.some((x) => x.startsWith('L1000000 INFO')), 'last line not shown');
  await p.page.screenshot({ path: join(SHOTS, 'log-million-lines.png') });
  const mid = samples.find(([f]) => f >= 0.2)?.[1] ?? samples[0]![1];
  console.log(
    `# ${N} lines, ${(size / 1e6).toFixed(1)} MB in ${seconds.toFixed(1)} s (${(size / 1e6 / seconds).toFixed(1)} MB/s); heap at 20%: ${(mid / 1e6).toFixed(1)} MB, at the end: ${(endHeap / 1e6).toFixed(1)} MB; max in flight ${host.streamer.stats.maxInFlightBytes} B`,
  );
  assert.ok(host.streamer.stats.maxInFlightBytes <= windowBytes, 'never more than the window in flight');
  assert.ok(endHeap < 120e6, `heap ${endHeap} must stay bounded (the file is ${size} bytes)`);
  assert.ok(endHeap - mid < 40e6, `heap grew ${(endHeap - mid) / 1e6} MB from 20% to 100%: not bounded`);
  const lines = await p.page.evaluate(() => document.querySelectorAll('.xterm-rows > div').length);
  assert.ok(lines > 0);
  host.dispose();
  await p.close();
});

test('signatures are highlighted with their hint; filter by level, first error, search, copy and open full log work from the keyboard', { skip }, async () => {
  const p = await openPanel(browser, 'log');
  const file = join(dir, 'oom.log');
  const body: string[] = [];
  for (let i = 0; i < 300; i++) body.push(`info line ${i}`);
  body.push('WARNING: deprecated flag --foo');
  body.push('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB');
  for (let i = 300; i < 600; i++) body.push(`info line ${i}`);
  writeFileSync(file, body.join('\n') + '\n');
  const host = await streamFile(p, file);
  await waitForRow(p, (r) => r.some((x) => x.includes('info line 599')), 'stream did not finish');
  await p.page.waitForSelector('.failure');
  const failure = await p.page.textContent('.failure');
  assert.match(failure ?? '', /CUDA out of memory/);
  assert.match(failure ?? '', /gradient_accumulation/i, 'the fix hint is shown');
  // Keyboard: F8 jumps to the first error (scrolls back to it, selects it, stops following).
  await p.page.keyboard.press('F8');
  await p.page.waitForFunction(() => /Line 302/.test(document.getElementById('status')?.textContent ?? ''));
  await waitForRow(p, (r) => r.some((x) => x.includes('CUDA out of memory')), 'F8 did not scroll to the error');
  await p.page.screenshot({ path: join(SHOTS, 'log-signature.png') });
  const follow = await p.page.textContent('#follow');
  assert.equal(follow?.trim(), 'Follow');

  // Level filter: errors only.
  await p.page.evaluate(() => {
    const dd = document.getElementById('level') as HTMLElement & { value: string };
    dd.value = 'error';
    dd.dispatchEvent(new Event('change'));
  });
  const errRows = await waitForRow(
    p,
    (r) => !r.some((x) => x.includes('info line')) && r.some((x) => x.includes('CUDA out of memory')),
    'not only errors under "Errors only"',
  );
  assert.ok(errRows.some((x) => x.includes('CUDA out of memory')));
  assert.ok(!errRows.some((x) => x.includes('deprecated flag')));
  const highlighted = await p.page.evaluate(() =>
    [...document.querySelectorAll('.xterm-rows span')].some((s) => s.className.includes('xterm-bg-1') && (s.textContent ?? '').includes('CUDA out of memory')),
  );
  assert.ok(
    highlighted,
    `the matched line is drawn on a red background: ${await p.page.evaluate(() =>
      [...document.querySelectorAll('.xterm-rows > div')]
        .filter((d) => (d.textContent ?? '').includes('CUDA'))
        .map((d) => d.innerHTML)
        .join(' | '),
    )}`,
  );
  await p.page.screenshot({ path: join(SHOTS, 'log-errors-only.png') });

  // Copy with no selection copies the lines shown; it goes to the host (which owns the clipboard).
  await p.page.focus('#copy');
  await p.page.keyboard.press('Enter');
  await p.waitForSent('copy');
  const copy = p.sent.find((m) => (m as { type: string }).type === 'copy') as { text: string };
  assert.ok(copy.text.includes('CUDA out of memory') && !copy.text.includes('info line'));

  // Back to all levels; Ctrl+F focuses the search field; Enter finds.
  await p.page.evaluate(() => {
    const dd = document.getElementById('level') as HTMLElement & { value: string };
    dd.value = 'all';
    dd.dispatchEvent(new Event('change'));
  });
  await waitForRow(p, (r) => r.some((x) => x.includes('info line')), 'all levels not restored');
  await p.page.keyboard.press('Control+f');
  await p.page.keyboard.type('info line 450');
  await p.page.keyboard.press('Enter');
  await p.page.waitForFunction(() => document.querySelector('.xterm-selection div') !== null);

  // Open full log goes to the host.
  await p.page.click('#openFull');
  await p.waitForSent('openFullLog');
  const state = (await p.state()) as { filter: string; search: string; follow: boolean };
  assert.equal(state.search, 'info line 450');
  assert.deepEqual(p.cspViolations, []);
  host.dispose();
  await p.close();
});

test('view state survives a reload: the new page restores filter, search and pause from getState', { skip }, async () => {
  const p = await openPanel(browser, 'log', { state: { follow: false, filter: 'warning', search: 'loss' } });
  const file = join(dir, 'state.log');
  writeFileSync(file, 'plain info\nWARNING: careful\n');
  const host = await streamFile(p, file);
  await p.page.waitForFunction(() => (document.getElementById('follow')?.textContent ?? '').trim() === 'Follow');
  const level = await p.page.evaluate(() => (document.getElementById('level') as HTMLElement & { value: string }).value);
  assert.equal(level, 'warning');
  const search = await p.page.evaluate(() => (document.getElementById('search') as HTMLElement & { value: string }).value);
  assert.equal(search, 'loss');
  host.dispose();
  await p.close();
});

test(
  'XSS corpus through log lines (tags, handlers, javascript: and OSC 8 links, very long lines, invalid UTF-8) leaves no injected element',
  { skip },
  async () => {
    const p = await openPanel(browser, 'log');
    const file = join(dir, 'xss.log');
    writeFileSync(file, '');
    for (const s of XSS_CORPUS) appendFileSync(file, `ERROR ${s}\n`);
    appendFileSync(file, INVALID_UTF8);
    appendFileSync(file, `ERROR ${XSS_CORPUS[0]}\n`);
    appendFileSync(file, 'END OF CORPUS\n');
    const host = await streamFile(p, file);
    await waitForRow(p, (r) => r.some((x) => x.includes('END OF CORPUS')), 'corpus did not finish');
    // Clicking the OSC 8 link text must not navigate or run anything.
    await p.page.evaluate(() => {
      for (const s of document.querySelectorAll('.xterm-rows span')) if ((s.textContent ?? '').includes('OSC 8 link')) (s as HTMLElement).click();
    });
    assert.deepEqual(await injectedElements(p.page), []);
    const rows = (await rowsText(p)).join('\n');
    assert.ok(rows.includes('<img src=x onerror="window.__xss=1">'), 'the markup is shown as text');
    const joined = (await rowsText(p)).join('');
    assert.ok(joined.includes('line cut here; the rest is in the full log'), `a very long line is cut, not drawn whole: ${joined.slice(-600)}`);
    assert.ok(rows.includes('\ufffd'), 'invalid UTF-8 shows as U+FFFD');
    await p.page.screenshot({ path: join(SHOTS, 'log-xss.png') });
    assert.deepEqual(p.pageErrors, []);
    host.dispose();
    await p.close();
  },
);

test('an empty state with its action, rendered as text', { skip }, async () => {
  const p = await openPanel(browser, 'log');
  await p.post({
    type: 'empty',
    message: 'No active run. <img src=x onerror=window.__xss=1>',
    actions: [{ id: 'openLocalFile', label: 'Open a local log file…' }],
  });
  await p.page.waitForSelector('.empty');
  assert.match((await p.page.textContent('.empty p')) ?? '', /No active run\. <img/);
  await p.page.keyboard.press('Tab');
  await p.page.keyboard.press('Enter');
  await p.waitForSent('action');
  assert.deepEqual(p.sent.at(-1), { type: 'action', id: 'openLocalFile' });
  assert.deepEqual(await injectedElements(p.page), []);
  await p.page.screenshot({ path: join(SHOTS, 'log-empty.png') });
  await p.close();
});

/** Each visible row's text with the xterm classes of its coloured spans (the DOM renderer's colour classes). */
const rowClasses = (p: PanelPage): Promise<Array<{ text: string; classes: string }>> =>
  p.page.evaluate(() =>
    [...document.querySelectorAll('.xterm-rows > div')].map((d) => ({
      text: d.textContent ?? '',
      classes: [...d.querySelectorAll('span')].map((s) => s.className).join(' '),
    })),
  );

test('lines are coloured by level and by signature, the fix is written under a recognised failure, and the final status is styled', { skip }, async () => {
  const p = await openPanel(browser, 'log');
  const file = join(dir, 'levels.log');
  writeFileSync(
    file,
    [
      'INFO plain progress line',
      'WARNING: tokenizer has no pad token, using eos',
      'ERROR: could not save checkpoint',
      '\x1b[32mERROR in green chosen by the program\x1b[0m',
      'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB',
      'after the failure',
      '',
    ].join('\n'),
  );
  const host = await streamFile(p, file);
  const rows = await (async () => {
    await waitForRow(p, (r) => r.some((x) => x.includes('after the failure')), 'stream did not finish');
    return rowClasses(p);
  })();
  const row = (needle: string): { text: string; classes: string } => {
    const r = rows.find((x) => x.text.includes(needle));
    assert.ok(r, `no row with ${needle}: ${JSON.stringify(rows.filter((x) => x.text.trim()))}`);
    return r;
  };
  assert.doesNotMatch(row('plain progress').classes, /xterm-fg-/, 'info keeps the default colour');
  assert.match(row('no pad token').classes, /xterm-fg-3\b/, 'warnings are yellow');
  assert.match(row('could not save').classes, /xterm-fg-1\b/, 'errors are red');
  assert.match(row('in green chosen').classes, /xterm-fg-2\b/, 'a line with its own colours keeps them');
  assert.match(row('CUDA out of memory').classes, /xterm-bg-1\b/, 'a recognised failure is drawn on red');
  // The fix sits on the row right under the failure, styled apart from log text.
  const i = rows.findIndex((x) => x.text.includes('CUDA out of memory'));
  assert.match(rows[i + 1]?.text ?? '', /↳ Fix: .*gradient_accumulation/i);
  assert.match(rows[i + 1]?.classes ?? '', /xterm-fg-6\b.*|xterm-italic/);
  assert.match(rows[i + 2]?.text ?? '', /after the failure/);
  // Copy takes the log's own lines: the fix is the panel's, not the program's.
  await p.page.click('#copy');
  await p.waitForSent('copy');
  const copied = (p.sent.find((m) => (m as { type: string }).type === 'copy') as { text: string }).text;
  assert.ok(!copied.includes('↳ Fix'), copied);

  assert.equal(await p.page.isHidden('#finalStatus'), true, 'no final status while the run is live');
  await p.post({ type: 'status', state: 'ended', outcome: 'failed', text: 'Run failed (exit code 1).' });
  await p.page.waitForSelector('#finalStatus.bad');
  assert.equal((await p.page.textContent('#finalStatus'))?.trim(), '✖Run failed (exit code 1).');
  assert.equal(await p.page.getAttribute('#finalStatus', 'data-outcome'), 'failed');
  assert.doesNotMatch((await p.page.textContent('#status')) ?? '', /Run failed/, 'said once, in the styled line');
  await p.page.screenshot({ path: join(SHOTS, 'log-levels-final-status.png') });
  await p.post({ type: 'status', state: 'ended', outcome: 'completed', text: 'Run completed (exit code 0).' });
  await p.page.waitForSelector('#finalStatus.ok');
  assert.deepEqual(p.cspViolations, []);
  assert.deepEqual(p.pageErrors, []);
  host.dispose();
  await p.close();
});

test('timestamps on demand, pause and follow, and "First error" scrolls back to the first error', { skip }, async () => {
  const p = await openPanel(browser, 'log');
  const file = join(dir, 'follow.log');
  const body: string[] = [];
  for (let i = 0; i < 40; i++) body.push(`step ${i} loss 1.0`);
  body.push('ERROR: first problem here');
  for (let i = 40; i < 400; i++) body.push(`step ${i} loss 0.5`);
  writeFileSync(file, body.join('\n') + '\n');
  const host = await streamFile(p, file);
  await waitForRow(p, (r) => r.some((x) => x.includes('step 399 ')), 'stream did not finish');
  assert.ok(!(await rowsText(p)).some((x) => x.includes('first problem')), 'the error has scrolled out of view');

  // Timestamps: off by default, then every line gets its arrival time, and the choice is remembered.
  assert.ok(!(await rowsText(p)).some((x) => /^\d\d:\d\d:\d\d step/.test(x)));
  await p.page.click('#timestamps');
  await waitForRow(p, (r) => r.some((x) => /^\d\d:\d\d:\d\d step 399 /.test(x)), 'no timestamps after the toggle');
  assert.equal(await p.page.getAttribute('#timestamps', 'aria-pressed'), 'true');
  assert.equal(((await p.state()) as { timestamps: boolean }).timestamps, true);
  await p.page.screenshot({ path: join(SHOTS, 'log-timestamps.png') });
  await p.page.click('#timestamps');
  await waitForRow(p, (r) => r.some((x) => /^step 399 /.test(x)), 'timestamps did not go away');

  // Pause: new lines are counted, not drawn; Follow draws them and goes to the bottom.
  await p.page.click('#follow');
  assert.equal((await p.page.textContent('#follow'))?.trim(), 'Follow');
  appendFileSync(file, 'step 400 while paused\nstep 401 while paused\n');
  await p.page.waitForFunction(() => /Paused: 2 new lines not shown/.test(document.getElementById('status')?.textContent ?? ''), undefined, {
    timeout: 10_000,
  });
  assert.ok(!(await rowsText(p)).some((x) => x.includes('while paused')));
  await p.page.click('#follow');
  await waitForRow(p, (r) => r.some((x) => x.includes('step 401 while paused')), 'following again did not draw the new lines');
  assert.equal((await p.page.textContent('#follow'))?.trim(), 'Pause');

  // First error: scrolled back to, selected, and following stops so it stays in view.
  await p.page.click('#firstError');
  await waitForRow(p, (r) => r.some((x) => x.includes('ERROR: first problem here')), '"First error" did not scroll to it');
  assert.match((await p.page.textContent('#status')) ?? '', /Line 41\b/);
  assert.equal((await p.page.textContent('#follow'))?.trim(), 'Follow');
  const error = await rowClasses(p).then((r) => r.find((x) => x.text.includes('first problem')));
  assert.match(error?.classes ?? '', /xterm-fg-1\b/);
  await p.page.screenshot({ path: join(SHOTS, 'log-first-error.png') });
  host.dispose();
  await p.close();
});

test('scrolling up to read back pauses following; scrolling back to the end follows again', { skip }, async () => {
  const p = await openPanel(browser, 'log');
  const file = join(dir, 'scroll.log');
  const body: string[] = [];
  for (let i = 0; i < 400; i++) body.push(`step ${i} loss 0.5`);
  writeFileSync(file, body.join('\n') + '\n');
  const host = await streamFile(p, file);
  await waitForRow(p, (r) => r.some((x) => x.includes('step 399 ')), 'stream did not finish');
  assert.equal((await p.page.textContent('#follow'))?.trim(), 'Pause');

  // The wheel over the log, upwards: following stops by itself and says why.
  const box = (await p.page.locator('#terminal').boundingBox())!;
  await p.page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await p.page.mouse.wheel(0, -1500);
  await p.page.waitForFunction(() => (document.getElementById('follow')?.textContent ?? '').trim() === 'Follow', undefined, { timeout: 10_000 });
  assert.match((await p.page.textContent('#status')) ?? '', /Paused while you read back/);
  await waitForRow(p, (r) => !r.some((x) => x.includes('step 399 ')), 'the view did not move up');
  const reading = await rowsText(p);
  // New lines are held, and the lines being read stay where they are.
  appendFileSync(file, 'step 400 while reading\nstep 401 while reading\n');
  await p.page.waitForFunction(() => /Paused: 2 new lines not shown/.test(document.getElementById('status')?.textContent ?? ''), undefined, {
    timeout: 10_000,
  });
  assert.deepEqual(await rowsText(p), reading);

  // Back down to the end: following resumes and draws what arrived meanwhile.
  await p.page.mouse.wheel(0, 100_000);
  await waitForRow(p, (r) => r.some((x) => x.includes('step 401 while reading')), 'scrolling to the end did not follow again');
  assert.equal((await p.page.textContent('#follow'))?.trim(), 'Pause');

  // Paused with the button, reaching the end does not resume: only the button does.
  await p.page.click('#follow');
  await p.page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await p.page.mouse.wheel(0, -800);
  await p.page.mouse.wheel(0, 100_000);
  appendFileSync(file, 'step 402 after the button\n');
  await p.page.waitForFunction(() => /Paused: 1 new line/.test(document.getElementById('status')?.textContent ?? ''), undefined, { timeout: 10_000 });
  assert.equal((await p.page.textContent('#follow'))?.trim(), 'Follow');
  assert.deepEqual(p.pageErrors, []);
  host.dispose();
  await p.close();
});

test('issue 39.2: a traceback frame in the synced workspace is a link asking to open the file at its line; a library frame is not', { skip }, async () => {
  const p = await openPanel(browser, 'log');
  const folder = 'my_project-1a2b3c4d';
  const text = [
    'Traceback (most recent call last):',
    '  File "/usr/lib/python3.11/runpy.py", line 198, in _run_module_as_main',
    `  File "/home/ubuntu/.remote-finetune/workspaces/${folder}/lib/helper.py", line 3, in check`,
    'ValueError: batch_size 3 does not divide the data',
    '',
  ].join('\n');
  await p.post(
    { type: 'init', title: 'output.log', signatures: [], startOffset: 0, truncated: false, scrollback: 1000, workspaceFolder: folder },
    { type: 'chunk', seq: 1, offset: 0, bytes: Buffer.byteLength(text), data: text },
  );
  await waitForRow(p, (r) => r.some((x) => x.includes('ValueError')), 'the traceback was not drawn');
  // The screen position of a piece of a row's text (the DOM renderer draws rows as text nodes).
  const at = (needle: string): Promise<{ x: number; y: number }> =>
    p.page.evaluate((n) => {
      const walker = document.createTreeWalker(document.querySelector('.xterm-rows')!, NodeFilter.SHOW_TEXT);
      for (let t = walker.nextNode(); t; t = walker.nextNode()) {
        const i = (t.textContent ?? '').indexOf(n);
        if (i < 0) continue;
        const range = document.createRange();
        range.setStart(t, i + 2);
        range.setEnd(t, i + 3);
        const b = range.getBoundingClientRect();
        return { x: b.x + b.width / 2, y: b.y + b.height / 2 };
      }
      throw new Error(`no row shows ${n}`);
    }, needle);
  const lib = await at('runpy.py');
  await p.page.mouse.move(lib.x, lib.y);
  await p.page.mouse.click(lib.x, lib.y);
  const own = await at('helper.py');
  await p.page.mouse.move(own.x, own.y);
  await p.page.mouse.click(own.x, own.y);
  await p.waitForSent('openSource');
  assert.deepEqual(
    p.sent.filter((m) => (m as { type: string }).type === 'openSource'),
    [{ type: 'openSource', path: `/home/ubuntu/.remote-finetune/workspaces/${folder}/lib/helper.py`, line: 3 }],
    'only the workspace frame opens, with its host path for the extension to check',
  );
  assert.deepEqual(p.pageErrors, []);
  await p.close();
});
