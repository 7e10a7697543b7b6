// A fast path for the block-style YAML that configs are written in: block mappings and sequences,
// plain and quoted scalars, one-line flow collections, comments. It builds the same tree as the
// full parser (ast.ts) in a single pass over the lines, which is what keeps a keystroke's
// re-validation in the low milliseconds. Anything outside that subset (anchors, aliases, tags,
// block scalars, multi-line scalars or flows, tabs, directives, several documents, duplicate keys,
// anything odd) returns undefined and the caller uses the full YAML library instead, so errors
// and rare constructs are always judged by the real parser. A property test checks that whenever
// this path answers, its values equal the library's.
import type { DocNode, MapNode, PairNode, ScalarNode, SeqNode } from './ast';
import type { ConfigDiagnostic } from './types';

const MAX_DEPTH = 100;

class Bail extends Error {}
const BAIL = new Bail();

interface Line {
  /** Offset of the first non-space character. */
  readonly content: number;
  /** Offset just past the last character of the line, \r excluded. */
  readonly end: number;
  readonly indent: number;
}

export interface FastParse {
  readonly root: DocNode | undefined;
  readonly diagnostics: ConfigDiagnostic[];
}

export function fastParseYaml(text: string): FastParse | undefined {
  try {
    return new FastParser(text).parse();
  } catch (e) {
    if (e instanceof Bail || e instanceof RangeError) return undefined;
    throw e;
  }
}

// YAML 1.2 core schema, as the yaml library resolves plain scalars.
const NULL_RE = /^(?:~|[Nn]ull|NULL)?$/;
const BOOL_RE = /^(?:[Tt]rue|TRUE|[Ff]alse|FALSE)$/;
const INT_RE = /^[-+]?[0-9]+$/;
const OCT_RE = /^0o[0-7]+$/;
const HEX_RE = /^0x[0-9a-fA-F]+$/;
const FLOAT_RE = /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/;
const INF_RE = /^[-+]?\.(?:inf|Inf|INF)$/;
const NAN_RE = /^\.(?:nan|NaN|NAN)$/;

export function resolvePlain(s: string): string | number | boolean | null {
  const c = s.charCodeAt(0);
  // Only strings starting like a number, ~, n/N, t/T, f/F or . can be anything but a string.
  if (!(
    c === 0x7e ||
    c === 0x2e ||
    c === 0x2b ||
    c === 0x2d ||
    (c >= 0x30 && c <= 0x39) ||
    c === 0x6e ||
    c === 0x4e ||
    c === 0x74 ||
    c === 0x54 ||
    c === 0x66 ||
    c === 0x46 ||
    s.length === 0
  ))
    return s;
  if (NULL_RE.test(s)) return null;
  if (BOOL_RE.test(s)) return s[0] === 't' || s[0] === 'T';
  if (INT_RE.test(s)) {
    const n = Number(s);
    if (!Number.isSafeInteger(n)) throw BAIL; // the library may use other rules for huge integers
    return n;
  }
  if (OCT_RE.test(s)) return parseInt(s.slice(2), 8);
  if (HEX_RE.test(s)) return parseInt(s.slice(2), 16);
  if (FLOAT_RE.test(s)) return Number(s);
  if (INF_RE.test(s)) return s[0] === '-' ? -Infinity : Infinity;
  if (NAN_RE.test(s)) return NaN;
  return s;
}

function isIndicatorStart(c: number): boolean {
  // & * ! | > ' " % @ ` and flow/complex indicators are not plain-scalar starts we handle here.
  return (
    c === 0x26 ||
    c === 0x2a ||
    c === 0x21 ||
    c === 0x7c ||
    c === 0x3e ||
    c === 0x25 ||
    c === 0x40 ||
    c === 0x60 ||
    c === 0x3f ||
    c === 0x2c ||
    c === 0x5d ||
    c === 0x7d ||
    c === 0x23
  );
}

class FastParser {
  private readonly lines: Line[] = [];
  private i = 0;
  /** Set while the current line's content starts mid-line (compact "- key: v" items). */
  private override: { line: number; col: number; content: number } | undefined;
  private readonly diagnostics: ConfigDiagnostic[] = [];

  constructor(private readonly text: string) {}

  parse(): FastParse {
    const t = this.text;
    if (t.charCodeAt(0) === 0xfeff) throw BAIL;
    if (t.indexOf('\t') !== -1) throw BAIL;
    let pos = 0;
    let sawDoc = false;
    let sawContent = false;
    while (pos <= t.length) {
      let nl = t.indexOf('\n', pos);
      if (nl === -1) nl = t.length;
      let end = nl;
      if (end > pos && t.charCodeAt(end - 1) === 0x0d) end--;
      let c = pos;
      while (c < end && t.charCodeAt(c) === 0x20) c++;
      const ch = t.charCodeAt(c);
      if (c < end && ch !== 0x23) {
        // Document markers and directives: a leading "---" is fine, anything else goes to the library.
        if (c === pos && (t.startsWith('---', c) || t.startsWith('...', c)) && (end - c === 3 || t.charCodeAt(c + 3) === 0x20)) {
          if (sawDoc || sawContent || t.startsWith('...', c) || t.slice(c + 3, end).trim() !== '') throw BAIL;
          sawDoc = true;
        } else if (c === pos && ch === 0x25) {
          throw BAIL;
        } else {
          sawContent = true;
          this.lines.push({ content: c, end, indent: c - pos });
        }
      }
      if (nl === t.length) break;
      pos = nl + 1;
    }
    if (this.lines.length === 0) return { root: undefined, diagnostics: [] };
    const first = this.lines[0]!;
    const root = this.block(first.indent, 0);
    if (this.i < this.lines.length) throw BAIL; // content left over at a lower indent: malformed
    return { root, diagnostics: this.diagnostics };
  }

  private indentOf(k: number): number {
    const o = this.override;
    return o && o.line === k ? o.col : this.lines[k]!.indent;
  }

  private contentOf(k: number): number {
    const o = this.override;
    return o && o.line === k ? o.content : this.lines[k]!.content;
  }

  private isSeqItem(k: number): boolean {
    const c = this.contentOf(k);
    const line = this.lines[k]!;
    return this.text.charCodeAt(c) === 0x2d && (c + 1 === line.end || this.text.charCodeAt(c + 1) === 0x20);
  }

  private block(indent: number, depth: number): DocNode {
    if (depth > MAX_DEPTH) throw BAIL;
    return this.isSeqItem(this.i) ? this.seq(indent, depth) : this.map(indent, depth);
  }

  private map(indent: number, depth: number): MapNode {
    const t = this.text;
    const pairs: PairNode[] = [];
    const seen = new Set<string>();
    const start = this.contentOf(this.i);
    let end = start;
    while (this.i < this.lines.length) {
      const k = this.i;
      const ind = this.indentOf(k);
      if (ind < indent) break;
      if (ind > indent) throw BAIL;
      if (this.isSeqItem(k)) break; // a sequence at the parent's indent ends this mapping
      const line = this.lines[k]!;
      const c = this.contentOf(k);
      // The key.
      let key: ScalarNode;
      let after: number;
      const q = t.charCodeAt(c);
      if (q === 0x22 || q === 0x27) {
        const s = this.quoted(c, line.end);
        key = s.node;
        after = s.next;
        while (after < line.end && t.charCodeAt(after) === 0x20) after++;
        if (t.charCodeAt(after) !== 0x3a) throw BAIL;
      } else {
        if (isIndicatorStart(q) || q === 0x5b || q === 0x7b || q === 0x2d) throw BAIL;
        let j = c;
        for (; j < line.end; j++) {
          const ch = t.charCodeAt(j);
          if (ch === 0x3a && (j + 1 === line.end || t.charCodeAt(j + 1) === 0x20)) break;
          if (ch === 0x23 && t.charCodeAt(j - 1) === 0x20) throw BAIL;
        }
        if (j >= line.end) throw BAIL; // not "key:" — a bare scalar or a multi-line key
        let ke = j;
        while (ke > c && t.charCodeAt(ke - 1) === 0x20) ke--;
        if (ke - c > 1024) throw BAIL;
        const raw = t.slice(c, ke);
        const kv = resolvePlain(raw);
        if (kv === null || (typeof kv === 'number' && !Number.isInteger(kv))) throw BAIL; // null and float keys: library rules
        if (kv === '<<') throw BAIL; // a merge key: the full parser applies it
        key = { kind: 'scalar', start: c, end: ke, value: kv, quoted: false };
        after = j;
      }
      const keyStr = String(key.value);
      if (seen.has(keyStr)) throw BAIL; // the library reports duplicates with its own wording
      seen.add(keyStr);
      // The value.
      let v = after + 1;
      while (v < line.end && t.charCodeAt(v) === 0x20) v++;
      this.override = undefined;
      let value: DocNode;
      if (v >= line.end || (t.charCodeAt(v) === 0x23 && t.charCodeAt(v - 1) === 0x20)) {
        this.i = k + 1;
        if (this.i < this.lines.length && this.indentOf(this.i) > indent) {
          value = this.block(this.indentOf(this.i), depth + 1);
        } else if (this.i < this.lines.length && this.indentOf(this.i) === indent && this.isSeqItem(this.i)) {
          value = this.seq(indent, depth + 1);
        } else {
          // Where the library puts an empty value: past the spaces after the colon (at a comment or the line end).
          value = { kind: 'scalar', start: v, end: v, value: null, quoted: false };
        }
      } else {
        value = this.inline(v, line.end);
        this.i = k + 1;
        if (this.i < this.lines.length && this.indentOf(this.i) > indent) throw BAIL; // continuation lines
      }
      pairs.push({ key, value });
      end = Math.max(value.end, key.end);
    }
    return { kind: 'map', start, end, pairs };
  }

  private seq(indent: number, depth: number): SeqNode {
    const t = this.text;
    const items: DocNode[] = [];
    const start = this.contentOf(this.i);
    let end = start;
    while (this.i < this.lines.length) {
      const k = this.i;
      const ind = this.indentOf(k);
      if (ind < indent) break;
      if (ind > indent) throw BAIL;
      if (!this.isSeqItem(k)) break;
      const line = this.lines[k]!;
      const dash = this.contentOf(k);
      let c = dash + 1;
      while (c < line.end && t.charCodeAt(c) === 0x20) c++;
      this.override = undefined;
      let item: DocNode;
      if (c >= line.end || (t.charCodeAt(c) === 0x23 && t.charCodeAt(c - 1) === 0x20)) {
        this.i = k + 1;
        if (this.i < this.lines.length && this.indentOf(this.i) > indent) item = this.block(this.indentOf(this.i), depth + 1);
        else item = { kind: 'scalar', start: c, end: c, value: null, quoted: false }; // past the spaces, as the library does
      } else if (this.looksLikeCompactBlock(c, line.end)) {
        // "- key: value" or "- - x": the item is a block starting mid-line, at the content's column.
        const col = c - (line.content - line.indent);
        this.override = { line: k, col, content: c };
        item = this.block(col, depth + 1);
        this.override = undefined;
      } else {
        item = this.inline(c, line.end);
        this.i = k + 1;
        if (this.i < this.lines.length && this.indentOf(this.i) > indent) throw BAIL;
      }
      items.push(item);
      end = item.end;
    }
    return { kind: 'seq', start, end, items };
  }

  /** Whether the text at c starts a block mapping entry or a nested sequence item. */
  private looksLikeCompactBlock(c: number, end: number): boolean {
    const t = this.text;
    const ch = t.charCodeAt(c);
    if (ch === 0x2d && (c + 1 === end || t.charCodeAt(c + 1) === 0x20)) return true;
    if (ch === 0x5b || ch === 0x7b) return false;
    if (ch === 0x22 || ch === 0x27) {
      const close = t.indexOf(String.fromCharCode(ch), c + 1);
      if (close === -1 || close >= end) throw BAIL;
      let j = close + 1;
      while (j < end && t.charCodeAt(j) === 0x20) j++;
      return t.charCodeAt(j) === 0x3a;
    }
    for (let j = c; j < end; j++) {
      const x = t.charCodeAt(j);
      if (x === 0x3a && (j + 1 === end || t.charCodeAt(j + 1) === 0x20)) return true;
      if (x === 0x23 && t.charCodeAt(j - 1) === 0x20) return false;
    }
    return false;
  }

  /** A value on the rest of a line: quoted, flow, or plain; then only a comment may follow. */
  private inline(c: number, end: number): DocNode {
    const t = this.text;
    const ch = t.charCodeAt(c);
    let node: DocNode;
    let next: number;
    if (ch === 0x22 || ch === 0x27) {
      const s = this.quoted(c, end);
      node = s.node;
      next = s.next;
    } else if (ch === 0x5b || ch === 0x7b) {
      const f = this.flow(c, end, 0);
      node = f.node;
      next = f.next;
    } else {
      // "-" then a blank or the end of the value is a block sequence entry, not a plain scalar ("max_steps: -").
      if (isIndicatorStart(ch) || (ch === 0x2d && (c + 1 >= end || t.charCodeAt(c + 1) === 0x20 || t.charCodeAt(c + 1) === 0x09))) throw BAIL;
      let j = c;
      let last = c;
      for (; j < end; j++) {
        const x = t.charCodeAt(j);
        if (x === 0x23 && t.charCodeAt(j - 1) === 0x20) break;
        if (x === 0x3a && (j + 1 === end || t.charCodeAt(j + 1) === 0x20)) throw BAIL; // "a: b: c"
        if (x !== 0x20) last = j + 1;
      }
      return { kind: 'scalar', start: c, end: last, value: resolvePlain(t.slice(c, last)), quoted: false };
    }
    while (next < end && t.charCodeAt(next) === 0x20) next++;
    if (next < end && !(t.charCodeAt(next) === 0x23 && t.charCodeAt(next - 1) === 0x20)) throw BAIL;
    return node;
  }

  private quoted(c: number, end: number): { node: ScalarNode; next: number } {
    const t = this.text;
    const q = t.charCodeAt(c);
    let out = '';
    let j = c + 1;
    if (q === 0x27) {
      for (;;) {
        const close = t.indexOf("'", j);
        if (close === -1 || close >= end) throw BAIL; // multi-line: the library decides
        out += t.slice(j, close);
        if (t.charCodeAt(close + 1) === 0x27) {
          out += "'";
          j = close + 2;
          continue;
        }
        j = close + 1;
        break;
      }
    } else {
      for (;;) {
        if (j >= end) throw BAIL;
        const x = t.charCodeAt(j);
        if (x === 0x22) {
          j++;
          break;
        }
        if (x === 0x5c) {
          const e = t[j + 1];
          const simple: Record<string, string> = {
            '"': '"',
            '\\': '\\',
            '/': '/',
            n: '\n',
            t: '\t',
            r: '\r',
            '0': '\0',
            ' ': ' ',
            b: '\b',
            f: '\f',
            e: '\x1b',
            a: '\x07',
            v: '\v',
          };
          if (e !== undefined && simple[e] !== undefined) {
            out += simple[e];
            j += 2;
            continue;
          }
          throw BAIL;
        }
        out += t[j];
        j++;
      }
    }
    return { node: { kind: 'scalar', start: c, end: j, value: out, quoted: true }, next: j };
  }

  private flow(c: number, end: number, depth: number): { node: DocNode; next: number } {
    if (depth > MAX_DEPTH) throw BAIL;
    const t = this.text;
    const open = t.charCodeAt(c);
    const close = open === 0x5b ? 0x5d : 0x7d;
    let j = c + 1;
    const skip = (): void => {
      while (j < end && t.charCodeAt(j) === 0x20) j++;
    };
    const items: DocNode[] = [];
    const pairs: PairNode[] = [];
    const seen = new Set<string>();
    skip();
    if (t.charCodeAt(j) === close) {
      j++;
      return { node: open === 0x5b ? { kind: 'seq', start: c, end: j, items } : { kind: 'map', start: c, end: j, pairs }, next: j };
    }
    for (;;) {
      skip();
      if (j >= end) throw BAIL;
      if (open === 0x5b) {
        const v = this.flowValue(j, end, depth, true);
        items.push(v.node);
        j = v.next;
      } else {
        const k = this.flowValue(j, end, depth, false);
        if (k.node.kind !== 'scalar') throw BAIL;
        j = k.next;
        skip();
        if (t.charCodeAt(j) !== 0x3a) throw BAIL;
        j++;
        skip();
        const ks = String(k.node.value);
        if (seen.has(ks)) throw BAIL;
        seen.add(ks);
        if (t.charCodeAt(j) === 0x2c || t.charCodeAt(j) === 0x7d) throw BAIL; // "{a: }": let the library decide
        const v = this.flowValue(j, end, depth, true);
        pairs.push({ key: k.node, value: v.node });
        j = v.next;
      }
      skip();
      const x = t.charCodeAt(j);
      if (x === 0x2c) {
        j++;
        skip();
        if (t.charCodeAt(j) === close) {
          j++;
          break;
        } // trailing comma
        continue;
      }
      if (x === close) {
        j++;
        break;
      }
      throw BAIL;
    }
    return { node: open === 0x5b ? { kind: 'seq', start: c, end: j, items } : { kind: 'map', start: c, end: j, pairs }, next: j };
  }

  private flowValue(j: number, end: number, depth: number, isValue: boolean): { node: DocNode; next: number } {
    const t = this.text;
    const ch = t.charCodeAt(j);
    if (ch === 0x22 || ch === 0x27) return this.quoted(j, end);
    if (ch === 0x5b || ch === 0x7b) {
      if (!isValue) throw BAIL;
      return this.flow(j, end, depth + 1);
    }
    // A flow item that is "-" alone ("[a, -]") is left to the library, which does not read it as a plain "-".
    if (isIndicatorStart(ch) || ch === 0x3a || (ch === 0x2d && (j + 1 >= end || ' \t,]}'.includes(t[j + 1]!)))) throw BAIL;
    let k = j;
    let last = j;
    for (; k < end; k++) {
      const x = t.charCodeAt(k);
      if (x === 0x2c || x === 0x5d || x === 0x7d || x === 0x5b || x === 0x7b) break;
      if (x === 0x3a) {
        if (isValue) throw BAIL; // "[a: 1]" or a URL: the library knows the rules
        break;
      }
      if (x === 0x23 && t.charCodeAt(k - 1) === 0x20) throw BAIL;
      if (x !== 0x20) last = k + 1;
    }
    if (last === j) throw BAIL;
    if (k < end && (t.charCodeAt(k) === 0x5b || t.charCodeAt(k) === 0x7b)) throw BAIL;
    return { node: { kind: 'scalar', start: j, end: last, value: resolvePlain(t.slice(j, last)), quoted: false }, next: last };
  }
}
