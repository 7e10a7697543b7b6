// A shape the host sends to a webview is defined once, in src/protocol/, and the code that builds it imports that
// type (core may `import type` from the protocol: importGraph.test.ts). The compare model was written twice, in
// core/runs/view/runCompare.ts and protocol/compare.ts, with comments that had already drifted apart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const REPO = join(__dirname, '../../..');
const DECLARED = /^export\s+(?:interface|type|enum|class)\s+([A-Za-z0-9_]+)/gm;

function filesUnder(rel: string): string[] {
  return readdirSync(join(REPO, rel)).flatMap((n) => {
    const p = `${rel}/${n}`;
    return statSync(join(REPO, p)).isDirectory() ? filesUnder(p) : /\.ts$/.test(n) ? [p] : [];
  });
}

const declaredIn = (file: string): string[] => [...readFileSync(join(REPO, file), 'utf8').matchAll(DECLARED)].map((m) => m[1]!);

/** `Name: file` for every protocol type that a file outside src/protocol/ declares again. */
function redeclared(protocol: ReadonlyMap<string, string>, others: ReadonlyArray<readonly [string, readonly string[]]>): string[] {
  return others.flatMap(([file, names]) => names.filter((n) => protocol.has(n)).map((n) => `${n}: ${protocol.get(n)} and ${file}`));
}

test('protocol types: the check sees a repeated declaration', () => {
  assert.deepEqual(redeclared(new Map([['CompareModel', 'src/protocol/compare.ts']]), [['src/core/runs/view/runCompare.ts', ['CompareModel', 'Other']]]), [
    'CompareModel: src/protocol/compare.ts and src/core/runs/view/runCompare.ts',
  ]);
});

test('protocol types: no type src/protocol/ exports is declared again elsewhere in src/', () => {
  const protocol = new Map(filesUnder('src/protocol').flatMap((f) => declaredIn(f).map((n) => [n, f] as const)));
  assert.ok(protocol.has('CompareModel') && protocol.size > 30, `${protocol.size} protocol types`);
  const others = filesUnder('src')
    .filter((f) => !f.startsWith('src/protocol/'))
    .map((f) => [f, declaredIn(f)] as const);
  assert.deepEqual(redeclared(protocol, others), []);
});
