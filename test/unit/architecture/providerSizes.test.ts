// core/providers is one folder per cloud with files by role (fileNames.test.ts); this keeps each file a size one
// reads in a sitting. ec2.ts had grown to 916 lines, gcp.ts to 675, before they were split by role.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { codeSizes } from '../../../scripts/code-sizes';

test('provider files: none over 400 lines', () => {
  const long = codeSizes(join(__dirname, '../../..'), 'src/core/providers').filesOver400.map((f) => `${f.file} (${f.lines} lines)`);
  assert.deepEqual(long, [], 'files under src/core/providers/ over 400 lines');
});
