// zod issues → diagnostics with exact ranges, stable codes and a message that says what to do.
// Codes per kind: base+0 unknown key (warning), +1 missing required key, +2 wrong type,
// +3 out of range, +4 value not allowed, +5 bad format.
import type { z } from 'zod';
import type { DocNode, PathSegment } from './ast';
import { nodeAt, pairAt, keyText } from './ast';
import { closest } from './didYouMean';
import type { ConfigDiagnostic, Fix } from './types';
import { allowedValues, describe, firstSentence, numberBounds, objectShapes, schemaAt } from './zodWalk';
import { insertKey, renameKey, replaceNode, scalarText } from './edits';
import type { Syntax } from './edits';
import type { SensibleValue } from './sensibleValues';
import { plain, plural, withoutRange } from './plainText';

export interface SchemaCheckInput {
  readonly schema: z.ZodType;
  /** Receives the schema's output when the value passes (unknown keys aside), so the caller need not parse it again. */
  readonly parsed?: (data: unknown) => void;
  readonly root: DocNode | undefined;
  readonly value: unknown;
  readonly text: string;
  readonly syntax: Syntax;
  /** First code of this kind's block, e.g. 100 for the run spec. */
  readonly codeBase: number;
  /** Whether unknown keys are reported (Axolotl/LLaMA-Factory keep their own keys quiet). */
  readonly reportUnknown: boolean;
  /** Extra names an unknown key may be a typo of (other known vocabularies). */
  readonly extraCandidates?: readonly string[];
  /** Values whose problems are not reported (e.g. `${VAR}` filled in before the tool reads the file). */
  readonly skipValue?: (n: DocNode) => boolean;
  /** A value worth proposing for a number out of range (2e-4 for a LoRA learning rate) instead of the bound. */
  readonly sensible?: (path: readonly PathSegment[]) => SensibleValue | undefined;
  /** What happens to an unknown key under `path` where "it is ignored" would be false (the run spec's trainer). */
  readonly unknownKeyFate?: (path: readonly PathSegment[]) => string | undefined;
}

export function code(base: number, offset: number): string {
  return `RFT${String(base + offset).padStart(3, '0')}`;
}

export function dotted(path: readonly PathSegment[]): string {
  let s = '';
  for (const p of path) s += typeof p === 'number' ? `[${p}]` : s ? `.${p}` : p;
  return s || 'the top level';
}

export function checkSchema(inp: SchemaCheckInput): ConfigDiagnostic[] {
  const r = inp.schema.safeParse(inp.value);
  if (r.success) {
    inp.parsed?.(r.data);
    return [];
  }
  // An unknown key is only a warning (the runner passes unknown trainer keys on), so the value still stands as
  // the schema's output: no schema here transforms what it reads.
  if (r.error.issues.every((i) => i.code === 'unrecognized_keys')) inp.parsed?.(inp.value);
  const out: ConfigDiagnostic[] = [];
  for (const issue of r.error.issues) {
    const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
    if (inp.skipValue && issue.code !== 'unrecognized_keys') {
      const n = nodeAt(inp.root, path);
      if (n && inp.skipValue(n)) continue;
    }
    const d = issueToDiagnostic(inp, issue, path);
    for (const x of d) out.push(x);
  }
  return out;
}

function issueToDiagnostic(inp: SchemaCheckInput, issue: z.core.$ZodIssue, path: PathSegment[]): ConfigDiagnostic[] {
  const { root, syntax, codeBase } = inp;
  const field = dotted(path);
  const fieldSchema = schemaAt(inp.schema, path);
  const description = plain(describe(fieldSchema) ?? '');
  const hint = firstSentence(description);
  const node = nodeAt(root, path);
  const anchor = node ?? anchorFor(root, path);
  const at = (n: { start: number; end: number }): { start: number; end: number } => ({ start: n.start, end: Math.max(n.end, n.start + 1) });

  // A missing key shows up as invalid_type or invalid_value with nothing at its path.
  if (
    node === undefined &&
    path.length > 0 &&
    issue.code !== 'unrecognized_keys' &&
    (issue.code === 'invalid_type' || issue.code === 'invalid_value' || issue.code === 'invalid_union')
  ) {
    return missingKey(inp, path, fieldSchema, hint, anchor);
  }
  switch (issue.code) {
    case 'unrecognized_keys': {
      if (!inp.reportUnknown) return [];
      const parent = node?.kind === 'map' ? node : undefined;
      const shapes = objectShapes(fieldSchema ?? inp.schema);
      const known = new Set<string>(shapes.flatMap((s) => Object.keys(s)));
      for (const c of inp.extraCandidates ?? []) known.add(c);
      const res: ConfigDiagnostic[] = [];
      for (const k of issue.keys) {
        const pair = parent?.pairs.find((p) => keyText(p) === k);
        if (!pair) continue;
        const guess = closest(k, known);
        const where = path.length ? ` in ${field}` : '';
        const fate = inp.unknownKeyFate?.(path);
        res.push({
          ...at(pair.key),
          severity: 'warning',
          code: code(codeBase, 0),
          message: guess
            ? `Unknown key '${k}'${where}. Did you mean '${guess}'?${fate ? ` ${fate}` : ''}`
            : fate
              ? `Unknown key '${k}'${where}. ${fate}`
              : `Unknown key '${k}'${where}; it is ignored. Remove it or check the spelling.`,
          ...(guess ? { fixes: [{ title: `Rename to '${guess}'`, edits: [renameKey(pair.key, guess, syntax)], preferred: true }] } : {}),
        });
      }
      return res;
    }
    case 'invalid_type': {
      if (node === undefined) return missingKey(inp, path, fieldSchema, hint, anchor);
      const expected = issue.expected;
      const got = describeNode(node);
      const fixes: Fix[] = [];
      if (
        node.kind === 'scalar' &&
        typeof node.value === 'string' &&
        (expected === 'number' || expected === 'int') &&
        node.value.trim() !== '' &&
        Number.isFinite(Number(node.value))
      ) {
        fixes.push({
          title: `Write ${node.value.trim()} as a number`,
          edits: [{ start: node.start, end: node.end, newText: String(Number(node.value)) }],
          preferred: true,
        });
      }
      if (node.kind === 'scalar' && typeof node.value === 'string' && expected === 'boolean' && /^(true|false)$/i.test(node.value)) {
        fixes.push({
          title: `Write ${node.value.toLowerCase()} as a boolean`,
          edits: [{ start: node.start, end: node.end, newText: node.value.toLowerCase() }],
          preferred: true,
        });
      }
      return [
        {
          ...at(node),
          severity: 'error',
          code: code(codeBase, 2),
          message: `${field} must be ${article(expected)}, not ${got}.${hint ? ` ${hint}` : ''}`,
          ...(fixes.length ? { fixes } : {}),
        },
      ];
    }
    case 'too_small':
    case 'too_big': {
      const target = node ?? anchor;
      if (issue.origin === 'number' || issue.origin === 'int' || issue.origin === 'bigint') {
        const b = numberBounds(fieldSchema);
        const limit = Number(issue.code === 'too_small' ? issue.minimum : issue.maximum);
        const got = node?.kind === 'scalar' ? String(node.value) : '';
        // The range is said once: an exclusive bound as such, otherwise "from min to max" when both are known.
        const need = !issue.inclusive
          ? `${issue.code === 'too_small' ? 'greater than' : 'less than'} ${limit}`
          : b?.min !== undefined && b.max !== undefined
            ? `from ${b.min} to ${b.max}`
            : `${issue.code === 'too_small' ? 'at least' : 'at most'} ${limit}`;
        const advice = firstSentences(withoutRange(description, b?.min, b?.max), 2);
        const good = inp.sensible?.(path);
        const fixes: Fix[] = !node
          ? []
          : good
            ? [{ title: `Set to ${good.text} (${good.why})`, edits: [{ start: node.start, end: node.end, newText: good.text }], preferred: true }]
            : [{ title: `Set to ${limit}`, edits: [replaceNode(node, limit, syntax)] }];
        return [
          {
            ...at(target),
            severity: 'error',
            code: code(codeBase, 3),
            message: `${field} is ${got || 'out of range'}; it must be ${need}.${advice ? ` ${advice}` : ''}`,
            fixes,
          },
        ];
      }
      const n = Number(issue.code === 'too_small' ? issue.minimum : issue.maximum);
      const what = issue.origin === 'string' ? 'character' : 'item';
      return [
        {
          ...at(target),
          severity: 'error',
          code: code(codeBase, 3),
          message: `${field} needs ${issue.code === 'too_small' ? 'at least' : 'at most'} ${plural(n, what)}.${hint ? ` ${hint}` : ''}`,
        },
      ];
    }
    case 'invalid_value': {
      const values = issue.values.map(String);
      const target = node ?? anchor;
      const got = node?.kind === 'scalar' ? String(node.value) : '';
      // An unquoted YAML/JSON boolean or number whose text is an allowed string (W&B's
      // impute_while_running: false): "Did you mean 'false'?" would read the same, so say to quote it.
      if (
        node?.kind === 'scalar' &&
        (typeof node.value === 'boolean' || typeof node.value === 'number') &&
        issue.values.some((v) => typeof v === 'string' && v === got)
      ) {
        const asString = scalarText(got, syntax);
        return [
          {
            ...at(node),
            severity: 'error',
            code: code(codeBase, 4),
            message: `${field} is the ${typeof node.value} ${got}, but it takes a string (one of: ${values.join(', ')}): write it as a string: ${syntax === 'json' ? asString : `'${got}'`}.`,
            fixes: [{ title: `Write it as the string ${asString}`, edits: [replaceNode(node, got, syntax)], preferred: true }],
          },
        ];
      }
      const guess = got ? closest(got, values) : undefined;
      const fixes: Fix[] = [];
      if (node && node.kind === 'scalar') {
        const ordered = guess ? [guess, ...values.filter((v) => v !== guess)] : values;
        for (const v of ordered.slice(0, guess ? 1 : 3))
          fixes.push({ title: `Change to '${v}'`, edits: [replaceNode(node, numOrStr(v, issue.values), syntax)], preferred: v === guess });
      }
      return [
        {
          ...at(target),
          severity: 'error',
          code: code(codeBase, 4),
          message: `${field} is ${got ? `'${got}'` : 'not allowed'}; use one of: ${values.join(', ')}.${guess ? ` Did you mean '${guess}'?` : ''}`,
          fixes,
        },
      ];
    }
    case 'not_multiple_of':
      return [{ ...at(node ?? anchor), severity: 'error', code: code(codeBase, 3), message: `${field} must be a multiple of ${String(issue.divisor)}.` }];
    case 'invalid_union': {
      const target = node ?? anchor;
      return [
        { ...at(target), severity: 'error', code: code(codeBase, 2), message: `${field} has the wrong form (${describeNode(node)}).${hint ? ` ${hint}` : ''}` },
      ];
    }
    default: {
      const target = node ?? anchor;
      // A field that takes listed names or a pattern (attn_implementation: sdpa, … or a Hub kernel
      // id) fails on the pattern; a near miss of a listed name still gets its suggestion.
      const guess = node?.kind === 'scalar' && typeof node.value === 'string' ? closest(node.value, allowedValues(fieldSchema)) : undefined;
      return [
        {
          ...at(target),
          severity: 'error',
          code: code(codeBase, 5),
          message: `${field} ${issue.message}.${guess ? ` Did you mean '${guess}'?` : ''}${hint ? ` ${hint}` : ''}`,
          ...(guess && node ? { fixes: [{ title: `Change to '${guess}'`, edits: [replaceNode(node, guess, syntax)], preferred: true }] } : {}),
        },
      ];
    }
  }
}

function missingKey(
  inp: SchemaCheckInput,
  path: PathSegment[],
  fieldSchema: z.ZodType | undefined,
  hint: string,
  anchor: { start: number; end: number },
): ConfigDiagnostic[] {
  const parentPath = path.slice(0, -1);
  const parent = nodeAt(inp.root, parentPath);
  if (parent === undefined && parentPath.length > 0) return []; // the parent's own issue covers it
  const key = String(path[path.length - 1] ?? '');
  const guess = allowedValues(fieldSchema)[0];
  const fixes: Fix[] = [];
  if (parent?.kind === 'map' && guess !== undefined) {
    const e = insertKey(inp.text, parent, key, numOrStr(guess), inp.syntax);
    if (e) fixes.push({ title: `Add '${key}: ${scalarText(numOrStr(guess), inp.syntax)}'`, edits: [e] });
  }
  return [
    {
      start: anchor.start,
      end: Math.max(anchor.end, anchor.start + 1),
      severity: 'error',
      code: code(inp.codeBase, 1),
      message: `Missing required key '${key}' in ${parentPath.length ? dotted(parentPath) : 'the top level'}. ${hint ? `Add it: ${hint}` : 'Add it.'}`,
      ...(fixes.length ? { fixes } : {}),
    },
  ];
}

/** Where a problem with a missing node is shown: the key of its nearest existing parent mapping. */
export function anchorFor(root: DocNode | undefined, path: readonly PathSegment[]): { start: number; end: number } {
  for (let i = path.length - 1; i >= 1; i--) {
    const p = pairAt(root, path.slice(0, i));
    if (p) return p.key;
  }
  if (root?.kind === 'map') {
    const first = root.pairs[0];
    if (first) return first.key;
  }
  if (root) return { start: root.start, end: Math.min(root.end, root.start + 1) };
  return { start: 0, end: 0 };
}

function describeNode(n: DocNode | undefined): string {
  if (!n) return 'missing';
  if (n.kind === 'map') return 'a mapping';
  if (n.kind === 'seq') return 'a list';
  if (n.value === null) return 'empty';
  if (typeof n.value === 'string') return `the string '${n.value.length > 40 ? n.value.slice(0, 40) + '…' : n.value}'`;
  return `${typeof n.value} ${String(n.value)}`;
}

function article(t: string): string {
  const names: Record<string, string> = {
    int: 'an integer',
    number: 'a number',
    string: 'a string',
    boolean: 'true or false',
    object: 'a mapping',
    array: 'a list',
    literal: 'a fixed value',
  };
  return names[t] ?? `a ${t}`;
}

/** The first `n` sentences: the field's meaning and its usual values, without the rest of its story. */
function firstSentences(s: string, n: number): string {
  return s
    .split(/(?<=[.!?])\s+/)
    .slice(0, n)
    .join(' ')
    .trim();
}

function numOrStr(v: string, originals?: readonly unknown[]): string | number | boolean {
  const orig = originals?.find((o) => String(o) === v);
  if (typeof orig === 'number' || typeof orig === 'boolean') return orig;
  return v;
}
