// Issue 39.3 in a real VS Code host: the run spec's CodeLens reads memory · time · cost for its own target (a GCP
// machine at GCP's catalog price; an own host "no charge, ≈ N min"), and the hover on `target` gives the same
// money line the Start confirmation shows.
import * as assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';

const EXTENSION_ID = 'remote-finetune.remote-finetune';

function env(name: string): string {
  const v = process.env[name];
  assert.ok(v, `${name} is not set by the test runner`);
  return v;
}

async function lensTitles(doc: vscode.TextDocument, want: RegExp): Promise<string[]> {
  let titles: string[] = [];
  for (let i = 0; i < 100 && !titles.some((t) => want.test(t)); i++) {
    const lenses = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', doc.uri);
    titles = lenses.map((l) => l.command?.title ?? '');
    if (!titles.some((t) => want.test(t))) await new Promise((r) => setTimeout(r, 100));
  }
  return titles;
}

async function hoverText(doc: vscode.TextDocument, at: vscode.Position): Promise<string> {
  const hovers = await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', doc.uri, at);
  // Workspace text in the hover is escaped markdown: read as the hover shows it.
  return hovers
    .flatMap((h) => h.contents.map((c) => (typeof c === 'string' ? c : c.value)))
    .join('\n')
    .replace(/\\(.)/g, '$1');
}

suite('time and money in the editor (issue 39.3)', () => {
  let dir: string;
  let spec: string;

  suiteSetup(async () => {
    await vscode.extensions.getExtension(EXTENSION_ID)!.activate();
    const ws = env('RFT_TEST_WORKSPACE');
    dir = join(ws, 'time-and-money');
    mkdirSync(join(dir, 'data'), { recursive: true });
    spec = readFileSync(join(env('RFT_REPO_ROOT'), 'test/fixtures/runspec/qlora_t4.yaml'), 'utf8').replace('max_steps: -1', 'max_steps: 200');
  });

  test('a GCP spec: the CodeLens gives memory · time · cost at its machine type, and the hover on target the money line', async () => {
    const path = join(dir, 'finetune.yaml');
    writeFileSync(path, spec);
    const doc = await vscode.workspace.openTextDocument(path);
    await vscode.window.showTextDocument(doc);
    const want = /^≈ \d+\.\d GB of 16 GB on T4 · .* · ≈ (\d+ min|\d+h \d\dm) · ≈ \$\d+\.\d\d on gcp n1-standard-4$/;
    const titles = await lensTitles(doc, want);
    assert.ok(
      titles.some((t) => want.test(t)),
      titles.join(' | '),
    );
    const text = await hoverText(doc, doc.positionAt(doc.getText().indexOf('target:') + 2));
    assert.match(text, /\*\*Time and cost\*\*/);
    assert.match(text, /\$0\.54\/h \(n1-standard-4; gcp's on-demand list price/);
    assert.match(text, /about \$\d+\.\d\d for this run/);
    // Elsewhere in the spec the hover is the field's alone.
    assert.doesNotMatch(await hoverText(doc, doc.positionAt(doc.getText().indexOf('precision:') + 2)), /Time and cost/);
  });

  test('an own host: "own host: no charge, ≈ N min" in the CodeLens and the hover', async () => {
    const path = join(dir, 'own.yaml');
    writeFileSync(path, spec.replace(/target:\n(?: {2}.*\n)+/, 'target:\n  provider: ssh\n  host: lab-t4\n  gpu: T4\n'));
    const doc = await vscode.workspace.openTextDocument(path);
    await vscode.window.showTextDocument(doc);
    const want = / · own host: no charge, ≈ (\d+ min|\d+h \d\dm)$/;
    const titles = await lensTitles(doc, want);
    assert.ok(
      titles.some((t) => want.test(t)),
      titles.join(' | '),
    );
    const text = await hoverText(doc, doc.positionAt(doc.getText().indexOf('host: lab-t4') + 2));
    assert.match(text, /\*\*Time and cost\*\*\n\nown host: no charge, ≈ .*\n\nTraining ≈ .*: 200 steps \(trainer\.max_steps 200\)/);
  });
});
