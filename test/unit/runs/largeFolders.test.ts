import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LARGE_FOLDER_CHOICES, largeFolderAnswer, largeFolderQuestion } from '../../../src/core/runs/sync/largeFolders';
import { withoutLarge } from '../../../src/core/ssh/sync';

const warnings = [
  { path: 'data/', bytes: 12_400_000_000, files: 3, reason: 'data' as const },
  { path: 'model.safetensors', bytes: 800_000_000, files: 1, reason: 'checkpoints' as const },
];

test('the large-folder question names each folder with its size and the total', () => {
  const q = largeFolderQuestion(warnings);
  assert.match(q.message, /13\.2 GB/);
  assert.match(q.detail, /^data\/ {2}12\.4 GB in 3 files \(data\)$/m);
  assert.match(q.detail, /^model\.safetensors {2}800 MB in 1 file \(checkpoints\)$/m);
});

test('the answers: sync anyway, exclude, and a closed dialog cancels', () => {
  assert.equal(largeFolderAnswer(LARGE_FOLDER_CHOICES.send), true);
  assert.equal(largeFolderAnswer(LARGE_FOLDER_CHOICES.exclude), 'exclude');
  assert.equal(largeFolderAnswer(undefined), false);
});

test('excluding leaves out the folders and the single files announced, nothing else', () => {
  const files = ['data/a.jsonl', 'data/b/c.parquet', 'database.py', 'model.safetensors', 'model.safetensors.md', 'train.py'].map((path) => ({ path }));
  assert.deepEqual(
    withoutLarge(files, warnings).map((f) => f.path),
    ['database.py', 'model.safetensors.md', 'train.py'],
  );
});
