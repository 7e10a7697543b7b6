// Sizes of the code under src/: files over 400 lines and functions over 100 lines (issue 38's "rooms" counts).
//   node --import tsx scripts/code-sizes.ts [--list]
// Function lengths come from the TypeScript compiler's own parse, so a brace in a string or a comment is no
// function; test/unit/config/ruleTables.test.ts holds the config rule files to 60 lines a function with it.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

export interface FunctionSize {
  readonly name: string;
  /** 1-based line of its first token. */
  readonly line: number;
  readonly lines: number;
}

function nameOf(node: ts.Node): string {
  const named = (node as { name?: ts.Node }).name;
  if (named && (ts.isIdentifier(named) || ts.isStringLiteral(named) || ts.isPrivateIdentifier(named))) return named.text;
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const p = node.parent;
  if (p && ts.isVariableDeclaration(p) && ts.isIdentifier(p.name)) return p.name.text;
  if (p && ts.isPropertyAssignment(p) && (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name))) return p.name.text;
  return '(anonymous)';
}

/** Every function in a TypeScript file (declarations, methods, accessors, arrows, function expressions), nested ones too. */
export function functionSizes(fileName: string, text: string): FunctionSize[] {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, fileName.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const out: FunctionSize[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && (node as { body?: ts.Node }).body) {
      const first = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      out.push({ name: nameOf(node), line: first + 1, lines: last - first + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? tsFiles(p) : /\.tsx?$/.test(n) && !n.endsWith('.d.ts') ? [p] : [];
  });
}

export interface CodeSizes {
  readonly filesOver400: ReadonlyArray<{ readonly file: string; readonly lines: number }>;
  readonly functionsOver100: ReadonlyArray<{ readonly file: string } & FunctionSize>;
}

export function codeSizes(repo: string, root = 'src'): CodeSizes {
  const filesOver400: Array<{ file: string; lines: number }> = [];
  const functionsOver100: Array<{ file: string } & FunctionSize> = [];
  for (const abs of tsFiles(join(repo, root))) {
    const file = relative(repo, abs);
    const text = readFileSync(abs, 'utf8');
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    if (lines > 400) filesOver400.push({ file, lines });
    for (const f of functionSizes(file, text)) if (f.lines > 100) functionsOver100.push({ file, ...f });
  }
  return { filesOver400, functionsOver100 };
}

if (require.main === module) {
  const sizes = codeSizes(join(__dirname, '..'));
  if (process.argv.includes('--list')) {
    for (const f of sizes.filesOver400) console.log(`file      ${f.lines}  ${f.file}`);
    for (const f of sizes.functionsOver100) console.log(`function  ${f.lines}  ${f.file}:${f.line} ${f.name}`);
  }
  console.log(`src/: ${sizes.filesOver400.length} files over 400 lines, ${sizes.functionsOver100.length} functions over 100 lines`);
}
