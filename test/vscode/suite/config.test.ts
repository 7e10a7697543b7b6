import * as assert from 'node:assert/strict';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';

const EXTENSION_ID = 'remote-finetune.remote-finetune';
const SOURCE = 'Remote Fine-Tune';

function env(name: string): string {
  const v = process.env[name];
  assert.ok(v, `${name} is not set by the test runner`);
  return v;
}

/** Waits until our diagnostics for `uri` satisfy `ok` (validation is debounced on typing). */
async function diagnosticsFor(uri: vscode.Uri, ok: (ds: vscode.Diagnostic[]) => boolean = (ds) => ds.length > 0, ms = 10_000): Promise<vscode.Diagnostic[]> {
  const ours = (): vscode.Diagnostic[] => vscode.languages.getDiagnostics(uri).filter((d) => d.source === SOURCE);
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const ds = ours();
    if (ok(ds)) return ds;
    await new Promise((r) => setTimeout(r, 100));
  }
  return ours();
}

const row = (d: vscode.Diagnostic): [string, number, number, number, number] => [
  String(d.code),
  d.range.start.line + 1,
  d.range.start.character + 1,
  d.range.end.line + 1,
  d.range.end.character + 1,
];

suite('config', () => {
  let ws: string;
  let expected: Record<string, Array<[string, number, number, number, number]>>;

  suiteSetup(async () => {
    await vscode.extensions.getExtension(EXTENSION_ID)!.activate();
    ws = env('RFT_TEST_WORKSPACE');
    const repo = env('RFT_REPO_ROOT');
    // The workspace is a throwaway copy of examples/; the planted files go in beside them.
    cpSync(join(repo, 'test/fixtures/config/planted'), join(ws, 'planted'), { recursive: true });
    expected = JSON.parse(readFileSync(join(repo, 'test/fixtures/config/planted-expected.json'), 'utf8')) as typeof expected;
  });

  test('opening each planted file shows exactly the expected diagnostics (code and range)', async () => {
    for (const [name, want] of Object.entries(expected)) {
      const doc = await vscode.workspace.openTextDocument(join(ws, 'planted', name));
      const ds = await diagnosticsFor(doc.uri, (x) => x.length >= want.length);
      const got = ds.map(row).sort((a, b) => a[1] - b[1] || a[2] - b[2] || a[0].localeCompare(b[0]));
      const exp = [...want].sort((a, b) => a[1] - b[1] || a[2] - b[2] || a[0].localeCompare(b[0]));
      assert.deepEqual(got, exp, name);
    }
  });

  test('the examples open clean', async () => {
    for (const rel of [
      't4-qlora/finetune.yaml',
      'deepspeed-zero2-multi/finetune.yaml',
      'accelerate_configs/deepspeed_zero3.yaml',
      'wandb_sweep.yaml',
      '.env.example',
    ]) {
      const doc = await vscode.workspace.openTextDocument(join(ws, rel));
      await vscode.window.showTextDocument(doc);
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(
        vscode.languages
          .getDiagnostics(doc.uri)
          .filter((d) => d.source === SOURCE)
          .map(row),
        [],
        rel,
      );
    }
  });

  test('applying the bf16 → fp16 quick fix gives the expected text, and the diagnostic goes away', async () => {
    const doc = await vscode.workspace.openTextDocument(join(ws, 'planted', 'finetune.yaml'));
    await vscode.window.showTextDocument(doc);
    const ds = await diagnosticsFor(doc.uri);
    const bf16 = ds.find((d) => d.code === 'RFT801' && doc.getText(d.range) === 'bf16');
    assert.ok(bf16, JSON.stringify(ds.map(row)));
    const actions = await vscode.commands.executeCommand<vscode.CodeAction[]>(
      'vscode.executeCodeActionProvider',
      doc.uri,
      bf16.range,
      vscode.CodeActionKind.QuickFix.value,
    );
    const fix = actions.find((a) => a.title === 'Change to fp16');
    assert.ok(fix?.edit, actions.map((a) => a.title).join(', '));
    assert.ok(await vscode.workspace.applyEdit(fix.edit));
    assert.equal(doc.lineAt(14).text, '  precision: fp16');
    const after = await diagnosticsFor(doc.uri, (x) => !x.some((d) => d.code === 'RFT801' && d.range.start.line === 14));
    assert.ok(!after.some((d) => d.code === 'RFT801' && d.range.start.line === 14));

    const alpah = after.find((d) => d.code === 'RFT100')!;
    const rename = (
      await vscode.commands.executeCommand<vscode.CodeAction[]>('vscode.executeCodeActionProvider', doc.uri, alpah.range, vscode.CodeActionKind.QuickFix.value)
    ).find((a) => a.title === "Rename to 'alpha'");
    assert.ok(rename?.edit);
    assert.ok(await vscode.workspace.applyEdit(rename.edit));
    assert.equal(doc.lineAt(10).text, '  alpha: 32');
  });

  test('typing a planted error is diagnosed after the debounce', async () => {
    const doc = await vscode.workspace.openTextDocument(join(ws, 't4-qlora', 'finetune.yaml'));
    const editor = await vscode.window.showTextDocument(doc);
    const line = doc
      .getText()
      .split('\n')
      .findIndex((l) => l.startsWith('  per_device_batch_size:'));
    await editor.edit((e) => e.replace(doc.lineAt(line).range, '  per_device_batch_size: 0'));
    const ds = await diagnosticsFor(doc.uri, (x) => x.some((d) => d.code === 'RFT103'));
    const d = ds.find((x) => x.code === 'RFT103');
    assert.ok(d);
    assert.deepEqual(row(d), ['RFT103', line + 1, 26, line + 1, 27]);
    await vscode.commands.executeCommand('workbench.action.files.revert');
  });

  test('hover shows the field description; CodeLens shows the VRAM estimate on the target GPU', async () => {
    const doc = await vscode.workspace.openTextDocument(join(ws, 't4-qlora', 'finetune.yaml'));
    await vscode.window.showTextDocument(doc);
    const at = doc.positionAt(doc.getText().indexOf('precision:') + 2);
    const hovers = await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', doc.uri, at);
    const text = hovers.flatMap((h) => h.contents.map((c) => (typeof c === 'string' ? c : c.value))).join('\n');
    assert.match(text, /Training precision: bf16/);
    let lenses: vscode.CodeLens[] = [];
    for (let i = 0; i < 50 && lenses.length === 0; i++) {
      lenses = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', doc.uri);
      if (lenses.length === 0) await new Promise((r) => setTimeout(r, 100));
    }
    const titles = lenses.map((l) => l.command?.title ?? '');
    assert.ok(
      // Then the run's time and cost on the spec's own GCP machine (issue 39.3).
      titles.some((t) =>
        /^≈ \d+\.\d GB of 16 GB on T4 · ±\d+%: held out over \d+ models, \d+ H200 cases \(in sample ±\d+%\) · .* on gcp n1-standard-4$/.test(t),
      ),
      titles.join(' | '),
    );
  });

  test('"Fine-Tune: Validate Training Config" checks the active file and reports the counts', async () => {
    const doc = await vscode.workspace.openTextDocument(join(ws, 'planted', 'accelerate_single.yaml'));
    await vscode.window.showTextDocument(doc);
    const s = await vscode.commands.executeCommand<{ files: number; errors: number; warnings: number; skipped: string[] }>('remoteFinetune.validateConfig');
    // mixed_precision bf17 is an error; num_processes 2 under distributed_type 'NO' is only ignored by accelerate: a warning (issue 18.6).
    assert.deepEqual(s, { files: 1, errors: 1, warnings: 1, skipped: [] });
  });

  test('a config over 96 KB that only the full YAML parser reads (anchor, merge keys) is checked in the background: the planted error near its end is shown, and typing a fix clears it', async () => {
    const lines = ['base_model: NousResearch/Llama-2-7b-hf', 'adapter: qlora', 'lora_r: 16', 'defaults: &ds', '  type: alpaca', '  split: train', 'datasets:'];
    for (let i = 0; lines.join('\n').length < 130_000; i++) lines.push(`  - path: org/dataset-${i}`, '    <<: *ds');
    lines.push('  - path: 42', '    <<: *ds');
    const file = join(ws, 'big-anchored', 'axolotl.yml');
    mkdirSync(join(ws, 'big-anchored'), { recursive: true });
    writeFileSync(file, lines.join('\n') + '\n');
    const doc = await vscode.workspace.openTextDocument(file);
    const editor = await vscode.window.showTextDocument(doc);
    const plantedLine = lines.length - 2;
    const ds = await diagnosticsFor(doc.uri, (x) => x.some((d) => d.range.start.line === plantedLine), 20_000);
    assert.ok(
      ds.some((d) => d.range.start.line === plantedLine),
      JSON.stringify(ds.map(row)),
    );
    assert.ok(!ds.some((d) => d.code === 'RFT004'), 'no "too large to check" warning');
    await editor.edit((e) => e.replace(new vscode.Range(plantedLine, 10, plantedLine, 12), 'org/fixed'));
    const after = await diagnosticsFor(doc.uri, (x) => x.length === 0, 20_000);
    assert.deepEqual(after.map(row), []);
    await vscode.commands.executeCommand('workbench.action.files.revert');
  });
});
