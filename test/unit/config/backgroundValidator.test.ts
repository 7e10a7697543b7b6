// The editor's full check of big configs in a worker thread (backgroundValidator.ts, validateWorker.ts), with
// the real worker entry run through tsx.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { BackgroundValidator } from '../../../src/core/config/backgroundValidator';
import { validateText } from '../../../src/core/config/validate';
import { EDITOR_LIBRARY_PARSE_LIMIT } from '../../../src/core/config/text';

// A worker thread cannot start a .ts file itself: a one-line .js entry loads the real one, with tsx's require hook
// in the worker's execArgv.
const WORKER = join(mkdtempSync(join(tmpdir(), 'rft-worker-')), 'worker.js');
writeFileSync(WORKER, `require(${JSON.stringify(join(__dirname, '../../../src/core/config/validateWorker.ts'))});\n`);
const TSX = join(__dirname, '../../../node_modules/tsx/dist/cjs/index.cjs');

/** An Axolotl config over the editor's full-parser limit that only the full parser reads (anchor + merge keys). */
function bigAnchored(plantNearEnd: boolean): string {
  const out = ['base_model: NousResearch/Llama-2-7b-hf', 'adapter: qlora', 'lora_r: 16', 'defaults: &ds', '  type: alpaca', '  split: train', 'datasets:'];
  for (let i = 0; out.join('\n').length < EDITOR_LIBRARY_PARSE_LIMIT + 20_000; i++) out.push(`  - path: org/dataset-${i}`, '    <<: *ds');
  if (plantNearEnd) out.push('  - path: 42', '    <<: *ds');
  return out.join('\n') + '\n';
}

test('a config over the editor limit that needs the full parser: the editor thread defers it, the worker finds the planted error near its end', async () => {
  const text = bigAnchored(true);
  const quick = validateText(text, { fileName: '/ws/axolotl.yml' });
  assert.equal(quick.deferred, true);
  assert.deepEqual(
    quick.diagnostics.map((d) => d.code),
    ['RFT004'],
  );
  const bg = new BackgroundValidator(WORKER, ['--require', TSX]);
  try {
    const full = await bg.check('doc', text, '/ws/axolotl.yml');
    assert.ok(full, 'answered');
    assert.equal(full.kind, 'axolotl');
    assert.equal(full.deferred, undefined);
    const planted = text.lastIndexOf('path: 42');
    assert.ok(
      full.diagnostics.some((d) => d.start >= planted && d.start < planted + 12),
      JSON.stringify(full.diagnostics),
    );
    assert.ok(!full.diagnostics.some((d) => d.code === 'RFT004'));
    // The same file without the planted error is clean: nothing else was reported.
    const clean = await bg.check('doc', bigAnchored(false), '/ws/axolotl.yml');
    assert.deepEqual(clean?.diagnostics, []);
  } finally {
    bg.dispose();
  }
});

test('the newest text wins: a check waiting behind a running one is answered undefined when newer text for the same document arrives', async () => {
  const bg = new BackgroundValidator(WORKER, ['--require', TSX]);
  try {
    const a = bg.check('doc', bigAnchored(false), '/ws/axolotl.yml'); // runs
    const b = bg.check('doc', bigAnchored(true), '/ws/axolotl.yml'); // waits
    const c = bg.check('doc', bigAnchored(false), '/ws/axolotl.yml'); // replaces b
    const other = bg.check('other', bigAnchored(true), '/ws/axolotl.yml'); // another document still gets its turn
    assert.ok(await a);
    assert.equal(await b, undefined);
    assert.deepEqual((await c)?.diagnostics, []);
    assert.ok((await other)?.diagnostics.length);
  } finally {
    bg.dispose();
  }
});

test('a worker that cannot run rejects the check (the editor then shows the "too large" warning), and a disposed validator answers undefined', async () => {
  const broken = new BackgroundValidator(join(__dirname, 'no-such-worker.js'));
  await assert.rejects(broken.check('doc', 'a: 1\n', '/ws/axolotl.yml'));
  broken.dispose();
  assert.equal(await broken.check('doc', 'a: 1\n', '/ws/axolotl.yml'), undefined);
});

test('a check that never ends is stopped after the time limit with its worker, and the next check gets a fresh worker', async () => {
  // A stand-in worker: spins for ever on the text "hang", answers an empty result otherwise.
  const hanging = join(mkdtempSync(join(tmpdir(), 'rft-worker-')), 'hang.js');
  writeFileSync(
    hanging,
    `const { parentPort } = require('node:worker_threads');
parentPort.on('message', (m) => { if (m.text === 'hang') for (;;) {} parentPort.postMessage({ id: m.id, result: { kind: undefined, diagnostics: [] } }); });\n`,
  );
  const bg = new BackgroundValidator(hanging, [], 500);
  try {
    const t0 = Date.now();
    await assert.rejects(bg.check('doc', 'hang', '/ws/axolotl.yml'), /longer than 1 s and was stopped/);
    assert.ok(Date.now() - t0 < 3000, `${Date.now() - t0} ms`);
    assert.deepEqual(await bg.check('doc', 'fine', '/ws/axolotl.yml'), { kind: undefined, diagnostics: [] });
  } finally {
    bg.dispose();
  }
});

test('the worker reads neighbouring files only inside the roots it is given', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-roots-'));
  writeFileSync(join(dir, 'ds_config.json'), '{"train_batch_size": 16}\n');
  const spec = `version: 1\nmodel:\n  id: org/m-7B\nmethod: qlora\ndata:\n  train: org/d\nlauncher:\n  type: accelerate\n  deepspeed: ../ds_config.json\ntarget:\n  provider: ssh\n  gpu: A100-80GB\n`;
  const bg = new BackgroundValidator(WORKER, ['--require', TSX]);
  try {
    const inside = await bg.check('a', spec, join(dir, 'sub', 'finetune.yaml'), [dir]);
    assert.ok(!inside!.diagnostics.some((d) => d.code === 'RFT814'), JSON.stringify(inside!.diagnostics));
    const outside = await bg.check('b', spec, join(dir, 'sub', 'finetune.yaml'), [join(dir, 'sub')]);
    assert.ok(
      outside!.diagnostics.some((d) => d.code === 'RFT814' && /outside the workspace/.test(d.message)),
      JSON.stringify(outside!.diagnostics),
    );
  } finally {
    bg.dispose();
  }
});
