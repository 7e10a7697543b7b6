// Issue 34 item 2: the README's trainer-speed table is what bench/gpu/throughput-<gpu>-<date>.json (issue 34's) give,
// never hand-typed; the parser refuses a file that is not issue 34's or that timed fewer than 20 steps after 5 warm-ups.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ANCHOR_README_END, ANCHOR_README_START, anchorFiles, parseAnchorFile, renderAnchorTable } from '../../../bench/gpu/anchorThroughput';
import { ROOT } from '../../../bench/gpu/vramCheck';

// SYNTHETIC (not a measurement): the shape bench/gpu/throughput.py writes, with made-up figures.
const synthetic = {
  kind: 'gpu-throughput',
  issue: 34,
  dry_run: true,
  gpu: 'cpu-dry-run',
  date: '2026-11-27',
  warmup_steps: 5,
  timed_steps: 20,
  host: { driver_version: null },
  pass: false,
  anchors: [
    {
      anchor: 'dry-unsloth-recipe-shape',
      model: 'tiny-llama',
      method: 'qlora',
      seq_len: 64,
      batch: 2,
      gradient_accumulation: 2,
      lora_r: 32,
      source: 'https://github.com/unslothai/unsloth',
      cases: [
        { variant: 'builtin-default', status: 'ok', timed_tokens_per_second: 1000, cuda_max_memory_reserved_mib: 2048 },
        { variant: 'builtin-fast', status: 'ok', timed_tokens_per_second: 1200, cuda_max_memory_reserved_mib: 2048 },
        { variant: 'trl-sft', status: 'ok', timed_tokens_per_second: 1000, cuda_max_memory_reserved_mib: 3072 },
        { variant: 'unsloth', status: 'not-run', why: 'not installable offline' },
      ],
      verdict: {
        pass: false,
        checks: {
          fast_vs_unsloth_tokens: { value: null, goal: '>= 1.0', pass: null },
          fast_vs_unsloth_memory: { value: null, goal: '<= 1.1', pass: null },
          fast_vs_hf_baseline_tokens: { value: 1.2, goal: '>= 1.5', pass: false },
        },
      },
    },
  ],
};

test('anchor table: a row per recipe with each variant, the ratios against their goals and the verdict', () => {
  const table = renderAnchorTable([parseAnchorFile(JSON.stringify(synthetic), 'synthetic.json')]);
  const row = table.split('\n').find((l) => l.includes('tiny-llama'));
  assert.ok(row, table);
  assert.match(row, /1000 tok\/s, 2\.0 GiB \| 1200 tok\/s, 2\.0 GiB \| 1000 tok\/s, 3\.0 GiB \| not-run: not installable offline/);
  assert.match(row, /\| n\/a \| n\/a \| 1\.20 \(goal >= 1\.5: fail\) \| fail \|$/);
  assert.match(table, /20 timed steps after 5 warm-up steps/);
});

test('anchor table: issue 33 files and short timed windows are refused', () => {
  assert.throws(() => parseAnchorFile(JSON.stringify({ ...synthetic, issue: 33 }), 'x.json'), /not an issue-34 throughput file: issue/);
  assert.throws(() => parseAnchorFile(JSON.stringify({ ...synthetic, timed_steps: 8 }), 'x.json'), /timed_steps/);
});

test('anchor table: the README block is what the committed files give', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const a = readme.indexOf(ANCHOR_README_START);
  const b = readme.indexOf(ANCHOR_README_END);
  assert.ok(a >= 0 && b > a, 'README.md has the gpu-anchor-throughput markers');
  const files = anchorFiles().map((p) => parseAnchorFile(readFileSync(p, 'utf8'), p));
  assert.equal(readme.slice(a + ANCHOR_README_START.length, b).trim(), renderAnchorTable(files).trim(), 'run npm run bench:gpu-anchors -- --write-readme');
});
