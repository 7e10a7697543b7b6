// A run spec travels typed (issue 38.1): RunSpec (schema output), ResolvedRunSpec (defaults filled in) or
// LooseRunSpec (the fields a half-written editor spec has that the schema accepts). Any parameter or field named
// `spec` typed as an untyped record (or `unknown`) in src/ fails here, unless it is listed below with the reason it
// must be the text as written: the spec.json uploaded and kept in the run's history is the user's own document, not
// the schema's reading of it (unknown keys the schema strips, defaults it fills), and the functions that build that
// document copy it rather than read it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const REPO = join(__dirname, '../../..');

const AS_WRITTEN: Readonly<Record<string, string>> = {
  'src/core/runs/lifecycle/runPlan.ts:RunPlan.spec': 'the spec as written, uploaded as spec.json',
  'src/core/runs/lifecycle/runTypes.ts:StartRequest.spec': 'the same, carried to the start',
  'src/core/runs/store/runHistory.ts:recordStartHistory.spec': "kept in the run's history as written",
  'src/core/ssh/detachedJob.ts:StartOptions.spec': 'the SSH layer writes whatever document it is given to spec.json',
  'src/core/runs/lifecycle/runStart.ts:startOn.spec': "the document written to the host's spec.json",
  'src/core/runs/lifecycle/runStart.ts:saveLocalSpec.spec': 'kept for a spot replacement, as written',
  'src/core/runs/lifecycle/runStart.ts:runSpecOf.spec': 'the function that types it',
  'src/core/runs/lifecycle/multiNode.ts:specForMachine.spec': "builds one machine's spec.json from the written one",
  'src/core/runs/cost/runBudget.ts:specWithBudgetBilling.spec': 'builds spec.json with the billing the host enforces',
};

const UNTYPED = /^(Readonly<)?Record<string, unknown>>?$|^unknown$/;

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(join(dir, e.name)) : /\.tsx?$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

function ownerName(n: ts.Node): string {
  for (let p: ts.Node | undefined = n.parent; p; p = p.parent) {
    if ((ts.isFunctionDeclaration(p) || ts.isInterfaceDeclaration(p) || ts.isClassDeclaration(p) || ts.isTypeAliasDeclaration(p)) && p.name) return p.name.text;
    if (ts.isMethodDeclaration(p) && ts.isIdentifier(p.name)) return p.name.text;
    if (ts.isVariableDeclaration(p) && ts.isIdentifier(p.name)) return p.name.text;
  }
  return '(module)';
}

/** `file:Owner.spec` for each parameter, property or field named spec whose declared type is an untyped record. */
export function untypedSpecs(file: string, text: string): string[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const visit = (n: ts.Node): void => {
    if ((ts.isParameter(n) || ts.isPropertySignature(n) || ts.isPropertyDeclaration(n)) && ts.isIdentifier(n.name) && n.name.text === 'spec' && n.type) {
      if (UNTYPED.test(n.type.getText(sf).replace(/\s+/g, ' '))) out.push(`${file}:${ownerName(n)}.spec`);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

test('the run spec is passed typed: every untyped `spec` in src/ is one the list says must stay as written', () => {
  const found = tsFiles(join(REPO, 'src')).flatMap((f) => untypedSpecs(relative(REPO, f).replace(/\\/g, '/'), readFileSync(f, 'utf8')));
  const unexplained = found.filter((k) => !(k in AS_WRITTEN));
  assert.deepEqual(unexplained, [], 'read the spec as RunSpec, ResolvedRunSpec or LooseRunSpec (src/core/config/runSpecDefaults.ts)');
  const gone = Object.keys(AS_WRITTEN).filter((k) => !found.includes(k));
  assert.deepEqual(gone, [], 'entries of AS_WRITTEN that no longer exist: remove them');
});

test('the scan finds an untyped spec parameter, field and property, and passes a typed one', () => {
  const src = [
    'function a(spec: Readonly<Record<string, unknown>>) {}',
    'interface B { readonly spec: Record<string, unknown> }',
    'function c(x: number, spec: unknown) {}',
    'function d(spec: LooseRunSpec) {}',
    'interface E { spec: RunSpec }',
  ].join('\n');
  assert.deepEqual(untypedSpecs('x.ts', src), ['x.ts:a.spec', 'x.ts:B.spec', 'x.ts:c.spec']);
});
