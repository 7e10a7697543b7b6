import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { allJsonSchemas } from '../../../src/core/config/jsonSchemas';

const dir = join(__dirname, '../../../schemas');

test('schemas/: the committed JSON Schemas equal what the zod schemas generate (run npm run gen:schemas)', () => {
  const generated = allJsonSchemas();
  assert.deepEqual(
    readdirSync(dir)
      .filter((f) => f.endsWith('.schema.json'))
      .sort(),
    [...generated.keys()].sort(),
  );
  for (const [name, text] of generated) assert.equal(readFileSync(join(dir, name), 'utf8'), text, `schemas/${name} is stale`);
});

test('schemas/: every property of the run spec schema carries a description (hovers in other tools)', () => {
  const s = JSON.parse(readFileSync(join(dir, 'runspec.schema.json'), 'utf8')) as {
    properties: Record<string, { description?: string; properties?: Record<string, { description?: string }> }>;
    additionalProperties: boolean;
  };
  assert.equal(s.additionalProperties, false);
  for (const [k, v] of Object.entries(s.properties)) {
    assert.ok(v.description, k);
    for (const [k2, v2] of Object.entries(v.properties ?? {})) assert.ok(v2.description, `${k}.${k2}`);
  }
});

test('package.json contributes the generated schemas for YAML and JSON tooling', () => {
  const pkg = JSON.parse(readFileSync(join(__dirname, '../../../package.json'), 'utf8')) as {
    contributes: { jsonValidation: { url: string }[]; yamlValidation: { url: string }[] };
  };
  const urls = [...pkg.contributes.jsonValidation, ...pkg.contributes.yamlValidation].map((v) => v.url.replace('./schemas/', ''));
  // The contributed copies are schemas/editor/ (validation left to our diagnostics: oneDiagnostic.test.ts).
  for (const u of urls) {
    assert.match(u, /^editor\//, u);
    assert.ok(existsSync(join(dir, u)), u);
  }
});
