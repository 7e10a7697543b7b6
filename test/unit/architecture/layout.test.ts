// docs/ARCHITECTURE.md is the map of the code; these checks keep it true. Its Layout table names every folder
// under src/ and no folder that is gone, and every src/ path it names anywhere exists.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const REPO = join(__dirname, '../../..');
const MAP = readFileSync(join(REPO, 'docs/ARCHITECTURE.md'), 'utf8');

function foldersUnder(rel: string): string[] {
  return readdirSync(join(REPO, rel), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .flatMap((e) => {
      const sub = `${rel}/${e.name}`;
      return [`${sub}/`, ...foldersUnder(sub)];
    });
}

/** The first column of the table under "## Layout". */
function describedFolders(): string[] {
  const start = MAP.indexOf('\n## Layout');
  assert.ok(start >= 0, 'docs/ARCHITECTURE.md has no "## Layout" section');
  const next = MAP.indexOf('\n## ', start + 1);
  const section = MAP.slice(start, next === -1 ? undefined : next);
  return [...section.matchAll(/^\| `(src\/[^`]*)` \|/gm)].map((m) => m[1]!);
}

test('architecture map: the Layout table names every folder under src/, and only folders that exist', () => {
  const described = describedFolders();
  const real = foldersUnder('src');
  assert.ok(real.length > 10, `found only ${real.length} folders under src/`);
  const missing = real.filter((f) => !described.includes(f));
  const gone = described.filter((f) => !real.includes(f));
  assert.deepEqual(missing, [], `folders under src/ that docs/ARCHITECTURE.md's Layout table does not describe: ${missing.join(', ')}`);
  assert.deepEqual(gone, [], `folders in docs/ARCHITECTURE.md's Layout table that do not exist: ${gone.join(', ')}`);
  assert.equal(new Set(described).size, described.length, 'a folder is described twice');
});

test('architecture map: every src/ path it names exists', () => {
  const paths = [...MAP.matchAll(/`(src\/[^`*{}\s]+)`/g)].map((m) => m[1]!);
  assert.ok(paths.length > 20, `only ${paths.length} src/ paths named`);
  const absent = [...new Set(paths)].filter((p) => !existsSync(join(REPO, p)));
  assert.deepEqual(absent, [], `docs/ARCHITECTURE.md names paths that do not exist: ${absent.join(', ')}`);
});
