// No dead exports in the product: every export of src/** and webview/src/** is imported by some other file
// (product, tests, benchmarks or scripts), or at least used by its own file, or is an entry point named
// below. An export nothing uses is code nobody runs; delete it (or, when its own file needs it, the
// `export`). The reader is proven on made-up files first, so a pass means something.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join, posix } from 'node:path';
import { moduleFacts, readModuleFacts, unusedExports } from '../../support/unusedExports';
import type { ModuleFacts } from '../../support/unusedExports';

const REPO = join(__dirname, '../../..');
/** Everything that may import the product: its own sources, the webviews, tests, benchmarks and scripts. */
const facts = readModuleFacts(REPO, ['src', 'webview/src', 'test', 'bench', 'scripts']);
const product = (f: string): boolean => f.startsWith('src/') || f.startsWith('webview/src/');

/**
 * Entry points: called from outside the TypeScript graph, so no file imports them.
 * The bundles' other entries export nothing (their module body is what runs): src/cli/main.ts runs main()
 * under its require.main guard (main is exported for the CLI tests), src/core/config/validateWorker.ts is
 * the config worker's thread, and each webview/src/<panel>/main.ts is a panel's script.
 */
const ENTRY_POINTS = new Set([
  // VS Code calls these on the bundle package.json's "main" names (dist/extension.js from src/extension.ts).
  'src/extension.ts#activate',
  'src/extension.ts#deactivate',
]);

function factsOf(files: Record<string, string>): Map<string, ModuleFacts> {
  const resolveSpec = (from: string, spec: string): string | undefined => {
    if (!spec.startsWith('.')) return undefined;
    const base = posix.join(posix.dirname(from), spec);
    return [`${base}.ts`, `${base}/index.ts`].find((c) => c in files);
  };
  return new Map(Object.entries(files).map(([f, text]) => [f, moduleFacts(f, text, resolveSpec)]));
}

const dead = (f: ReadonlyMap<string, ModuleFacts>, allowed?: ReadonlySet<string>): string[] => unusedExports(f, product, (e) => !e.usedInFile, allowed);

test('the reader tells imported, re-exported, dynamically loaded, locally used and dead exports apart', () => {
  const files = {
    'src/a.ts': [
      'export const used = 1;',
      'export function dead(): void {}',
      'export type DeadType = string;',
      'export interface Local { x: number }',
      'export function usesLocal(l: Local): number { return l.x; }',
      "export { renamed as alias } from './b';",
      'const inner = 2; export { inner };',
      "import { alsoDead } from './b'; export { alsoDead } from './b';",
      'export const usesImport = alsoDead;',
    ].join('\n'),
    'src/b.ts': 'export const renamed = 1; export const alsoDead = 2;\nexport type OnlyTyped = number;',
    'src/c.ts': 'export const viaStar = 1;',
    'src/d.ts': 'export default function entry(): void {}',
    'src/e.ts': 'export class Lazy {}',
    'src/barrel/index.ts': "export * from '../c';",
    'test/x.test.ts': [
      "import { used, usesLocal, alias } from '../src/a';",
      "import type { OnlyTyped } from '../src/b';",
      "import * as all from '../src/barrel';",
      "import entry from '../src/d';",
      "type L = typeof import('../src/e').Lazy;",
    ].join('\n'),
  };
  const f = factsOf(files);
  assert.deepEqual(f.get('src/a.ts')!.exports.get('Local'), { kind: 'type', usedInFile: true });
  assert.deepEqual(f.get('src/a.ts')!.exports.get('dead'), { kind: 'value', usedInFile: false });
  // A re-export nobody imports is dead even where the file uses its own import of the same name.
  assert.deepEqual(
    dead(f),
    ['src/a.ts#alsoDead', 'src/a.ts#dead', 'src/a.ts#DeadType', 'src/a.ts#inner', 'src/a.ts#usesImport'].sort((a, b) => a.localeCompare(b)),
  );
  // A new export nobody uses makes the check fail; an allowed entry point does not.
  const grown = factsOf({ ...files, 'src/d.ts': `${files['src/d.ts']}\nexport const RUN_AGAIN = 'x';` });
  assert.ok(dead(grown).includes('src/d.ts#RUN_AGAIN'));
  assert.ok(!dead(grown, new Set(['src/d.ts#RUN_AGAIN'])).includes('src/d.ts#RUN_AGAIN'));
  // Exports only their own file uses are a separate question (the `export` keyword alone is superfluous).
  assert.deepEqual(
    unusedExports(f, product, (e) => e.usedInFile),
    ['src/a.ts#Local'],
  );
});

test('the reader sees the real sources (so the check below has something to hold)', () => {
  assert.ok([...facts.keys()].filter(product).length > 150);
  assert.ok(facts.get('src/core/providers/providerSelection.ts')?.exports.has('createProviderSelection'));
  assert.ok(facts.get('src/cli/commands/offers.ts')?.imports.get('src/core/providers/providerSelection.ts')?.has('createProviderSelection'));
  assert.ok(facts.get('src/extension.ts')?.exports.has('activate'));
});

test('every allowed entry point is a real export (the list cannot name what is gone)', () => {
  for (const id of ENTRY_POINTS) {
    const [file, name] = id.split('#') as [string, string];
    assert.ok(facts.get(file)?.exports.has(name), `${id} is not exported any more: drop it from ENTRY_POINTS`);
  }
});

test('no export of src/** or webview/src/** is used nowhere (entry points aside)', () => {
  assert.deepEqual(dead(facts, ENTRY_POINTS), []);
});
