// Exports nothing imports, read from the sources with the TypeScript parser (no type checker: names only).
// A module's export counts as used when another file imports it by name, re-exports it, or takes the whole
// module (`import * as`, `export *`, `import('…')`, `require('…')`, `typeof import('…')` without a name).
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

export interface ExportFacts {
  readonly kind: 'type' | 'value';
  readonly usedInFile: boolean;
}

/** What one file exports (names; 'default' for a default export) and takes from others (file → names; '*' = all). */
export interface ModuleFacts {
  /** Each export: a type (interface, type alias) or a value, and whether its own file uses it besides declaring it. */
  readonly exports: ReadonlyMap<string, ExportFacts>;
  readonly imports: ReadonlyMap<string, ReadonlySet<string>>;
}

const hasExport = (n: ts.Node): boolean => ts.canHaveModifiers(n) && (ts.getModifiers(n) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
const hasDefault = (n: ts.Node): boolean => ts.canHaveModifiers(n) && (ts.getModifiers(n) ?? []).some((m) => m.kind === ts.SyntaxKind.DefaultKeyword);

/** The facts of one file; `resolveSpec` maps a module specifier to a file of the set, or undefined (a package). */
export function moduleFacts(file: string, text: string, resolveSpec: (from: string, spec: string) => string | undefined): ModuleFacts {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const exports = new Map<string, ExportFacts>();
  const declared = new Map<string, { kind: 'type' | 'value' }>();
  /** Identifiers that declare or export a name, not uses of it. */
  const skip = new Set<ts.Node>();
  const add = (name: string, kind: 'type' | 'value', node?: ts.Node): void => {
    declared.set(name, { kind });
    if (node) skip.add(node);
  };
  /** `export { x }` of a local x: the local declaration names it too, and gives the kind. */
  const localExports = new Map<string, string>();
  /** `export { x } from './y'` makes no local binding: a local x is another (imported) one, not a use of this export. */
  const reexported = new Set<string>();
  const imports = new Map<string, Set<string>>();
  const take = (spec: ts.Expression | ts.TypeNode | undefined, names: readonly string[]): void => {
    const s =
      spec && ts.isStringLiteralLike(spec) ? spec.text : spec && ts.isLiteralTypeNode(spec) && ts.isStringLiteral(spec.literal) ? spec.literal.text : undefined;
    const target = s === undefined ? undefined : resolveSpec(file, s);
    if (!target) return;
    if (!imports.has(target)) imports.set(target, new Set());
    for (const n of names) imports.get(target)!.add(n);
  };
  for (const st of sf.statements) {
    if (ts.isImportDeclaration(st)) {
      const c = st.importClause;
      const names: string[] = [];
      if (c?.name) names.push('default');
      if (c?.namedBindings && ts.isNamespaceImport(c.namedBindings)) names.push('*');
      if (c?.namedBindings && ts.isNamedImports(c.namedBindings)) for (const e of c.namedBindings.elements) names.push((e.propertyName ?? e.name).text);
      // A bare `import './x'` runs the module for its effects; it uses no export.
      take(st.moduleSpecifier, names);
    } else if (ts.isExportDeclaration(st)) {
      if (st.moduleSpecifier) {
        // Re-exports: this file exports the names, and uses them of the other.
        if (!st.exportClause) take(st.moduleSpecifier, ['*']);
        else if (ts.isNamespaceExport(st.exportClause)) {
          take(st.moduleSpecifier, ['*']);
          add(st.exportClause.name.text, 'value');
        } else
          for (const e of st.exportClause.elements) {
            take(st.moduleSpecifier, [(e.propertyName ?? e.name).text]);
            add(e.name.text, st.isTypeOnly || e.isTypeOnly ? 'type' : 'value', e.name);
            reexported.add(e.name.text);
          }
      } else if (st.exportClause && ts.isNamedExports(st.exportClause)) {
        for (const e of st.exportClause.elements) {
          add(e.name.text, st.isTypeOnly || e.isTypeOnly ? 'type' : 'value', e.name);
          if (e.propertyName) skip.add(e.propertyName);
          localExports.set((e.propertyName ?? e.name).text, e.name.text);
        }
      }
    } else if (ts.isExportAssignment(st)) {
      add('default', 'value');
    } else if (ts.isImportEqualsDeclaration(st) && ts.isExternalModuleReference(st.moduleReference)) {
      take(st.moduleReference.expression, ['*']);
    } else if (hasExport(st)) {
      if (hasDefault(st)) add('default', 'value');
      else if (ts.isVariableStatement(st)) {
        for (const d of st.declarationList.declarations) if (ts.isIdentifier(d.name)) add(d.name.text, 'value', d.name);
      } else if (
        (ts.isFunctionDeclaration(st) ||
          ts.isClassDeclaration(st) ||
          ts.isInterfaceDeclaration(st) ||
          ts.isTypeAliasDeclaration(st) ||
          ts.isEnumDeclaration(st) ||
          ts.isModuleDeclaration(st)) &&
        st.name &&
        ts.isIdentifier(st.name)
      ) {
        add(st.name.text, ts.isInterfaceDeclaration(st) || ts.isTypeAliasDeclaration(st) ? 'type' : 'value', st.name);
      }
    }
  }
  // Whole-module uses anywhere in the file: import('…'), require('…'), typeof import('…').Name.
  const visit = (n: ts.Node): void => {
    if (
      ts.isCallExpression(n) &&
      (n.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(n.expression) && n.expression.text === 'require')) &&
      n.arguments[0]
    ) {
      take(n.arguments[0], ['*']);
    } else if (ts.isImportTypeNode(n)) {
      const q = n.qualifier;
      const first = q ? (ts.isIdentifier(q) ? q.text : leftmost(q)) : '*';
      take(n.argument, [first]);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  for (const st of sf.statements) {
    const names: ts.Identifier[] = ts.isVariableStatement(st)
      ? st.declarationList.declarations.flatMap((d) => (ts.isIdentifier(d.name) ? [d.name] : []))
      : (ts.isFunctionDeclaration(st) ||
            ts.isClassDeclaration(st) ||
            ts.isInterfaceDeclaration(st) ||
            ts.isTypeAliasDeclaration(st) ||
            ts.isEnumDeclaration(st)) &&
          st.name
        ? [st.name]
        : [];
    for (const id of names) {
      const exported = localExports.get(id.text);
      if (exported === undefined) continue;
      skip.add(id);
      if (ts.isInterfaceDeclaration(st) || ts.isTypeAliasDeclaration(st)) declared.set(exported, { kind: 'type' });
    }
  }
  // Uses in the file itself: any identifier of that name other than the declaring one (names only: a
  // shadowing local counts as a use, which errs on the side of keeping).
  const mentions = new Map<string, number>();
  const count = (n: ts.Node): void => {
    if (ts.isIdentifier(n) && !skip.has(n)) {
      const name = localExports.get(n.text) ?? n.text;
      if (declared.has(name)) mentions.set(name, (mentions.get(name) ?? 0) + 1);
    }
    ts.forEachChild(n, count);
  };
  count(sf);
  for (const [name, d] of declared) exports.set(name, { kind: d.kind, usedInFile: !reexported.has(name) && (mentions.get(name) ?? 0) > 0 });
  return { exports, imports };
}

function leftmost(q: ts.QualifiedName): string {
  let l: ts.EntityName = q;
  while (ts.isQualifiedName(l)) l = l.left;
  return l.text;
}

/**
 * "file#name" for each export of a file in `candidates` that no other file takes and `which` selects, less
 * those `allowed`.
 */
export function unusedExports(
  facts: ReadonlyMap<string, ModuleFacts>,
  candidates: (file: string) => boolean,
  which: (e: ExportFacts) => boolean,
  allowed: ReadonlySet<string> = new Set(),
): string[] {
  const used = new Map<string, Set<string>>();
  for (const [from, f] of facts) {
    for (const [to, names] of f.imports) {
      if (to === from) continue;
      if (!used.has(to)) used.set(to, new Set());
      for (const n of names) used.get(to)!.add(n);
    }
  }
  const out: string[] = [];
  for (const [file, f] of [...facts].sort(([a], [b]) => a.localeCompare(b))) {
    if (!candidates(file)) continue;
    const u = used.get(file);
    if (u?.has('*')) continue;
    for (const [name, e] of [...f.exports].sort(([a], [b]) => a.localeCompare(b))) {
      const id = `${file}#${name}`;
      if (!u?.has(name) && which(e) && !allowed.has(id)) out.push(id);
    }
  }
  return out;
}

/** Facts of every .ts/.tsx file under the roots (repo-relative, '/'-separated names), relative imports resolved. */
export function readModuleFacts(repo: string, roots: readonly string[]): Map<string, ModuleFacts> {
  const files: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d)) {
      if (e === 'node_modules' || e === 'fixtures') continue;
      const p = join(d, e);
      if (statSync(p).isDirectory()) walk(p);
      else if (/\.tsx?$/.test(p) && !p.endsWith('.d.ts')) files.push(p);
    }
  };
  for (const r of roots) if (existsSync(join(repo, r))) walk(join(repo, r));
  const rel = (p: string): string => relative(repo, p).split('\\').join('/');
  const resolveSpec = (from: string, spec: string): string | undefined => {
    if (!spec.startsWith('.')) return undefined;
    const base = resolve(dirname(join(repo, from)), spec).replace(/\.js$/, '');
    const hit = [`${base}.ts`, `${base}.tsx`, join(base, 'index.ts'), base].find((c) => existsSync(c) && statSync(c).isFile());
    return hit ? rel(hit) : undefined;
  };
  return new Map(files.map((f) => [rel(f), moduleFacts(rel(f), readFileSync(f, 'utf8'), resolveSpec)]));
}
