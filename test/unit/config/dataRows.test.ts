// RFT850: a local JSONL/JSON training file the built-in trainer would stop on at start is reported while editing
// (issue 31.2). The files are written as people have them: ShareGPT with an unmapped role, rows with no column the
// trainer reads, a message without content; data.roles in both of its forms clears the role case.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateText } from '../../../src/core/config/validate';
import { nodeFiles } from '../../../src/core/config/nodeFiles';

const spec = (train: string, extra = ''): string => `version: 1
model:
  id: meta-llama/Llama-3.1-8B
method: qlora
data:
  train: ${train}
  chat_template: true
${extra}target:
  provider: ssh
  host: gpu-box
`;

const sharegpt = (roles: [string, string][]): string => JSON.stringify({ conversations: roles.map(([from, value]) => ({ from, value })) }) + '\n';

function check(files: Record<string, string>, train: string, extra = ''): { code: string; message: string }[] {
  const dir = mkdtempSync(join(tmpdir(), 'rft-data-'));
  try {
    for (const [rel, text] of Object.entries(files)) {
      mkdirSync(join(dir, rel, '..'), { recursive: true });
      writeFileSync(join(dir, rel), text);
    }
    return validateText(spec(train, extra), { fileName: join(dir, 'finetune.yaml'), files: nodeFiles })
      .diagnostics.filter((d) => d.code === 'RFT850')
      .map((d) => ({ code: d.code, message: d.message }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const good = sharegpt([
  ['human', 'What is the capital of Peru?'],
  ['gpt', 'Lima.'],
]);

test('a ShareGPT role no template renders names the row and column, and data.roles maps it', () => {
  const file =
    good.repeat(3) +
    sharegpt([
      ['human', 'Hi'],
      ['bot', 'Hello'],
    ]);
  const got = check({ 'data/chat.jsonl': file }, 'data/chat.jsonl');
  assert.equal(got.length, 1);
  assert.match(got[0]!.message, /data\/chat\.jsonl row 4, column 'conversations' message 2 has role 'bot'.*data\.roles/);
  assert.deepEqual(check({ 'data/chat.jsonl': file }, 'data/chat.jsonl', '  roles:\n    bot: assistant\n'), []);
  assert.deepEqual(check({ 'data/chat.jsonl': file }, 'data/chat.jsonl', '  roles:\n    assistant: [bot, gpt]\n'), []);
});

test('rows with no column the trainer reads, and a message without content; the layouts it reads pass', () => {
  const qa = JSON.stringify({ question: 'q', answer: 'a' }) + '\n';
  const [missing] = check({ 'data/qa.jsonl': qa.repeat(2) }, 'data/qa.jsonl');
  assert.match(missing!.message, /row 1 has no column the trainer reads \(it has answer, question\)/);
  const noValue = JSON.stringify({ conversations: [{ from: 'human' }, { from: 'gpt', value: 'x' }] });
  const [msg] = check({ 'data/train.json': `[${good.trim()}, ${noValue}]` }, 'data/train.json');
  assert.match(msg!.message, /row 2, column 'conversations' message 1 has neither role\/content nor from\/value/);
  const rows = [
    {
      messages: [
        { role: 'system', content: 's' },
        { role: 'user', content: 'u' },
        { role: 'assistant', content: 'a' },
      ],
    },
    { instruction: 'i', input: '', output: 'o' },
    { prompt: 'p', completion: 'c' },
    { text: 't' },
  ];
  for (const r of rows) assert.deepEqual(check({ 'd.jsonl': JSON.stringify(r) + '\n' }, 'd.jsonl'), [], JSON.stringify(r));
  assert.deepEqual(check({ 'd.jsonl': JSON.stringify({ body: 't' }) + '\n' }, 'd.jsonl', '  text_field: body\n'), []);
});
