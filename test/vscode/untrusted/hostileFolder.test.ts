// A cloned repository opened in Restricted Mode (workspace trust on, not granted): only the config checks run,
// and nothing the repository names can hang, exhaust or crash the extension host. The files are the
// attacks seen in review: a run spec whose model.config_path climbs through ../ to /dev/zero (the host died of
// std::bad_alloc three times and VS Code gave up on the extension), a FIFO (hovers stayed "Loading…" for
// minutes), a link to /dev/zero, and for the workspace-wide validate a 3 GB sparse file, a large JSON dataset
// and a run spec over the size limit.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, truncateSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as vscode from 'vscode';

const EXTENSION_ID = 'remote-finetune.remote-finetune';
const SOURCE = 'Remote Fine-Tune';

function env(name: string): string {
  const v = process.env[name];
  assert.ok(v, `${name} is not set by the test runner`);
  return v;
}

async function ours(uri: vscode.Uri, ok: (ds: vscode.Diagnostic[]) => boolean, ms: number): Promise<vscode.Diagnostic[]> {
  const get = (): vscode.Diagnostic[] => vscode.languages.getDiagnostics(uri).filter((d) => d.source === SOURCE);
  const deadline = Date.now() + ms;
  while (Date.now() < deadline && !ok(get())) await new Promise((r) => setTimeout(r, 50));
  return get();
}

/** A round trip through the workbench to one of our commands and back: a blocked extension host never answers. */
async function roundTripMs(): Promise<number> {
  const t0 = Date.now();
  await Promise.race([vscode.commands.executeCommand('remoteFinetune.validateConfig'), new Promise((r) => setTimeout(r, 10_000))]);
  return Date.now() - t0;
}

const spec = (field: string): string =>
  `version: 1\nmodel:\n  id: org/model-7B\n${field.startsWith('config_path') ? `  ${field}\n` : ''}method: qlora\ndata:\n  train: org/data\nlauncher:\n  type: accelerate\n${field.startsWith('config_file') || field.startsWith('deepspeed') ? `  ${field}\n` : ''}target:\n  provider: ssh\n  gpu: A100-80GB\n`;

suite('a hostile folder in Restricted Mode', () => {
  let ws: string;

  suiteSetup(async () => {
    ws = env('RFT_TEST_WORKSPACE');
    await vscode.extensions.getExtension(EXTENSION_ID)!.activate();
  });

  test('the folder is untrusted (the suite runs in Restricted Mode)', () => {
    assert.equal(vscode.workspace.isTrusted, false);
  });

  test('a run spec naming /dev/zero through ../, a FIFO or a link gets RFT814 within a second each, and the extension host stays responsive', async () => {
    mkdirSync(join(ws, 'zero'), { recursive: true });
    mkdirSync(join(ws, 'fifo'), { recursive: true });
    mkdirSync(join(ws, 'link'), { recursive: true });
    execFileSync('mkfifo', [join(ws, 'fifo', 'accelerate.yaml')]);
    symlinkSync('/dev/zero', join(ws, 'link', 'ds_config.json'));
    const cases: Array<[string, string]> = [
      [join(ws, 'zero', 'finetune.yaml'), spec(`config_path: ${relative(join(ws, 'zero'), '/dev/zero')}`)],
      [join(ws, 'fifo', 'finetune.yaml'), spec('config_file: accelerate.yaml')],
      [join(ws, 'link', 'finetune.yaml'), spec('deepspeed: ds_config.json')],
    ];
    const rss0 = process.memoryUsage().rss;
    for (const [file, text] of cases) {
      writeFileSync(file, text);
      const t0 = Date.now();
      const doc = await vscode.workspace.openTextDocument(file);
      await vscode.window.showTextDocument(doc);
      const ds = await ours(doc.uri, (x) => x.some((d) => d.code === 'RFT814'), 5000);
      const ms = Date.now() - t0;
      assert.ok(
        ds.some((d) => d.code === 'RFT814'),
        `${relative(ws, file)}: ${JSON.stringify(ds.map((d) => [d.code, d.message]))}`,
      );
      assert.ok(ms < 1500, `${relative(ws, file)}: the diagnostic took ${ms} ms`);
      // Hover and CodeLens read the same references: they answer too.
      const hovers = await Promise.race([
        vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', doc.uri, doc.positionAt(doc.getText().indexOf('method') + 1)),
        new Promise<undefined>((r) => setTimeout(() => r(undefined), 3000)),
      ]);
      assert.ok(hovers && hovers.length > 0, `${relative(ws, file)}: no hover within 3 s`);
      const rt = await roundTripMs();
      assert.ok(rt < 1000, `the extension host took ${rt} ms to answer`);
    }
    assert.ok(
      process.memoryUsage().rss - rss0 < 200 * 1024 * 1024,
      `the extension host grew by ${((process.memoryUsage().rss - rss0) / 1048576).toFixed(0)} MB`,
    );
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  test('"Validate Training Config" over the workspace decides on a prefix: a 3 GB sparse file and a 40 MB dataset are not read in full, an oversized run spec is reported as skipped', async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    mkdirSync(join(ws, 'data'), { recursive: true });
    mkdirSync(join(ws, 'big-spec'), { recursive: true });
    const sparse = join(ws, 'data', 'dump.json');
    writeFileSync(sparse, '');
    truncateSync(sparse, 3 * 1024 * 1024 * 1024);
    // A JSON dataset in the Alpaca layout, 40 MB: the memory a full read would take is what the test watches.
    const fd = openSync(join(ws, 'data', 'alpaca_data.json'), 'w');
    writeSync(fd, '[\n');
    const row = JSON.stringify({ instruction: 'Give three tips for staying healthy.', input: '', output: 'Eat well. '.repeat(40) });
    const rows = Math.ceil((40 * 1024 * 1024) / (row.length + 2));
    const block = Array.from({ length: 1000 }, () => row).join(',\n');
    for (let i = 0; i < rows; i += 1000) writeSync(fd, (i > 0 ? ',\n' : '') + block);
    writeSync(fd, '\n]\n');
    closeSync(fd);
    const bigSpec = [
      'version: 1',
      'model:',
      '  id: org/model-7B',
      'method: qlora',
      'data:',
      '  train: org/data',
      'target:',
      '  provider: ssh',
      '  gpu: A100-80GB',
      'notes:',
    ];
    while (bigSpec.join('\n').length < 1.5 * 1024 * 1024) bigSpec.push(`  - ${'a'.repeat(100)}`);
    writeFileSync(join(ws, 'big-spec', 'finetune.yaml'), bigSpec.join('\n') + '\n');
    writeFileSync(join(ws, 'accelerate_config.yaml'), 'compute_environment: LOCAL_MACHINE\ndistributed_type: NO\nmixed_precision: bf17\nnum_processes: 1\n');

    const rss0 = process.memoryUsage().rss;
    let peak = rss0;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    const t0 = Date.now();
    const s = await vscode.commands.executeCommand<{ files: number; errors: number; warnings: number; skipped: string[] }>('remoteFinetune.validateConfig');
    clearInterval(sampler);
    const ms = Date.now() - t0;
    assert.ok(s, 'the command returned nothing');
    assert.ok(ms < 20_000, `${ms} ms`);
    assert.ok(
      s.skipped.some((x) => /big-spec\/finetune\.yaml \(1\.5 MB, over the 1 MB limit\)/.test(x)),
      JSON.stringify(s),
    );
    assert.ok(!s.skipped.some((x) => /dump\.json|alpaca_data\.json/.test(x)), `datasets are not configs: ${JSON.stringify(s.skipped)}`);
    assert.ok(s.errors >= 1, `the small accelerate config with bf17 was still checked: ${JSON.stringify(s)}`);
    assert.ok(peak - rss0 < 150 * 1024 * 1024, `the extension host grew by ${((peak - rss0) / 1048576).toFixed(0)} MB during the scan`);
  });
});
