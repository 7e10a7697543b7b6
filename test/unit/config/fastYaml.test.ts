import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import fc from 'fast-check';
import { parseDocument, stringify } from 'yaml';
import { fastParseYaml } from '../../../src/core/config/fastYaml';
import { parseConfigText, toValue } from '../../../src/core/config/parse';
import type { DocNode } from '../../../src/core/config/ast';

const root = resolve(__dirname, '../../..');
function yamlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? yamlFiles(p) : /\.ya?ml$/.test(n) ? [p] : [];
  });
}

function scalars(n: DocNode | undefined, out: string[] = []): string[] {
  if (!n) return out;
  if (n.kind === 'scalar') out.push(`${n.start}-${n.end}:${String(n.value)}`);
  else if (n.kind === 'seq') for (const it of n.items) scalars(it, out);
  else
    for (const p of n.pairs) {
      scalars(p.key, out);
      scalars(p.value, out);
    }
  return out;
}

/** What the library says, when it accepts the text without errors. */
function library(text: string): { ok: boolean; value?: unknown } {
  const doc = parseDocument(text, { uniqueKeys: true, strict: true });
  if (doc.errors.length > 0) return { ok: false };
  return { ok: true, value: doc.toJS({ maxAliasCount: -1 }) as unknown };
}

// The configs written in other projects' styles (test/fixtures/config/wild) use some of what the
// fast path leaves to the library (a !!float tag, values on the line after their key); where it
// does answer, it must agree, and it must answer for nearly all of them.
const wildDir = join(root, 'test/fixtures/config/wild');

test("fast path: the project's own configs take it, with the same values and scalar ranges as the YAML library", () => {
  const files = [...yamlFiles(join(root, 'examples')), ...yamlFiles(join(root, 'test/fixtures/runspec')), ...yamlFiles(join(root, 'test/fixtures/config'))];
  assert.ok(files.length >= 10);
  let wildFast = 0;
  for (const f of files) {
    const text = readFileSync(f, 'utf8');
    const fast = fastParseYaml(text);
    if (!fast && f.startsWith(wildDir)) continue;
    if (f.startsWith(wildDir)) wildFast++;
    assert.ok(fast, `${f} fell back to the library`);
    const slow = parseConfigText(text, 'yaml', { fast: false });
    assert.deepEqual(toValue(fast.root), toValue(slow.root), f);
    assert.deepEqual(scalars(fast.root), scalars(slow.root), f);
  }
  assert.ok(wildFast >= 30, `only ${wildFast} wild configs took the fast path`);
});

const key = fc.stringMatching(/^[a-z_][a-z0-9_]{0,11}$/);
const leaf = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
  fc.string({ maxLength: 12 }),
  fc.constantFrom('2e-4', 'no', 'NO', 'yes', '~', 'a: b', '#x', 'x #y', "it's", '"q"', '0x1F', '0o17', '.inf', '-.5', '1_000', 'all-linear'),
);
const value = fc.letrec((tie) => ({
  v: fc.oneof({ depthSize: 'small' }, leaf, fc.array(tie('v'), { maxLength: 4 }), fc.dictionary(key, tie('v'), { maxKeys: 5 })),
})).v;

test("fast path property: on any document the library writes, it answers with the library's values or defers", () => {
  fc.assert(
    fc.property(fc.dictionary(key, value, { minKeys: 1, maxKeys: 6 }), fc.boolean(), (obj, flow) => {
      const text = stringify(obj, flow ? { collectionStyle: 'flow', lineWidth: 0 } : { lineWidth: 0 });
      const fast = fastParseYaml(text);
      if (!fast) return;
      const lib = library(text);
      assert.ok(lib.ok);
      assert.deepEqual(toValue(fast.root), lib.value, text);
    }),
    { numRuns: 600 },
  );
});

test('fast path: a lone "-" value is a sequence indicator the library rejects, never a plain scalar (found by the property below)', () => {
  for (const text of ['max_steps: -\n', 'max_steps: -\t\n', 'a: -\nb: 1\n', 'x: [a, -]\n']) {
    const fast = fastParseYaml(text);
    if (fast) assert.deepEqual(toValue(fast.root), library(text).value, text);
    if (!library(text).ok) assert.equal(fast, undefined, `accepted what the library rejects: ${JSON.stringify(text)}`);
  }
});

test('fast path property: on mutated configs it never accepts what the library rejects, and never disagrees', () => {
  const seeds = [...yamlFiles(join(root, 'examples')), ...yamlFiles(join(root, 'test/fixtures/config'))].map((f) => readFileSync(f, 'utf8'));
  const mutation = fc.record({
    seed: fc.nat(seeds.length - 1),
    ops: fc.array(
      fc.record({
        at: fc.nat(),
        len: fc.nat(6),
        insert: fc.oneof(
          fc.string({ maxLength: 6 }),
          fc.constantFrom(
            ':',
            ': ',
            '- ',
            '\n',
            '\n  ',
            '\n- ',
            '  ',
            '{',
            '}',
            '[',
            ']',
            ',',
            '"',
            "'",
            '#',
            ' #',
            '&a ',
            '*a',
            '!',
            '|',
            '>',
            '?',
            '---\n',
            '...',
            '\\',
            '%',
          ),
        ),
      }),
      { minLength: 1, maxLength: 4 },
    ),
  });
  fc.assert(
    fc.property(mutation, ({ seed, ops }) => {
      let text = seeds[seed]!;
      for (const op of ops) {
        const at = op.at % (text.length + 1);
        text = text.slice(0, at) + op.insert + text.slice(at + op.len);
      }
      const fast = fastParseYaml(text);
      if (!fast) return;
      const lib = library(text);
      assert.ok(lib.ok, `fast path accepted text the library rejects:\n${text}`);
      assert.deepEqual(toValue(fast.root), lib.value ?? null, text);
    }),
    { numRuns: 1500 },
  );
});
