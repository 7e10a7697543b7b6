// Issue 30.7: a run id names a folder on the person's machine too, which may run Windows: a device name
// (CON, PRN, AUX, NUL, COM0-9, LPT0-9, with or without an extension, any case) or a trailing dot is refused
// there, so it is no run id, whether a person typed it or a host's run list named it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isValidRunId } from '../../../src/core/ssh/detachedJob';
import { newRunId } from '../../../src/core/runs/store/runId';

test('run ids: Windows device names, with or without an extension, in any case, are refused', () => {
  for (const id of ['CON', 'con', 'Prn', 'AUX', 'nul', 'NUL.txt', 'con.tar.gz', 'COM1', 'com9.log', 'COM0', 'LPT1', 'lpt9', 'Lpt3.json', 'aux.']) {
    assert.equal(isValidRunId(id), false, id);
  }
});

test('run ids: a trailing dot (Windows drops it, so two ids would share a folder) is refused', () => {
  assert.equal(isValidRunId('run.'), false);
  assert.equal(isValidRunId('rft-20261127-180000-ab12.'), false);
});

test('run ids: names that only begin like a device, and our own ids, are kept', () => {
  for (const id of ['console', 'CONx', 'COM10', 'lpt10', 'nullable', 'auxiliary.run', 'con-1', 'r1', 'ok.run', newRunId()]) {
    assert.equal(isValidRunId(id), true, id);
  }
});
