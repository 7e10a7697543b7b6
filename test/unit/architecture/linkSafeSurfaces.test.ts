// Text from a host, a log, a cloud API or the workspace never reaches a VS Code surface that parses links or
// markdown unsanitised: notifications, progress (title and messages), quick picks, tree items and their
// tooltips, the status bar and hovers are reached only through src/features/notify.ts and linkSafeUi.ts, which
// pass every string through core/text/linkSafe.ts (and take markdown only as SafeMarkdown, which only
// markdownEscaped and ourMarkdown make). Held over the code, not by review; the reader is proven on made-up
// files first, so a pass means something.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { linkSafeBypasses } from '../../support/linkSafeSurfaces';
import type { Bypass } from '../../support/linkSafeSurfaces';

const REPO = join(__dirname, '../../..');
const WRAPPERS = new Set(['src/features/notify.ts', 'src/features/linkSafeUi.ts']);
const TEXT_CORE = 'src/core/text/linkSafe.ts';

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? tsFiles(p) : p.endsWith('.ts') ? [relative(REPO, p).replace(/\\/g, '/')] : [];
  });
}

const check = (file: string, text: string): Bypass[] => linkSafeBypasses(file, text, { wrapper: WRAPPERS.has(file), textCore: file === TEXT_CORE });
const shown = (bs: readonly Bypass[]): string[] => bs.map((b) => `${b.file}:${b.line} ${b.what}`);

test('the reader finds every way around the wrappers in made-up files', () => {
  const f = 'src/features/x.ts';
  const bad = [
    "import * as vscode from 'vscode';",
    'void vscode.window.withProgress({ location: 15, title: host }, async (progress) => progress.report({ message: line }));',
    'void vscode.window.showInformationMessage(`${host} says ${text}`);',
    'const qp = vscode.window.createQuickPick(); void vscode.window.showQuickPick([label]);',
    'const s = vscode.window.createStatusBarItem(); vscode.window.setStatusBarMessage(t);',
    'const item = new vscode.TreeItem(name); const m = new vscode.MarkdownString(key); m.appendMarkdown(key);',
    'const h = new vscode.Hover(m); class T extends vscode.TreeItem {}',
    "const { withProgress } = vscode.window; const w = vscode.window['showErrorMessage'];",
    "import { window, MarkdownString as M } from 'vscode';",
    'const md = key as SafeMarkdown;',
    'const w = run(vscode.window); const w2 = vscode.window;',
  ].join('\n');
  assert.deepEqual(shown(check(f, bad)), [
    `${f}:2 calls window.withProgress`,
    `${f}:3 calls window.showInformationMessage`,
    `${f}:4 calls window.createQuickPick`,
    `${f}:4 calls window.showQuickPick`,
    `${f}:5 calls window.createStatusBarItem`,
    `${f}:5 calls window.setStatusBarMessage`,
    `${f}:6 constructs vscode.TreeItem`,
    `${f}:6 constructs vscode.MarkdownString`,
    `${f}:6 calls .appendMarkdown`,
    `${f}:7 constructs vscode.Hover`,
    `${f}:7 extends vscode.TreeItem`,
    `${f}:8 destructures vscode.window`,
    `${f}:8 indexes vscode.window`,
    `${f}:9 imports window from vscode`,
    `${f}:9 imports MarkdownString from vscode`,
    `${f}:10 casts to SafeMarkdown`,
    `${f}:11 aliases vscode.window`,
    `${f}:11 aliases vscode.window`,
  ]);
  const fine = [
    "import * as vscode from 'vscode';",
    "import { withProgress, treeItem } from '../linkSafeUi';",
    'void withProgress({ location: vscode.ProgressLocation.Notification, title: host }, async (p) => p.report({ message: line }));',
    'const t = vscode.window.activeTextEditor; void vscode.window.showInputBox({ title: "x" });',
    'const item = treeItem(name, vscode.TreeItemCollapsibleState.None);',
  ].join('\n');
  assert.deepEqual(shown(check(f, fine)), []);
  assert.deepEqual(shown(check('src/features/linkSafeUi.ts', bad)), ['src/features/linkSafeUi.ts:10 casts to SafeMarkdown'], 'the wrappers may call VS Code');
});

test('no VS Code surface that parses links or markdown is reached around the link-safe wrappers', () => {
  const files = tsFiles(join(REPO, 'src'));
  assert.ok(files.length > 150 && files.includes('src/features/notify.ts'), `${files.length} files`);
  const found = files.flatMap((f) => check(f, readFileSync(join(REPO, f), 'utf8')));
  assert.deepEqual(shown(found), []);
});
