// docs/ARCHITECTURE.md is the map of the code; these checks keep it true. Its Layout table names every folder
// under src/ and no folder that is gone, every src/ path it names exists, every file name it mentions (bare or
// partial) is the end of a real path, and the path of one run names each file from the repository root.
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

function filesUnder(rel: string): string[] {
  return readdirSync(join(REPO, rel), { withFileTypes: true }).flatMap((e) => {
    const sub = `${rel}/${e.name}`;
    return e.isDirectory() ? (e.name === 'node_modules' || e.name === '__pycache__' ? [] : filesUnder(sub)) : [sub];
  });
}

test('architecture map: every TypeScript or Python file name it mentions, bare or with part of its path, is a file that exists', () => {
  // A bare `runStore.ts` or a partial `config/schemas/runSpec.ts` must be the end of a real path: after a file
  // moves, the map's name for it goes stale and this says which.
  const ts = [...filesUnder('src'), ...filesUnder('webview/src'), ...filesUnder('test'), ...filesUnder('scripts')];
  const py = filesUnder('python-runner');
  const names = [...new Set([...MAP.matchAll(/`([\w./-]+\.(?:ts|py))`/g)].map((m) => m[1]!))];
  assert.ok(names.length > 50, `only ${names.length} file names found`);
  const absent = names.filter((n) => {
    const tail = `/${n.replace(/^(\.\.\/)+/, '')}`;
    return !(n.endsWith('.py') ? py : ts).some((f) => `/${f}`.endsWith(tail));
  });
  assert.deepEqual(
    absent,
    [],
    `docs/ARCHITECTURE.md names files that exist nowhere under src/, webview/src/, test/, scripts/ or python-runner/: ${absent.join(', ')}`,
  );
});

test('architecture map: the path of one run names each file by its path from the repository root, and each exists', () => {
  const start = MAP.indexOf('\n## The path of one run');
  assert.ok(start >= 0, 'docs/ARCHITECTURE.md has no "## The path of one run" section');
  const next = MAP.indexOf('\n## ', start + 1);
  const rows = MAP.slice(start, next === -1 ? undefined : next);
  const names = [...rows.matchAll(/`([\w./-]+\.(?:ts|py))`/g)].map((m) => m[1]!);
  assert.ok(names.length > 30, `only ${names.length} file names in the run's path`);
  const bare = names.filter((n) => !/^(src|webview\/src|python-runner)\//.test(n));
  assert.deepEqual(bare, [], `the run's path names files without their path from the repository root: ${bare.join(', ')}`);
  const absent = names.filter((n) => !existsSync(join(REPO, n)));
  assert.deepEqual(absent, [], `the run's path names files that do not exist: ${absent.join(', ')}`);
});
