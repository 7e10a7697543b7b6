// Reading zod schemas as data: which keys a mapping allows, what a field's description says, its
// allowed values and bounds. Hovers, did-you-mean and quick fixes all come from here.
import { z } from 'zod';
import type { PathSegment } from './ast';

interface Def {
  readonly type: string;
  readonly innerType?: z.ZodType;
  readonly shape?: Record<string, z.ZodType>;
  readonly options?: readonly z.ZodType[];
  readonly element?: z.ZodType;
  readonly valueType?: z.ZodType;
  readonly catchall?: z.ZodType;
  readonly in?: z.ZodType;
  readonly values?: readonly unknown[];
  readonly entries?: Record<string, unknown>;
  readonly getter?: () => z.ZodType;
}

function def(s: z.ZodType): Def {
  return (s as unknown as { _zod: { def: Def } })._zod.def;
}

const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'readonly', 'catch', 'nonoptional']);

/** Strips optional/default/nullable wrappers, and resolves z.lazy (a recursive schema: a sweep's nested `parameters:`). */
export function unwrap(s: z.ZodType): z.ZodType {
  let cur = s;
  for (let i = 0; i < 16; i++) {
    const d = def(cur);
    if (WRAPPERS.has(d.type) && d.innerType) cur = d.innerType;
    else if (d.type === 'pipe' && d.in) cur = d.in;
    else if (d.type === 'lazy' && d.getter) cur = d.getter();
    else break;
  }
  return cur;
}

/** Object shapes this schema can be (several for a union of objects). */
export function objectShapes(s: z.ZodType): Array<Record<string, z.ZodType>> {
  const u = unwrap(s);
  const d = def(u);
  if (d.type === 'object' && d.shape) return [d.shape];
  if (d.type === 'union' && d.options) return d.options.flatMap(objectShapes);
  if (d.type === 'intersection') {
    const dd = d as unknown as { left: z.ZodType; right: z.ZodType };
    return [...objectShapes(dd.left), ...objectShapes(dd.right)];
  }
  return [];
}

/** The schema of the value at `path` below `s`. */
export function schemaAt(s: z.ZodType, path: readonly PathSegment[]): z.ZodType | undefined {
  let cur: z.ZodType | undefined = s;
  for (const seg of path) {
    if (!cur) return undefined;
    const u = unwrap(cur);
    const d = def(u);
    if (typeof seg === 'number' || d.type === 'array') {
      if (d.type === 'array' && d.element) {
        cur = d.element;
        continue;
      }
      if (d.type === 'union' && d.options) {
        cur = d.options.map((o) => def(unwrap(o))).find((o) => o.type === 'array')?.element;
        continue;
      }
      return undefined;
    }
    if (d.type === 'record') {
      cur = d.valueType;
      continue;
    }
    const shapes = objectShapes(u);
    let next: z.ZodType | undefined;
    for (const sh of shapes)
      if (Object.prototype.hasOwnProperty.call(sh, seg)) {
        next = sh[seg];
        break;
      }
    if (!next && d.type === 'object' && d.catchall && def(d.catchall).type !== 'never') next = d.catchall;
    cur = next;
  }
  return cur;
}

export function describe(s: z.ZodType | undefined): string | undefined {
  let cur = s;
  for (let i = 0; cur && i < 16; i++) {
    if (cur.description) return cur.description;
    const d = def(cur);
    cur = WRAPPERS.has(d.type) ? d.innerType : d.type === 'pipe' ? d.in : d.type === 'lazy' ? d.getter?.() : undefined;
  }
  return undefined;
}

/** Allowed literal values of an enum/literal (or a union of them). */
export function allowedValues(s: z.ZodType | undefined): string[] {
  if (!s) return [];
  const d = def(unwrap(s));
  if (d.type === 'enum' && d.entries) return Object.values(d.entries).map(String);
  if (d.type === 'literal' && d.values) return d.values.map(String);
  if (d.type === 'union' && d.options) return d.options.flatMap((o) => allowedValues(o));
  return [];
}

export interface NumberBounds {
  readonly min?: number;
  readonly max?: number;
  readonly int: boolean;
}

export function numberBounds(s: z.ZodType | undefined): NumberBounds | undefined {
  if (!s) return undefined;
  const u = unwrap(s);
  if (!(u instanceof z.ZodNumber)) return undefined;
  const min = u.minValue;
  const max = u.maxValue;
  return {
    ...(min !== null && Number.isFinite(min) && Math.abs(min) < Number.MAX_SAFE_INTEGER ? { min } : {}),
    ...(max !== null && Number.isFinite(max) && Math.abs(max) < Number.MAX_SAFE_INTEGER ? { max } : {}),
    int: u.isInt,
  };
}

export function firstSentence(s: string | undefined): string {
  if (!s) return '';
  const m = /^(.*?[.!?])(\s|$)/.exec(s);
  return m ? m[1]! : s;
}
