// Issue 18.6 in a real VS Code host: the learning-rate quick fix proposes 2e-4 for QLoRA, LoRA rates
// above 1e-2 warn, messages carry no backticks, the VRAM CodeLens sits on line 0 and on gpu: and opens
// a breakdown with MB for small parts, Lambda has no T4, and accelerate's ignored num_processes warns.
import * as assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';

const EXTENSION_ID = 'remote-finetune.remote-finetune';
const SOURCE = 'Remote Fine-Tune';

function env(name: string): string {
  const v = process.env[name];
  assert.ok(v, `${name} is not set by the test runner`);
  return v;
}

async function ours(uri: vscode.Uri, ok: (ds: vscode.Diagnostic[]) => boolean, ms = 10_000): Promise<vscode.Diagnostic[]> {
  const get = (): vscode.Diagnostic[] => vscode.languages.getDiagnostics(uri).filter((d) => d.source === SOURCE);
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (ok(get())) return get();
    await new Promise((r) => setTimeout(r, 100));
  }
  return get();
}

const codeOf = (d: vscode.Diagnostic): string => String(typeof d.code === 'object' ? d.code.value : d.code);
const has =
  (code: string) =>
  (ds: vscode.Diagnostic[]): boolean =>
    ds.some((d) => codeOf(d) === code);

const spec = (method: string, lr: string, provider = 'ssh', gpu = 'A100-80GB'): string =>
  `# planted for the diagnostics-polish suite\nversion: 1\nmodel:\n  id: meta-llama/Llama-3.1-8B\nmethod: ${method}\ndata:\n  train: org/dataset\ntrainer:\n  learning_rate: ${lr}\n  precision: bf16\n  gradient_checkpointing: true\ntarget:\n  provider: ${provider}\n  gpu: ${gpu}\n`;

suite('diagnostics polish (issue 18.6)', () => {
  let dir: string;
  let n = 0;
  async function open(text: string, name = 'finetune.yaml'): Promise<vscode.TextDocument> {
    const sub = join(dir, `case-${n++}`);
    mkdirSync(sub, { recursive: true });
    writeFileSync(join(sub, name), text);
    const doc = await vscode.workspace.openTextDocument(join(sub, name));
    await vscode.window.showTextDocument(doc);
    return doc;
  }

  suiteSetup(async () => {
    await vscode.extensions.getExtension(EXTENSION_ID)!.activate();
    dir = join(env('RFT_TEST_WORKSPACE'), 'diagnostics-polish');
    mkdirSync(dir, { recursive: true });
  });

  test('an out-of-range QLoRA learning rate: the preferred quick fix is "Set to 2e-4", and applying it clears the error', async () => {
    const doc = await open(spec('qlora', '5'));
    const ds = await ours(doc.uri, has('RFT103'));
    const d = ds.find((x) => codeOf(x) === 'RFT103');
    assert.ok(d, JSON.stringify(ds.map((x) => x.message)));
    assert.equal(
      d.message,
      'trainer.learning_rate is 5; it must be from 1e-8 to 1. Peak learning rate. 2e-4 is usual for LoRA/QLoRA, 1e-5–5e-5 for full fine-tuning.',
    );
    const actions = await vscode.commands.executeCommand<vscode.CodeAction[]>(
      'vscode.executeCodeActionProvider',
      doc.uri,
      d.range,
      vscode.CodeActionKind.QuickFix.value,
    );
    const fix = actions.find((a) => a.isPreferred);
    assert.ok(fix?.edit, actions.map((a) => a.title).join(', '));
    assert.equal(fix.title, 'Set to 2e-4 (usual for LoRA/QLoRA)');
    assert.ok(!actions.some((a) => a.title === 'Set to 1'), 'no fix to the range bound');
    assert.ok(await vscode.workspace.applyEdit(fix.edit));
    assert.equal(doc.lineAt(8).text, '  learning_rate: 2e-4');
    const after = await ours(doc.uri, (x) => !has('RFT103')(x));
    assert.ok(!has('RFT103')(after) && !has('RFT818')(after), JSON.stringify(after.map((x) => x.message)));
    await vscode.commands.executeCommand('workbench.action.files.revert');
  });

  test('full fine-tuning gets 2e-5; a QLoRA rate of 0.05 is a warning (RFT818) whose fix is 2e-4', async () => {
    const full = await open(spec('full', '5', 'ssh', 'H200'));
    const d = (await ours(full.uri, has('RFT103'))).find((x) => codeOf(x) === 'RFT103')!;
    const titles = (
      await vscode.commands.executeCommand<vscode.CodeAction[]>('vscode.executeCodeActionProvider', full.uri, d.range, vscode.CodeActionKind.QuickFix.value)
    ).map((a) => a.title);
    assert.ok(titles.includes('Set to 2e-5 (usual for full fine-tuning)'), titles.join(', '));
    const high = await open(spec('qlora', '0.05'));
    const w = (await ours(high.uri, has('RFT818'))).find((x) => codeOf(x) === 'RFT818');
    assert.ok(w);
    assert.equal(w.severity, vscode.DiagnosticSeverity.Warning);
    const fix = (
      await vscode.commands.executeCommand<vscode.CodeAction[]>('vscode.executeCodeActionProvider', high.uri, w.range, vscode.CodeActionKind.QuickFix.value)
    ).find((a) => a.isPreferred);
    assert.equal(fix?.title, 'Set to 2e-4 (usual for LoRA/QLoRA)');
  });

  test('messages shown in the Problems panel carry no backticks and no "1 GPUs"', async () => {
    const doc = await open(
      'version: 1\nmodel:\n  id: x/y-7B\n  alpah: 1\nmethod: qlora\ndata:\n  train: a/b\n  max_seq_length: 4\nlauncher:\n  type: accelerate\n  num_processes: 2\ntarget:\n  provider: ssh\n',
    );
    const ds = await ours(doc.uri, (x) => x.length >= 4);
    assert.ok(ds.length >= 4, JSON.stringify(ds.map((x) => x.message)));
    for (const d of ds) {
      assert.ok(!d.message.includes('`'), d.message);
      assert.doesNotMatch(d.message, /\b1 GPUs\b/, d.message);
    }
    const missing = ds.find((d) => codeOf(d) === 'RFT101');
    assert.match(missing?.message ?? '', /^Missing required key 'gpu' in target\./);
    assert.match(ds.find((d) => codeOf(d) === 'RFT805')?.message ?? '', /has 1 GPU:/);
  });

  test('the VRAM CodeLens is on line 0 and on the gpu: line; it opens a rendered breakdown that shows small parts in MB and follows edits', async () => {
    const doc = await open(spec('qlora', '2e-4', 'ssh', 'T4').replace('precision: bf16', 'precision: fp16'));
    const gpuLine = doc
      .getText()
      .split('\n')
      .findIndex((l) => l.startsWith('  gpu: T4'));
    let lenses: vscode.CodeLens[] = [];
    for (let i = 0; i < 100 && lenses.length < 2; i++) {
      lenses = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', doc.uri);
      if (lenses.length < 2) await new Promise((r) => setTimeout(r, 100));
    }
    const lines = lenses.map((l) => l.range.start.line).sort((a, b) => a - b);
    assert.deepEqual(lines, [0, gpuLine]);
    for (const l of lenses)
      assert.match(
        l.command?.title ?? '',
        /^≈ \d+\.\d GB of 16 GB on T4 · ±\d+%: held out over \d+ models, \d+ H200 cases \(in sample ±\d+%\) · own host: no charge(, ≈ .*)?$/,
      );
    assert.match(String(lenses[0]!.command?.tooltip ?? ''), /LoRA adapters \(r=16\): \d+(\.\d)? MB/);
    const cmd = lenses[0]!.command!;
    await vscode.commands.executeCommand(cmd.command, ...(cmd.arguments ?? []));
    let view: vscode.TextDocument | undefined;
    for (let i = 0; i < 50 && !view; i++) {
      view = vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'remote-finetune-estimate' && d.uri.query === doc.uri.toString());
      if (!view) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(view, 'the breakdown document opened');
    assert.equal(view.languageId, 'markdown');
    const text = view.getText();
    assert.match(text, /^# GPU memory estimate: finetune\.yaml/);
    assert.match(text, /\| LoRA adapters \\\(r=16\\\) \| \d+(\.\d)? MB \|/);
    assert.match(text, /\| \*\*Total\*\* \| \*\*\d+\.\d GB\*\* \| of 16 GB on T4 \|/);
    // Issue 39.7: rendered (the Markdown preview, not the source with its escapes), and it follows edits.
    const previewTab = (): vscode.Tab | undefined =>
      vscode.window.tabGroups.all.flatMap((g) => g.tabs).find((t) => t.input instanceof vscode.TabInputWebview && /markdown\.preview/.test(t.input.viewType));
    for (let i = 0; i < 50 && !previewTab(); i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(previewTab(), `the breakdown is shown rendered: tabs ${vscode.window.tabGroups.all.flatMap((g) => g.tabs.map((t) => t.label)).join(', ')}`);
    assert.ok(!vscode.window.visibleTextEditors.some((e) => e.document === view), 'not as raw markdown');
    const edit = new vscode.WorkspaceEdit();
    const at = doc.getText().indexOf('gpu: T4') + 'gpu: '.length;
    edit.replace(doc.uri, new vscode.Range(doc.positionAt(at), doc.positionAt(at + 2)), 'L4');
    assert.ok(await vscode.workspace.applyEdit(edit));
    for (let i = 0; i < 100 && !/of 24 GB on L4/.test(view.getText()); i++) await new Promise((r) => setTimeout(r, 100));
    assert.match(view.getText(), /\| of 24 GB on L4 \|/, 'the breakdown follows the edit to the spec');
  });

  test('hardware per provider: Lambda offers no T4, and the message names the GPUs it does offer', async () => {
    const doc = await open(spec('qlora', '2e-4', 'lambda', 'T4').replace('precision: bf16', 'precision: fp16'));
    const d = (await ours(doc.uri, has('RFT819'))).find((x) => codeOf(x) === 'RFT819');
    assert.ok(d);
    assert.equal(doc.getText(d.range), 'T4');
    assert.match(d.message, /^Lambda offers no T4\b.*A100-80GB.*H100/);
  });

  test("accelerate's num_processes with distributed_type 'NO' is ignored by accelerate: a warning, not an error", async () => {
    const doc = await open("compute_environment: LOCAL_MACHINE\ndistributed_type: 'NO'\nmixed_precision: 'no'\nnum_processes: 4\n", 'accelerate_single.yaml');
    const d = (await ours(doc.uri, has('RFT805'))).find((x) => codeOf(x) === 'RFT805');
    assert.ok(d);
    assert.equal(d.severity, vscode.DiagnosticSeverity.Warning);
    assert.equal(doc.getText(d.range), '4');
  });
});
