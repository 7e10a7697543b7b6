// Issue 18.6: the VRAM breakdown reads as a table, with MB for the parts under 1 GB.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { validateText } from '../../../src/core/config/validate';
import { nodeFiles } from '../../../src/core/config/nodeFiles';
import { breakdownLines, breakdownMarkdown, formatSize } from '../../../src/core/config/estimateBreakdown';

test('formatSize: MB under 1 GB, GB from 1 GB up', () => {
  assert.equal(formatSize(0.15), '154 MB');
  assert.equal(formatSize(0.004), '4.1 MB');
  assert.equal(formatSize(0.999), '1023 MB');
  assert.equal(formatSize(1), '1.0 GB');
  assert.equal(formatSize(14.07), '14.1 GB');
  assert.equal(formatSize(137.2), '137 GB');
});

test('breakdown of the T4 QLoRA example: every part, small ones in MB, the total, and the GPU', () => {
  const file = join(__dirname, '../../../examples/t4-qlora/finetune.yaml');
  const e = validateText(readFileSync(file, 'utf8'), { fileName: file, files: nodeFiles }).estimate;
  assert.ok(e);
  const md = breakdownMarkdown(e, 'finetune.yaml');
  assert.match(md, /^# GPU memory estimate: finetune\.yaml\n/);
  assert.match(md, /\| Part \| Memory \| How it is estimated \|/);
  for (const p of e.estimate.parts) assert.ok(md.includes(p.gib < 1 ? ' MB |' : ' GB |'), p.name);
  const adapter = e.estimate.parts.find((p) => p.name.startsWith('LoRA adapters'))!;
  assert.ok(adapter.gib < 1, 'the adapter is a small part');
  assert.match(md, new RegExp(`\\| LoRA adapters \\\\\\(r=\\d+\\\\\\) \\| \\d+(\\.\\d)? MB \\|`));
  assert.match(md, /\| \*\*Total\*\* \| \*\*\d+\.\d GB\*\* \| of 16 GB on T4 \|/);
  assert.ok(breakdownLines(e).some((l) => /^LoRA adapters \(r=\d+\): \d+(\.\d)? MB — /.test(l)));
});

test('breakdown: workspace text (a model id with markdown) is escaped, not rendered', () => {
  const text =
    'version: 1\nmodel:\n  id: "[x](http://evil)/Llama-7B"\n  params_b: 7\nmethod: qlora\ndata:\n  train: a/b\ntarget:\n  provider: ssh\n  gpu: T4\n';
  const e = validateText(text, { fileName: 'finetune.yaml' }).estimate!;
  const md = breakdownMarkdown(e, '[a](b).yaml');
  assert.ok(!md.includes('[a](b)'), md);
  assert.ok(md.includes('\\[a\\]\\(b\\)'));
});
