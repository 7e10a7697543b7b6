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

/** File name → pretty-printed schema text, for every kind that has a schema. */
export function allJsonSchemas(): Map<string, string> {
  const out = new Map<string, string>();
  for (const kind of Object.keys(KINDS) as ConfigKind[]) {
    const s = jsonSchemaFor(kind);
    if (s) out.set(`${kind}.schema.json`, `${JSON.stringify(s, null, 2)}\n`);
  }
  return out;
}
