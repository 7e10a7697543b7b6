// The log webview's line model (pure code, run here in Node).
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { compileSignatures, fixLine, levelOf, LineRing, passes, render, stripAnsi } from '../../../webview/src/log/lines';
import { logSignatures } from '../../../src/features/panels/logSignatures';

test('levels: tracebacks, CUDA errors and ERROR are errors; warnings are warnings', () => {
  assert.equal(levelOf('Traceback (most recent call last):'), 'error');
  assert.equal(levelOf('torch.OutOfMemoryError: CUDA out of memory.'), 'error');
  assert.equal(levelOf('2026-01-01 ERROR something'), 'error');
  assert.equal(levelOf('UserWarning: `use_cache=True` is incompatible'), 'warning');
  assert.equal(levelOf("{'loss': 1.23, 'grad_norm': 0.4}"), 'info');
  assert.equal(passes('info', 'warning'), false);
  assert.equal(passes('error', 'warning'), true);
});

test('ANSI and OSC sequences are stripped for matching', () => {
  assert.equal(stripAnsi('\x1b[31mred\x1b[0m \x1b]8;;https://x\x07link\x1b]8;;\x07'), 'red link');
});

test('the ring keeps only the newest lines', () => {
  const r = new LineRing(3);
  for (let n = 1; n <= 10; n++) r.push({ n, text: `l${n}`, level: 'info', at: 0 });
  assert.deepEqual(
    [...r.lines()].map((l) => l.n),
    [8, 9, 10],
  );
  assert.equal(r.size, 3);
});

test('every shared failure signature compiles in JavaScript and matches its own kind of line', () => {
  const sigs = logSignatures();
  assert.ok(sigs.length >= 5);
  assert.equal(compileSignatures(sigs).length, sigs.length);
  assert.equal(compileSignatures([{ id: 'bad', title: 't', hint: 'h', pattern: '(?P<x>a)' }]).length, 0, 'a Python-only pattern is skipped, not thrown');
  const oom = compileSignatures(sigs).find((s) => s.sig.id === 'cuda-oom');
  assert.ok(oom?.re.test('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB'));
});

test('render: errors red, warnings yellow, own colours kept, failures on red, timestamps only when asked', () => {
  const at = new Date(2026, 0, 2, 9, 5, 7).getTime();
  assert.equal(render({ n: 1, text: 'ERROR x', level: 'error', at }, false), '\x1b[31mERROR x\x1b[39m');
  assert.equal(render({ n: 1, text: 'WARNING y', level: 'warning', at }, false), '\x1b[33mWARNING y\x1b[39m');
  assert.equal(render({ n: 1, text: '\x1b[32mERROR z\x1b[0m', level: 'error', at }, false), '\x1b[32mERROR z\x1b[0m');
  assert.equal(render({ n: 1, text: 'info', level: 'info', at }, true), '\x1b[2m09:05:07\x1b[22m info');
  const sig = { id: 'cuda-oom', title: 'CUDA out of memory', pattern: 'x', hint: 'Lower the batch size.' };
  assert.equal(render({ n: 1, text: 'boom', level: 'error', signature: sig, at }, false), '\x1b[1;97;41mboom\x1b[0m');
  assert.equal(fixLine(sig), '\x1b[3;36m  ↳ Fix: Lower the batch size.\x1b[0m\n');
});
