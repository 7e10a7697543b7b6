// The layering DESIGN.md describes, held by a test over the real import graph (type-only imports included):
// no cycle between files; no cycle between core's areas (core/config, core/gpu, core/ssh, …); core imports
// nothing of the features, the extension or the CLI, and of the webview protocol only types (`import type`: a
// shape the host sends, such as the compare model, is defined once there); the protocol imports nothing of
// ours; webviews import only the protocol and themselves; features never import the extension or the CLI.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { cyclesOf, groupGraph, readImportGraph, violations } from '../../support/importGraph';

const REPO = join(__dirname, '../../..');
const graph = readImportGraph(REPO, ['src', 'webview/src']);
const valueGraph = readImportGraph(REPO, ['src', 'webview/src'], { values: true });

/** core/<area> for a file under src/core (core's top-level files are their own area). */
const coreArea = (f: string): string | undefined => {
  const m = /^src\/core\/([^/]+)/.exec(f);
  return m ? `core/${m[1]}` : undefined;
};

/** Whether `from` loads code of `to` (not only its types). */
const loads = (values: ReadonlyMap<string, readonly string[]>, from: string, to: string): boolean => values.get(from)?.includes(to) ?? false;

function allowedIn(values: ReadonlyMap<string, readonly string[]>, from: string, to: string): boolean {
  // Data shared with the Python runner (signatures.json: one list of failure signatures for both sides).
  if (!/\.tsx?$/.test(to)) return true;
  if (from.startsWith('src/core/')) return to.startsWith('src/core/') || (to.startsWith('src/protocol/') && !loads(values, from, to));
  if (from.startsWith('src/protocol/')) return to.startsWith('src/protocol/');
  if (from.startsWith('webview/src/')) return to.startsWith('webview/src/') || to.startsWith('src/protocol/');
  if (from.startsWith('src/features/')) return to !== 'src/extension.ts' && !to.startsWith('src/cli/') && !to.startsWith('webview/');
  if (from.startsWith('src/cli/')) return !to.startsWith('src/features/') && to !== 'src/extension.ts' && !to.startsWith('webview/');
  return true;
}

const allowed = (from: string, to: string): boolean => allowedIn(valueGraph, from, to);

test('the graph reader sees the real imports (so the checks below have something to hold)', () => {
  assert.ok(graph.size > 150, `${graph.size} files`);
  assert.ok(
    graph.get('src/extension.ts')?.some((t) => t.startsWith('src/features/')),
    'extension.ts imports features',
  );
  assert.ok(graph.get('src/core/ssh/session.ts')?.includes('src/core/ssh/auth.ts'), 'a value import');
  assert.ok(graph.get('src/core/ssh/auth.ts')?.includes('src/core/ssh/ssh2Module.ts'), 'a type-only import');
  assert.ok(
    [...graph.values()].flat().some((t) => t.startsWith('src/protocol/')),
    'someone imports the protocol',
  );
});

test('the checks fail on what they must refuse (a file cycle, an area cycle, a core → features import)', () => {
  const fake = new Map([
    ['src/core/a/x.ts', ['src/core/b/y.ts']],
    ['src/core/b/y.ts', ['src/core/a/z.ts']],
    ['src/core/a/z.ts', ['src/core/a/x.ts', 'src/features/f.ts']],
  ]);
  assert.deepEqual(cyclesOf(fake), [['src/core/a/x.ts', 'src/core/a/z.ts', 'src/core/b/y.ts']]);
  assert.deepEqual(cyclesOf(groupGraph(fake, coreArea)), [['core/a', 'core/b']]);
  assert.deepEqual(violations(fake, allowed), ['src/core/a/z.ts → src/features/f.ts']);
  // core may take the protocol's types, never its code.
  const toProtocol = new Map([
    ['src/core/a/t.ts', ['src/protocol/p.ts']],
    ['src/core/a/v.ts', ['src/protocol/p.ts']],
  ]);
  const onlyV = new Map([['src/core/a/v.ts', ['src/protocol/p.ts']]]);
  assert.deepEqual(
    violations(toProtocol, (f, t) => allowedIn(onlyV, f, t)),
    ['src/core/a/v.ts → src/protocol/p.ts'],
  );
});

test('the value graph leaves out type-only imports and only them', () => {
  assert.ok(graph.get('src/core/runs/view/runCompare.ts')?.includes('src/protocol/compare.ts'), 'runCompare takes the compare model from the protocol');
  assert.ok(!valueGraph.get('src/core/runs/view/runCompare.ts')?.includes('src/protocol/compare.ts'), 'as types only');
  assert.ok(valueGraph.get('src/core/ssh/session.ts')?.includes('src/core/ssh/auth.ts'), 'a value import stays');
});

test('no import cycle between files', () => {
  assert.deepEqual(cyclesOf(graph), []);
});

test("no cycle between core's areas (config reads the GPU catalog and estimator; the GPU code knows nothing of configs)", () => {
  assert.deepEqual(cyclesOf(groupGraph(graph, coreArea)), []);
});

test('no import against the layering (core → core, and protocol types only; protocol → nothing of ours; webview → protocol; features and CLI → not the extension)', () => {
  assert.deepEqual(violations(graph, allowed), []);
});
