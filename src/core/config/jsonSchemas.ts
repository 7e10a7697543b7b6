// JSON Schemas generated from the zod schemas, so other YAML/JSON tooling (the Red Hat YAML
// extension, VS Code's JSON language service) gets the same fields, ranges and descriptions.
import { z } from 'zod';
import { KINDS } from './registry';
import type { ConfigKind } from './types';

export function jsonSchemaFor(kind: ConfigKind): Record<string, unknown> | undefined {
  const info = KINDS[kind];
  if (!info.schema) return undefined;
  const s = z.toJSONSchema(info.schema, { target: 'draft-07', unrepresentable: 'any', io: 'input', cycles: 'ref', reused: 'inline' }) as Record<
    string,
    unknown
  >;
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    $id: `https://remote-finetune.dev/schemas/${kind}.schema.json`,
    title: info.title,
    ...withoutKey(s, '$schema'),
  };
}

function withoutKey(o: Record<string, unknown>, k: string): Record<string, unknown> {
  const { [k]: _drop, ...rest } = o;
  return rest;
}

// What a JSON Schema validator would report on its own. The editor's JSON and YAML services validate a file
// against the schema an extension contributes, and the same file gets our diagnostics (with ranges, "did you mean"
// and quick fixes): the schemas package.json contributes leave validation to us and keep only what completion
// and hovers read (properties, descriptions, defaults, allowed values as examples), so each problem is one
// diagnostic. The full schemas stay in schemas/ for tools that have no checks of their own.
const VALIDATION_KEYS = new Set([
  'type',
  'enum',
  'const',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'uniqueItems',
  'pattern',
  'format',
  'multipleOf',
  'required',
  'additionalProperties',
  'propertyNames',
  'not',
]);
const SCHEMA_MAPS = new Set(['properties', 'definitions', '$defs', 'patternProperties']);

/** The schema with every validation keyword removed; allowed values become examples, which completion offers. */
export function editorSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(editorSchema);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = {};
  const examples: unknown[] = [];
  for (const [k, v] of Object.entries(schema as Record<string, unknown>)) {
    if (k === 'enum' && Array.isArray(v)) examples.push(...(v as unknown[]));
    else if (k === 'const') examples.push(v);
    else if (k === 'additionalProperties' && typeof v === 'object' && v !== null) out[k] = editorSchema(v);
    else if (VALIDATION_KEYS.has(k)) continue;
    else if (SCHEMA_MAPS.has(k) && typeof v === 'object' && v !== null)
      out[k] = Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([name, sub]) => [name, editorSchema(sub)]));
    else if (k === 'default' || k === 'examples') out[k] = v;
    else out[k] = editorSchema(v);
  }
  if (examples.length > 0) out.examples = [...((out.examples as unknown[] | undefined) ?? []), ...examples];
  return out;
}

/** File name → pretty-printed schema text, for every kind that has a schema. */
export function allJsonSchemas(): Map<string, string> {
  const out = new Map<string, string>();
  for (const kind of Object.keys(KINDS) as ConfigKind[]) {
    const s = jsonSchemaFor(kind);
    if (s) out.set(`${kind}.schema.json`, `${JSON.stringify(s, null, 2)}\n`);
  }
  return out;
}

/** The schemas package.json contributes to the editor (schemas/editor/), one per kind with a schema. */
export function allEditorSchemas(): Map<string, string> {
  const out = new Map<string, string>();
  for (const kind of Object.keys(KINDS) as ConfigKind[]) {
    const s = jsonSchemaFor(kind);
    if (s)
      out.set(
        `${kind}.schema.json`,
        `${JSON.stringify({ ...(editorSchema(s) as object), $id: `https://remote-finetune.dev/schemas/editor/${kind}.schema.json` }, null, 2)}\n`,
      );
  }
  return out;
}
