// Issue 32.7: every estimate shown (the CodeLens and its breakdown, the Start confirmation's cost, the CLI) carries
// its band and its basis, never a bare number: the VRAM with its held-out error on the measured cases (in-sample beside it), the
// throughput, run length and cost with the throughput model's held-out error and what it was fitted on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { main } from '../../../src/cli/main';
import type { CliIo } from '../../../src/cli/command';
import { parseConfigText } from '../../../src/core/config/parse';
import { estimateLabel, estimateRunSpec } from '../../../src/core/config/runSpecEstimate';
import { breakdownMarkdown } from '../../../src/core/config/estimateBreakdown';
import { runLength } from '../../../src/core/runs/cost/runLength';
import { launchCost } from '../../../src/core/runs/cost/launchCost';

const root = resolve(__dirname, '../../..');
const VRAM_BASIS = /±\d+%: held out over \d+ models, \d+ H200 cases \(in sample ±\d+%\)/;
const TPUT_BASIS =
  /±\d+%\S*:? .*fitted on \d+ (measured H200 cases|published A100-80GB figures \([^)]+\)) \(\d+ models\), held-out error ≤ \d+% \(in-sample ≤ \d+%\)/;
const SPEC =
  'version: 1\nmodel:\n  id: mistralai/Mistral-7B-v0.1\nmethod: qlora\ndata:\n  train: a/b\n  max_seq_length: 1024\ntarget:\n  provider: ssh\n  gpu: A100-40GB\n';

function capture(): { io: CliIo; out: string[] } {
  const out: string[] = [];
  return { io: { stdout: (t) => out.push(t), stderr: () => undefined, cwd: root }, out };
}

test('basis: the CodeLens label and the breakdown carry the VRAM band and the throughput band with what each rests on', () => {
  const e = estimateRunSpec(parseConfigText(SPEC, 'yaml').root, 'finetune.yaml', undefined)!;
  assert.match(estimateLabel(e), VRAM_BASIS);
  // The markdown escapes what came from the workspace and the bases' parentheses; read it as shown.
  const md = breakdownMarkdown(e, 'finetune.yaml').replace(/\\(.)/g, '$1');
  assert.match(md, VRAM_BASIS);
  assert.match(md, /Training throughput: ~[\d,]+ tokens\/s \([\d,]+–[\d,]+, ±\d+%\)/);
  assert.match(md, /A100-40GB scaled from A100-80GB by its datasheet peak, not measured on it/);
});

test('basis: the Start confirmation gives the cost as a range with the throughput basis', () => {
  const length = runLength({
    spec: { version: 1, method: 'qlora', data: { train: 'x', max_seq_length: 1024 }, trainer: { max_steps: 500 } },
    specDir: '/w',
    gpu: 'H200',
    gpuCount: 1,
    params: 7.24e9,
    layers: 32,
    countExamples: () => undefined,
  });
  assert.ok(length.known);
  const text = launchCost({ provider: 'lambda', pricePerHour: 3.79, spot: false, instanceType: 'gpu_1x_h200' }, length).text;
  assert.match(text, /about \$\d+\.\d\d for this run \(\$\d+\.\d\d–\$\d+\.\d\d\)/);
  assert.match(text, TPUT_BASIS);
  assert.doesNotMatch(text, /scaled by its datasheet peak/, 'the H200 is the GPU it was measured on');
});

test('basis: the CLI estimate prints both bands and bases, in text and in JSON', async () => {
  const t = capture();
  await main(['estimate', 'examples/t4-qlora/finetune.yaml', '--gpu', 'A100-40GB'], t.io);
  const text = t.out.join('');
  assert.match(text, VRAM_BASIS);
  assert.match(text, /throughput: ~[\d,]+ tokens\/s \([\d,]+–[\d,]+, ±\d+%\): /);
  assert.match(text, TPUT_BASIS);
  const j = capture();
  await main(['estimate', 'examples/t4-qlora/finetune.yaml', '--gpu', 'A100-40GB', '--format', 'json'], j.io);
  const out = JSON.parse(j.out.join('')) as {
    band: number;
    basis: string;
    throughput: { tokensPerSecond: number; low: number; high: number; band: number; basis: string };
  };
  assert.ok(out.band > 0 && out.band < 1);
  assert.match(out.basis, VRAM_BASIS);
  assert.ok(out.throughput.low < out.throughput.tokensPerSecond && out.throughput.tokensPerSecond < out.throughput.high);
  assert.match(out.throughput.basis, /fitted on \d+ published A100-80GB figures/);
});

test('basis: the does-not-fit diagnostic (RFT901) gives the estimate with its band', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-basis-'));
  const file = join(dir, 'finetune.yaml');
  writeFileSync(file, SPEC.replace('gpu: A100-40GB', 'gpu: T4').replace('method: qlora', 'method: full'));
  const c = capture();
  await main(['validate', file, '--format', 'json'], c.io);
  const d = (JSON.parse(c.out.join('')) as { code: string; message: string }[]).find((x) => x.code === 'RFT901');
  assert.ok(d, c.out.join(''));
  assert.match(d.message, /Estimated peak memory ≈ \d+(\.\d)? GB \(±\d+%: held out over \d+ models, \d+ H200 cases \(in sample ±\d+%\)\) does not fit/);
});
