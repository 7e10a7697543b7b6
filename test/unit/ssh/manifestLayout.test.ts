// The manifest a sync sends is laid out before the files stream, with a 64-byte hole for each hash not yet
// known; the holes are filled as the files are read. Whatever the paths hold, the filled bytes must be the
// JSON of the final manifest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { manifestLayout } from '../../../src/core/ssh/syncPlan';
import type { ManifestEntry } from '../../../src/core/ssh/syncPlan';

const hex64 = fc.stringMatching(/^[0-9a-f]{64}$/);
const path = fc.oneof(
  fc.string({ minLength: 1, maxLength: 12 }),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 6 }),
  fc.constantFrom(' '.repeat(64), `,"${' '.repeat(64)}"]`, 'a"b', 'a\\b', '日本/語.txt', '\u2028', '"'),
);

test('manifestLayout: every hole, filled with its hash, gives the JSON of the final manifest', () => {
  fc.assert(
    fc.property(fc.uniqueArray(fc.tuple(path, fc.nat(), fc.nat(), fc.option(hex64, { nil: '' }), hex64), { selector: ([p]) => p, maxLength: 30 }), (rows) => {
      const entries = rows.map(([p, size, mtime, known]): [string, ManifestEntry] => [p, [size, mtime, known]]);
      const { bytes, holes } = manifestLayout(entries);
      assert.equal(holes.size, rows.filter(([, , , known]) => known === '').length);
      for (const [p, , , known, later] of rows) if (known === '') bytes.write(later, holes.get(p)!, 'latin1');
      const expected = { v: 1, files: Object.fromEntries(rows.map(([p, size, mtime, known, later]) => [p, [size, mtime, known || later]])) };
      assert.deepEqual(JSON.parse(bytes.toString('utf8')), expected);
    }),
    { numRuns: 300 },
  );
});
