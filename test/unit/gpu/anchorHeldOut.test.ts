// Issue 32 after the runner's QLoRA fix (commit 0bd2d1e): the GPU benchmark's plain TRL SFT case
// (bench/gpu/throughput-nvidia-h200-2026-11-28.json: Llama 3.1 8B QLoRA r 32, batch 2 × 2048, checkpointing, sdpa)
// prepares the 4-bit base as the runner now does, and no fit reads it: a held-out check of the VRAM estimate and of
// the throughput model. TRL casts its adapters to bf16; the runner keeps peft's fp32, so the estimator's own
// difference for fp32 adapters, gradients and states is added to the measurement (bench/gpu/anchorHeldOut.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import accuracy from '../../../src/core/gpu/estimateAccuracy.json';
import { THROUGHPUT_FIT } from '../../../src/core/gpu/throughput';
import { anchorThroughputChecks, anchorVramChecks, committedAnchors } from '../../../bench/gpu/anchorHeldOut';
import { TOLERANCE } from '../../../bench/gpu/vramCheck';

const CASE = 'H200: unsloth-llama-3.1-8b-qlora (trl-sft, 2026-11-28)';

test("vram held out: the runner's QLoRA recipe is within ±15% of plain TRL SFT's measured peak reserved plus the fp32-adapter difference", () => {
  const checks = anchorVramChecks(committedAnchors());
  const c = checks.find((x) => x.case === CASE);
  assert.ok(c, `no TRL SFT case in bench/gpu/throughput-*.json: ${checks.map((x) => x.case).join(', ')}`);
  assert.equal(Math.round(c.measuredGib * 1024), 8482);
  const expected = c.measuredGib + c.adapterDeltaGib;
  const error = c.estimateGib / expected - 1;
  console.log(
    `vram held out: ${CASE}: estimate ${c.estimateGib.toFixed(2)} GiB, measured ${c.measuredGib.toFixed(2)} + ${c.adapterDeltaGib.toFixed(2)} GiB (${(error * 100).toFixed(1)}%)`,
  );
  assert.ok(
    Math.abs(error) <= TOLERANCE,
    `estimate ${c.estimateGib.toFixed(2)} GiB against ${expected.toFixed(2)} GiB (${(c.measuredGib * 1024).toFixed(0)} MiB measured + ${(c.adapterDeltaGib * 1024).toFixed(0)} MiB for fp32 adapters): ${(error * 100).toFixed(1)}%, outside ±${TOLERANCE * 100}%`,
  );
  // 84M adapter parameters (r 32 on every linear layer of 32 layers) at 2 B more for the weight and for the gradient;
  // the 8-bit optimizer's states are 2 B either way.
  assert.ok(c.adapterDeltaGib > 0.3 && c.adapterDeltaGib < 0.4, `fp32 over bf16 adapters: ${c.adapterDeltaGib} GiB`);
  // The committed report (and so the README) carries the same figures.
  assert.deepEqual(accuracy.vram.anchors, JSON.parse(JSON.stringify(checks)));
});

test('throughput held out: the TRL SFT case is predicted by the committed fit, which never read it, and reported with its error', () => {
  const h200 = accuracy.throughput.gpus.H200;
  assert.ok(!h200.sources.some((s) => /throughput-/.test(s)), `the H200 fit read ${h200.sources.join(', ')}`);
  const checks = anchorThroughputChecks(committedAnchors(), THROUGHPUT_FIT);
  const c = checks.find((x) => x.case === CASE);
  assert.ok(c, 'no TRL SFT throughput case');
  assert.equal(c.measured, 6559.9);
  console.log(
    `throughput held out: ${CASE}: predicted ${Math.round(c.heldOut)} tokens/s, measured ${Math.round(c.measured)} (${((c.heldOut / c.measured - 1) * 100).toFixed(1)}%)`,
  );
  assert.deepEqual(accuracy.throughput.anchors, JSON.parse(JSON.stringify(checks)));
});
