// The project's import graph, read from the sources (relative imports and `export … from`, type-only ones
// included: a type cycle is still a design cycle), and the checks the architecture test holds it to.
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** file (relative to the repo, '/'-separated) → the files it imports. */
export type ImportGraph = Map<string, string[]>;

const IMPORT = /(?:^|[\n;])\s*(?:import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?['"](\.{1,2}\/[^'"]*)['"]/g;
const DYNAMIC = /import\(\s*['"](\.{1,2}\/[^'"]*)['"]\s*\)/g;

/** With `values: true`, only imports that load code: `import type` / `export type` statements are left out. */
export function readImportGraph(repo: string, roots: readonly string[], opts: { readonly values?: boolean } = {}): ImportGraph {
  const files: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d)) {
      const p = join(d, e);
      if (statSync(p).isDirectory()) walk(p);
      else if (/\.tsx?$/.test(p) && !p.endsWith('.d.ts')) files.push(p);
    }
  };
  for (const r of roots) walk(join(repo, r));
  const graph: ImportGraph = new Map();
  for (const f of files) {
    const text = readFileSync(f, 'utf8');
    const targets: string[] = [];
    const statics = [...text.matchAll(IMPORT)].filter((m) => !(opts.values && m[1])).map((m) => m[2]!);
    for (const spec of [...statics, ...[...text.matchAll(DYNAMIC)].map((m) => m[1]!)]) {
      const base = resolve(dirname(f), spec);
      const hit = [`${base}.ts`, `${base}.tsx`, join(base, 'index.ts'), base].find((c) => existsSync(c) && statSync(c).isFile());
      if (hit) targets.push(rel(repo, hit));
    }
    graph.set(rel(repo, f), [...new Set(targets)]);
  }
  return graph;
}

const rel = (repo: string, p: string): string => relative(repo, p).split('\\').join('/');

/** Strongly connected components with more than one member (or a self-import): each is a cycle. */
export function cyclesOf(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

/** The graph collapsed to groups (`groupOf` returns undefined for files outside every group). */
export function groupGraph(graph: ImportGraph, groupOf: (file: string) => string | undefined): Map<string, string[]> {
  const g = new Map<string, Set<string>>();
  for (const [from, tos] of graph) {
    const a = groupOf(from);
    if (!a) continue;
    if (!g.has(a)) g.set(a, new Set());
    for (const to of tos) {
      const b = groupOf(to);
      if (b && b !== a) g.get(a)!.add(b);
    }
  }
  return new Map([...g].map(([k, v]) => [k, [...v]]));
}

/** Each import that breaks a layering rule: `allowed(from, to)` false. */
export function violations(graph: ImportGraph, allowed: (from: string, to: string) => boolean): string[] {
  const out: string[] = [];
  for (const [from, tos] of graph) for (const to of tos) if (!allowed(from, to)) out.push(`${from} → ${to}`);
  return out;
}
