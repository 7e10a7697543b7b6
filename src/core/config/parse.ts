// Parse YAML or JSON text into the offset-carrying tree (ast.ts). Problems in the text become
// diagnostics, never exceptions: syntax errors, alias bombs, nesting that would exhaust the stack.
import { parseDocument, isAlias, isMap, isScalar, isSeq, isPair, visit } from 'yaml';
import type { Node as YamlNode, Document } from 'yaml';
import type { DocNode, ScalarNode, MapNode, SeqNode, PairNode } from './ast';
import type { ConfigDiagnostic } from './types';
import { fastParseYaml } from './fastYaml';

/** Expanded node budget: a billion-laughs document blows past this long before it costs time or memory. */
export const MAX_EXPANDED_NODES = 200_000;
export const MAX_DEPTH = 128;

export interface ParseResult {
  readonly root: DocNode | undefined;
  readonly diagnostics: ConfigDiagnostic[];
  /** True when the document was too big for the full parser under `libraryLimit` (its one diagnostic says so). */
  readonly deferred?: boolean;
}

export function parseConfigText(text: string, syntax: 'yaml' | 'json', opts: { readonly fast?: boolean; readonly libraryLimit?: number } = {}): ParseResult {
  const depthProblem = checkFlowDepth(text);
  if (depthProblem) return { root: undefined, diagnostics: [depthProblem] };
  if (syntax === 'yaml' && opts.fast !== false) {
    // The fast path covers the block-style subset configs are written in; anything else
    // (anchors, block scalars, tags, odd layouts, errors) goes to the full YAML parser.
    const fast = fastParseYaml(text);
    if (fast) return fast;
  }
  if (opts.libraryLimit !== undefined && text.length > opts.libraryLimit) {
    return {
      root: undefined,
      diagnostics: [
        {
          start: 0,
          end: 0,
          severity: 'warning',
          code: 'RFT004',
          message: `This ${syntax === 'json' ? 'JSON' : 'YAML'} file is over ${Math.round(opts.libraryLimit / 1024)} KB and needs the full parser (it has anchors, block scalars, other rare syntax or an error), which is too slow to run while you type. Run remote-finetune validate on it for the full check.`,
        },
      ],
      deferred: true,
    };
  }
  return parseWithYamlLibrary(text, syntax);
}

function checkFlowDepth(text: string): ConfigDiagnostic | undefined {
  let depth = 0;
  let max = 0;
  let at = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > max) {
        max = depth;
        at = i;
      }
    } else if (c === 0x5d || c === 0x7d) {
      if (depth > 0) depth--;
    }
  }
  if (max <= MAX_DEPTH) return undefined;
  return {
    start: at,
    end: at + 1,
    severity: 'error',
    code: 'RFT005',
    message: `Nesting deeper than ${MAX_DEPTH} levels; no config needs that. Flatten the structure.`,
  };
}

function parseWithYamlLibrary(text: string, syntax: 'yaml' | 'json'): ParseResult {
  const code = syntax === 'json' ? 'RFT002' : 'RFT001';
  const diagnostics: ConfigDiagnostic[] = [];
  let doc: Document.Parsed;
  try {
    doc = parseDocument(text, { prettyErrors: false, keepSourceTokens: false, uniqueKeys: true, strict: true });
  } catch (e) {
    // The library recurses on nesting; a RangeError here means the document is too deep.
    return {
      root: undefined,
      diagnostics: [
        {
          start: 0,
          end: Math.min(1, text.length),
          severity: 'error',
          code: 'RFT005',
          message: `The document could not be parsed (${e instanceof Error ? e.message : String(e)}). Flatten its nesting.`,
        },
      ],
    };
  }
  for (const e of doc.errors) {
    const dup = e.code === 'DUPLICATE_KEY';
    diagnostics.push({
      start: e.pos[0],
      end: Math.max(e.pos[1], e.pos[0] + 1),
      severity: 'error',
      code: dup ? 'RFT007' : code,
      message: dup
        ? 'Duplicate key: only one value can win. Remove or rename one of them.'
        : `${syntax === 'json' ? 'JSON' : 'YAML'} syntax error: ${firstLine(e.message)}`,
    });
  }
  for (const w of doc.warnings) {
    diagnostics.push({ start: w.pos[0], end: Math.max(w.pos[1], w.pos[0] + 1), severity: 'warning', code, message: firstLine(w.message) });
  }
  const conv = new Converter(doc);
  let root: DocNode | undefined;
  try {
    root = doc.contents ? conv.convert(doc.contents as YamlNode, 0) : undefined;
  } catch (e) {
    if (e instanceof BudgetError) {
      diagnostics.push({ start: e.start, end: e.end, severity: 'error', code: e.code, message: e.message });
      return { root: undefined, diagnostics };
    }
    throw e;
  }
  diagnostics.push(...conv.mergeProblems);
  return { root, diagnostics };
}

function firstLine(s: string): string {
  const i = s.indexOf('\n');
  return i === -1 ? s : s.slice(0, i);
}

class BudgetError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly start: number,
    readonly end: number,
  ) {
    super(message);
  }
}

class Converter {
  private expanded = 0;
  private readonly memo = new Map<YamlNode, DocNode>();
  private readonly sizes = new Map<DocNode, number>();
  /** Anchored nodes by name, in document order. */
  private readonly anchors = new Map<string, YamlNode[]>();
  constructor(doc: Document.Parsed) {
    // The library's Alias.resolve() walks the whole document for every alias: with a thousand `<<: *defaults`
    // in a 20 KB file that was four seconds of a frozen editor. One walk here instead.
    visit(doc, {
      Node: (_key, node) => {
        if (!isAlias(node) && node.anchor) {
          const list = this.anchors.get(node.anchor) ?? [];
          list.push(node as YamlNode);
          this.anchors.set(node.anchor, list);
        }
      },
    });
  }

  /** What an alias names: the nearest anchor of that name before it (YAML lets a name be anchored again). */
  private resolve(alias: YamlNode & { source: string }): YamlNode | undefined {
    const at = alias.range?.[0] ?? 0;
    let found: YamlNode | undefined;
    for (const n of this.anchors.get(alias.source) ?? []) {
      if ((n.range?.[0] ?? 0) < at) found = n;
      else break;
    }
    return found;
  }

  /** Merge-key problems found while converting: a `<<` whose value is not a mapping or a list of them. */
  readonly mergeProblems: ConfigDiagnostic[] = [];

  /** The pairs a merge key's value contributes, or undefined (with a diagnostic) when it is not mergeable. */
  private mergeSources(value: DocNode, key: ScalarNode): PairNode[] | undefined {
    const maps = value.kind === 'map' ? [value] : value.kind === 'seq' && value.items.every((i) => i.kind === 'map') ? (value.items as MapNode[]) : undefined;
    if (!maps) {
      this.mergeProblems.push({
        start: key.start,
        end: key.end,
        severity: 'error',
        code: 'RFT001',
        message: 'YAML merge key "<<" takes a mapping (for example *defaults) or a list of them; this value cannot be merged.',
      });
      return undefined;
    }
    return maps.flatMap((m) => m.pairs);
  }

  convert(n: YamlNode, depth: number): DocNode {
    const [start, , end] = n.range ?? [0, 0, 0];
    if (depth > MAX_DEPTH) throw new BudgetError('RFT005', `Nesting deeper than ${MAX_DEPTH} levels; flatten the structure.`, start, end);
    if (isAlias(n)) {
      const target = this.resolve(n);
      if (!target) return { kind: 'scalar', start, end, value: null, quoted: false };
      const converted = this.memo.get(target) ?? this.convert(target, depth + 1);
      // An alias costs as much as what it expands to: that is what later checks (and toValue) walk.
      this.expanded += this.sizes.get(converted) ?? 1;
      if (this.expanded > MAX_EXPANDED_NODES) {
        throw new BudgetError(
          'RFT006',
          `Aliases expand to more than ${MAX_EXPANDED_NODES.toLocaleString('en-US')} nodes (an "alias bomb"); configs never need that. Replace the aliases with plain values.`,
          start,
          end,
        );
      }
      return converted;
    }
    let out: DocNode;
    let size = 1;
    if (isMap(n)) {
      const pairs: PairNode[] = [];
      const merged: PairNode[] = [];
      for (const it of n.items) {
        if (!isPair(it)) continue;
        const k = it.key as YamlNode | null;
        const key: ScalarNode =
          k && isScalar(k)
            ? {
                kind: 'scalar',
                start: k.range?.[0] ?? start,
                end: k.range?.[1] ?? start,
                value: scalarValue(k.value),
                quoted: k.type === 'QUOTE_DOUBLE' || k.type === 'QUOTE_SINGLE',
              }
            : { kind: 'scalar', start: k?.range?.[0] ?? start, end: k?.range?.[1] ?? start, value: '', quoted: false };
        const v = it.value as YamlNode | null;
        const value = v ? this.convert(v, depth + 1) : undefined;
        if (value) size += this.sizes.get(value) ?? 1;
        // `<<: *defaults` (YAML 1.1's merge key, which Axolotl, DeepSpeed and CI configs lean on and PyYAML
        // applies when the tools load them): the named mapping's keys join this one, so they are checked
        // where they are written, and `<<` itself is no unknown key.
        if (key.value === '<<' && !key.quoted && value) {
          merged.push(...(this.mergeSources(value, key) ?? []));
          continue;
        }
        pairs.push({ key, value });
      }
      // Keys written here win over merged ones; of merged ones the first source wins (YAML 1.1 merge spec).
      const have = new Set(pairs.map((p) => String(p.key.value)));
      for (const p of merged) {
        const name = String(p.key.value);
        if (have.has(name)) continue;
        have.add(name);
        pairs.push(p);
      }
      out = { kind: 'map', start, end, pairs } satisfies MapNode;
    } else if (isSeq(n)) {
      const items: DocNode[] = [];
      for (const it of n.items) {
        if (it === null || it === undefined) continue;
        const c = this.convert(it as YamlNode, depth + 1);
        size += this.sizes.get(c) ?? 1;
        items.push(c);
      }
      out = { kind: 'seq', start, end, items } satisfies SeqNode;
    } else if (isScalar(n)) {
      out = { kind: 'scalar', start, end: n.range?.[1] ?? end, value: scalarValue(n.value), quoted: n.type === 'QUOTE_DOUBLE' || n.type === 'QUOTE_SINGLE' };
    } else {
      out = { kind: 'scalar', start, end, value: null, quoted: false };
    }
    this.expanded += 1;
    if (this.expanded > MAX_EXPANDED_NODES)
      throw new BudgetError(
        'RFT006',
        `The document has more than ${MAX_EXPANDED_NODES.toLocaleString('en-US')} nodes after alias expansion; split it or drop the aliases.`,
        start,
        end,
      );
    this.sizes.set(out, size);
    this.memo.set(n, out);
    return out;
  }
}

function scalarValue(v: unknown): string | number | boolean | null {
  if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  if (typeof v === 'bigint') return Number(v);
  return String(v);
}

/** The plain JS value of a tree, as zod sees it. */
export function toValue(n: DocNode | undefined): unknown {
  if (!n) return null;
  if (n.kind === 'scalar') return n.value;
  if (n.kind === 'seq') return n.items.map(toValue);
  const o: Record<string, unknown> = {};
  for (const p of n.pairs) o[String(p.key.value)] = toValue(p.value);
  return o;
}
