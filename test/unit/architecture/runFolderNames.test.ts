// A run folder's file names are spelled in one module (src/core/runs/store/runFolder.ts): any string or template
// literal elsewhere in src/ that names one of them (a path, a shell snippet, a message) fails here. Comments may
// name them. Outside the rule: src/protocol (it imports nothing of ours; the test below ties its list of history
// files to the module's), src/core/ssh and src/core/config (below core/runs in the layering: the detached-job
// wrapper creates the folder; the generated Python spec module's docstrings), and
// src/features/panels/sourceBinding.ts (file-picker titles for a person).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { HISTORY_FILES, RUN_FILES } from '../../../src/core/runs/store/runFolder';
import { OPENABLE_FILES } from '../../../src/protocol/compare';

const REPO = join(__dirname, '../../..');
const MODULE = 'src/core/runs/store/runFolder.ts';
const OUTSIDE = [/^src\/protocol\//, /^src\/core\/ssh\//, /^src\/core\/config\//, /^src\/features\/panels\/sourceBinding\.ts$/];
const NAMES = [...new Set([...Object.values(RUN_FILES), ...Object.values(HISTORY_FILES)])];

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(join(dir, e.name)) : /\.tsx?$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A name as a whole token: not part of a longer file name such as gpu.csv.bak or my_output.log. */
const NAME_RE = new RegExp(`(?<![\\w.-])(${NAMES.map(escape).join('|')})(?![\\w-]|\\.\\w)`);

/** `file:line: name in "text"` for each literal of `text` (a TypeScript source) that names a run file. */
export function literalRunFileNames(file: string, text: string): string[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const visit = (n: ts.Node): void => {
    if (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n) || ts.isTemplateHead(n) || ts.isTemplateMiddle(n) || ts.isTemplateTail(n)) {
      const m = NAME_RE.exec(n.text);
      if (m) out.push(`${file}:${sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1}: ${m[1]} in ${JSON.stringify(n.text.slice(0, 80))}`);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

test('run-folder names: no string literal outside runFolder.ts names a run-folder file', () => {
  const files = tsFiles(join(REPO, 'src'))
    .map((f) => relative(REPO, f).split('\\').join('/'))
    .filter((f) => f !== MODULE && !OUTSIDE.some((re) => re.test(f)));
  assert.ok(files.length > 150, `only ${files.length} files scanned`);
  const found = files.flatMap((f) => literalRunFileNames(f, readFileSync(join(REPO, f), 'utf8')));
  assert.deepEqual(found, [], `run-folder file names spelled outside ${MODULE} (take them from RUN_FILES/HISTORY_FILES):\n${found.join('\n')}`);
});

test('run-folder names: the check sees a literal in a path, a template and a shell snippet, and not in a comment', () => {
  const src = [
    '// output.log is named in a comment only',
    "const a = join(dir, 'events.jsonl');",
    'const b = `${dir}/gpu.csv`;',
    'const c = `cat "$RFT_RUN_DIR/bootstrap.json" && ${x}`;',
    "const d = 'my_output.log.bak';",
  ].join('\n');
  assert.deepEqual(
    literalRunFileNames('probe.ts', src).map((l) => l.split(' in ')[0]),
    ['probe.ts:2: events.jsonl', 'probe.ts:3: gpu.csv', 'probe.ts:4: bootstrap.json'],
  );
});

test("run-folder names: the compare page's openable files are the module's history files", () => {
  assert.deepEqual([...OPENABLE_FILES].sort(), Object.values(HISTORY_FILES).sort());
});
