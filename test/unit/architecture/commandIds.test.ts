// Every command id this extension registers or runs is one package.json declares (contributes.commands), or a
// command of VS Code itself or of an extension it ships with. An id nobody declares is either dead (executeCommand
// of it never finds a handler) or hidden from the user without a `when` that says so. The ids are read from the
// call sites (registerCommand / executeCommand) and resolved through the constants, objects and arrays they name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

const REPO = join(__dirname, '../../..');
const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
  contributes: { commands: Array<{ command: string }>; menus?: Record<string, Array<{ command?: string; when?: string }>> };
};
const DECLARED = new Set(pkg.contributes.commands.map((c) => c.command));
/** Commands of VS Code and of the extensions it ships with, run by id. */
const BUILT_IN = new Set([
  'setContext',
  'vscode.openFolder',
  'revealInExplorer',
  'revealFileInOS',
  'workbench.actions.view.problems',
  'workbench.action.openSettings',
  'workbench.action.openWalkthrough',
  'markdown.showPreviewToSide',
  'simpleBrowser.show',
]);
/** Registered for the VS Code host tests to read state, never shown to a person: an id with `._`, in no manifest. */
const INTERNAL = new Set(['remoteFinetune.panels._state', 'remoteFinetune.runs._state']);
/** Call sites whose id is data, not a name in the code: each says where its ids come from. */
const DYNAMIC: Readonly<Record<string, string>> = {
  // The panel kinds' table: its commands are PANEL_COMMANDS' values, each checked below through that object.
  'src/features/panels/registerPanels.ts command': 'KINDS[].command',
  // A start-check fix names the command that fixes it (runStartFixes); those ids are string constants checked here.
  'src/features/runs/startTraining.ts fix.command': 'StartFix.command',
};

interface Source {
  readonly file: string;
  readonly sf: ts.SourceFile;
}

function sources(dir: string): Source[] {
  return readdirSync(join(REPO, dir)).flatMap((n) => {
    const rel = `${dir}/${n}`;
    if (statSync(join(REPO, rel)).isDirectory()) return sources(rel);
    if (!/\.ts$/.test(n) || n.endsWith('.d.ts')) return [];
    return [{ file: rel, sf: ts.createSourceFile(rel, readFileSync(join(REPO, rel), 'utf8'), ts.ScriptTarget.Latest, true) }];
  });
}

/** Every top-level `const NAME = <initializer>` of the product, by name: what an imported name resolves to. */
function constants(all: readonly Source[]): Map<string, ts.Expression[]> {
  const out = new Map<string, ts.Expression[]>();
  for (const { sf } of all)
    for (const st of sf.statements)
      if (ts.isVariableStatement(st))
        for (const d of st.declarationList.declarations)
          if (ts.isIdentifier(d.name) && d.initializer) out.set(d.name.text, [...(out.get(d.name.text) ?? []), d.initializer]);
  return out;
}

type Binding = { readonly init: ts.Expression } | { readonly param: number; readonly fn: ts.SignatureDeclaration } | { readonly each: ts.Expression };

/** Where a name used at `at` is bound: the nearest enclosing const, for-of variable or parameter of that name. */
function bindingOf(name: string, at: ts.Node): Binding | undefined {
  for (let n: ts.Node | undefined = at.parent; n; n = n.parent) {
    if (ts.isFunctionLike(n)) {
      const i = n.parameters.findIndex((p) => ts.isIdentifier(p.name) && p.name.text === name);
      if (i >= 0) return { param: i, fn: n };
    }
    if (ts.isForOfStatement(n) && ts.isVariableDeclarationList(n.initializer)) {
      const d = n.initializer.declarations[0];
      if (d && ts.isIdentifier(d.name) && d.name.text === name) return { each: n.expression };
    }
    const statements = ts.isBlock(n) || ts.isSourceFile(n) ? n.statements : [];
    for (const st of statements)
      if (ts.isVariableStatement(st))
        for (const d of st.declarationList.declarations) if (ts.isIdentifier(d.name) && d.name.text === name && d.initializer) return { init: d.initializer };
  }
  return undefined;
}

/** The name a function is called by: its own, or the const it is assigned to. */
function calledAs(fn: ts.SignatureDeclaration): string | undefined {
  if (fn.name && ts.isIdentifier(fn.name)) return fn.name.text;
  return ts.isVariableDeclaration(fn.parent) && ts.isIdentifier(fn.parent.name) ? fn.parent.name.text : undefined;
}

/** The string values an expression can have, or undefined when it is not made of names and literals. */
function valuesOf(e: ts.Expression, consts: ReadonlyMap<string, ts.Expression[]>, depth = 0): string[] | undefined {
  if (depth > 12) return undefined;
  const again = (x: ts.Expression): string[] | undefined => valuesOf(x, consts, depth + 1);
  const all = (xs: readonly ts.Expression[]): string[] | undefined => {
    const got = xs.map(again);
    return got.length > 0 && got.every((g) => g !== undefined) ? got.flat() : undefined;
  };
  if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) return [e.text];
  if (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isSatisfiesExpression(e)) return again(e.expression);
  if (ts.isConditionalExpression(e)) return all([e.whenTrue, e.whenFalse]);
  if (ts.isIdentifier(e)) {
    const b = bindingOf(e.text, e);
    if (!b) return consts.has(e.text) ? all(consts.get(e.text)!) : undefined;
    if ('init' in b) return again(b.init);
    if ('each' in b) return again(b.each);
    // A parameter: whatever the function's callers in the same file pass in its place.
    const name = calledAs(b.fn);
    const callers: ts.Expression[] = [];
    const visit = (n: ts.Node): void => {
      if (ts.isCallExpression(n) && ts.isIdentifier(n.expression) && n.expression.text === name && n.arguments[b.param]) callers.push(n.arguments[b.param]!);
      ts.forEachChild(n, visit);
    };
    if (name) visit(e.getSourceFile());
    return all(callers);
  }
  if (ts.isArrayLiteralExpression(e)) return all(e.elements.filter((x): x is ts.Expression => !ts.isSpreadElement(x) && !ts.isOmittedExpression(x)));
  if (ts.isObjectLiteralExpression(e)) return all(e.properties.flatMap((p) => (ts.isPropertyAssignment(p) ? [p.initializer] : [])));
  // OBJ.key: the key's value in every object literal bound to OBJ.
  if (ts.isPropertyAccessExpression(e) && ts.isIdentifier(e.expression)) {
    const b = bindingOf(e.expression.text, e);
    const bound = b ? ('init' in b ? [b.init] : []) : (consts.get(e.expression.text) ?? []);
    const objects = bound.map((o) => (ts.isAsExpression(o) || ts.isSatisfiesExpression(o) ? o.expression : o));
    if (objects.length === 0 || !objects.every(ts.isObjectLiteralExpression)) return undefined;
    const picked = objects.flatMap((o) =>
      o.properties.filter((p): p is ts.PropertyAssignment => ts.isPropertyAssignment(p) && p.name.getText() === e.name.text),
    );
    return all(picked.map((p) => p.initializer));
  }
  // ARR.find(…), ARR[i]: one of ARR's values.
  if (ts.isCallExpression(e) && ts.isPropertyAccessExpression(e.expression) && e.expression.name.text === 'find') return again(e.expression.expression);
  if (ts.isElementAccessExpression(e)) return again(e.expression);
  return undefined;
}

interface CallSite {
  readonly where: string;
  readonly arg: string;
  readonly ids: string[] | undefined;
}

/** registerCommand(id, …) of VS Code, our registerCommand(log, id, …) (src/features/commands.ts), and executeCommand(id, …). */
function commandCalls(all: readonly Source[], consts: ReadonlyMap<string, ts.Expression[]>): CallSite[] {
  const out: CallSite[] = [];
  for (const { file, sf } of all) {
    if (file === 'src/features/commands.ts') continue; // the wrapper: its callers are the call sites
    const visit = (n: ts.Node): void => {
      if (ts.isCallExpression(n)) {
        const callee = ts.isPropertyAccessExpression(n.expression) ? n.expression.name.text : ts.isIdentifier(n.expression) ? n.expression.text : '';
        const ours = callee === 'registerCommand' && ts.isIdentifier(n.expression);
        const arg = callee === 'executeCommand' || callee === 'registerCommand' ? n.arguments[ours ? 1 : 0] : undefined;
        if (arg)
          out.push({
            where: `${file}:${sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1}`,
            arg: `${file} ${arg.getText(sf)}`,
            ids: valuesOf(arg, consts),
          });
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  return out;
}

const all = sources('src');
const consts = constants(all);
const calls = commandCalls(all, consts);

test('command ids: the call-site reader resolves constants, objects and arrays (so the check below reads something)', () => {
  assert.ok(calls.length > 30, `${calls.length} call sites`);
  const resolved = calls.filter((c) => c.ids !== undefined);
  assert.ok(resolved.length >= calls.length - Object.keys(DYNAMIC).length, 'every call site but the listed dynamic ones resolves');
  const probe = ts.createSourceFile(
    'p.ts',
    "const A = { x: 'a.one' }; const L = ['b.one', A.x]; const reg = (id: string) => run(id); reg(L.find(Boolean)); for (const c of ['c.one']) run(c);",
    ts.ScriptTarget.Latest,
    true,
  );
  const uses: ts.Identifier[] = [];
  const visit = (n: ts.Node): void => {
    if (ts.isCallExpression(n) && n.expression.getText(probe) === 'run') uses.push(n.arguments[0] as ts.Identifier);
    ts.forEachChild(n, visit);
  };
  visit(probe);
  const probeConsts = constants([{ file: 'p.ts', sf: probe }]);
  assert.deepEqual(
    uses.map((u) => valuesOf(u, probeConsts)),
    [['b.one', 'a.one'], ['c.one']],
  );
});

test('command ids: every id src/ registers or runs is declared in package.json contributes.commands, or built in', () => {
  const unresolved = calls.filter((c) => c.ids === undefined && !(c.arg in DYNAMIC)).map((c) => `${c.where} ${c.arg}`);
  assert.deepEqual(unresolved, [], 'call sites whose command id is neither a name nor listed in DYNAMIC');
  const undeclared = calls.flatMap((c) =>
    (c.ids ?? []).filter((id) => !DECLARED.has(id) && !BUILT_IN.has(id) && !INTERNAL.has(id)).map((id) => `${c.where} ${id}`),
  );
  assert.deepEqual(undeclared, [], `command ids package.json does not declare: ${undeclared.join(', ')}`);
});

test('command ids: the lists above hold only what is used, and an internal id is registered, undeclared and marked `._`', () => {
  const used = new Set(calls.flatMap((c) => c.ids ?? []));
  assert.deepEqual(
    [...BUILT_IN, ...INTERNAL].filter((id) => !used.has(id)),
    [],
    'listed ids no call site names',
  );
  const dynamicSites = new Set(calls.filter((c) => c.ids === undefined).map((c) => c.arg));
  assert.deepEqual(
    Object.keys(DYNAMIC).filter((k) => !dynamicSites.has(k)),
    [],
    'DYNAMIC entries that are no unresolved call site',
  );
  for (const id of INTERNAL) {
    assert.match(id, /\._/, id);
    assert.ok(!DECLARED.has(id), `${id} is internal but package.json declares it`);
  }
});
