import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { runSpecSchema } from '../../../src/core/config/schemas/runSpec';

// The same files are read by python-runner's tests, so the two sides cannot drift.
const dir = join(__dirname, '../../fixtures/runspec');

test('runspec fixtures: every <name>.yaml has an identical <name>.json twin and both satisfy the schema', () => {
  const names = readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => f.slice(0, -5));
  assert.ok(names.length >= 3, `expected the three seed profiles, got ${names.join(', ')}`);
  for (const n of names) {
    const fromYaml: unknown = parse(readFileSync(join(dir, `${n}.yaml`), 'utf8'));
    const fromJson: unknown = JSON.parse(readFileSync(join(dir, `${n}.json`), 'utf8'));
    assert.deepEqual(fromJson, fromYaml, `${n}.json differs from ${n}.yaml`);
    const r = runSpecSchema.safeParse(fromYaml);
    assert.ok(r.success, `${n}: ${r.success ? '' : JSON.stringify(r.error.issues)}`);
  }
});

test('runspec schema: refuses an unknown key, a bad enum and an out-of-range value', () => {
  const base = parse(readFileSync(join(dir, 'qlora_t4.yaml'), 'utf8')) as Record<string, unknown>;
  assert.equal(runSpecSchema.safeParse({ ...base, epochz: 3 }).success, false);
  assert.equal(runSpecSchema.safeParse({ ...base, method: 'qlora4' }).success, false);
  assert.equal(runSpecSchema.safeParse({ ...base, lora: { r: 0 } }).success, false);
});
