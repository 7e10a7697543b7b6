// Issue 32.1/32.7, VRAM held out: the estimator's calibration is a procedure (src/core/gpu/vramFit.ts) whose
// leave-one-model-out error is reported beside the in-sample one (estimateAccuracy.json, the README block, the
// CodeLens band). A held-out prediction must come from a fit that never saw a case of its model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { VramCase } from '../../../src/core/gpu/vramFit';
import { crossValidateVram, fitVramCoefficients } from '../../../src/core/gpu/vramFit';
import { VRAM_BAND, vramBandText } from '../../../src/core/gpu/vramAccuracy';
import accuracy from '../../../src/core/gpu/estimateAccuracy.json';
import { leftOutVramCases, vramCases } from '../../../bench/gpu/throughputCases';
import { measuredFiles, parseVramFile, TOLERANCE } from '../../../bench/gpu/vramCheck';

const files = () => measuredFiles().map((p) => parseVramFile(readFileSync(p, 'utf8'), p));
const cases = (): VramCase[] => vramCases(files());

test("vram fit: every measured case of today's runner is read, with the estimator input of its own settings; the old runner's QLoRA cases are left out, saying why", () => {
  const all = cases();
  const left = leftOutVramCases(files());
  for (const c of left) console.log(`vram fit: left out ${c.case}: ${c.why}`);
  assert.ok(all.length >= 4, `${all.length} cases`);
  assert.ok(new Set(all.map((c) => c.model)).size >= 2);
  assert.ok(all.every((c) => c.measuredGib > 0 && c.case.startsWith('H200: ')));
  // The six QLoRA cases of 2026-11-26 ran peft's fp32 upcast (before commit 0bd2d1e); nothing else is left out.
  assert.deepEqual(
    left.map((c) => c.case.split('/')[1]),
    ['qlora', 'qlora', 'qlora', 'qlora', 'qlora', 'qlora'],
  );
  assert.ok(left.every((c) => /0bd2d1e/.test(c.why) && /prepare_model_for_kbit_training/.test(c.why)));
  assert.ok(!all.some((c) => c.input.method === 'qlora'));
  assert.equal(accuracy.vram.leftOut.length, left.length);
});

test('vram fit: each fold of the held-out procedure is fitted without any case of its held-out model', () => {
  const all = cases();
  const folds: VramCase[][] = [];
  const spy = (cs: readonly VramCase[]) => {
    folds.push([...cs]);
    return fitVramCoefficients(cs);
  };
  const cv = crossValidateVram(all, spy);
  const models = [...new Set(all.map((c) => c.model))];
  assert.equal(folds.length, 1 + models.length, 'one fit on everything, one per held-out model');
  assert.equal(folds[0]!.length, all.length);
  for (const model of models) {
    const fold = folds.find((f) => f.length === all.filter((c) => c.model !== model).length && !f.some((c) => c.model === model));
    assert.ok(fold, `no fold without ${model}`);
    assert.deepEqual(
      fold.map((c) => c.case),
      all.filter((c) => c.model !== model).map((c) => c.case),
    );
  }
  assert.equal(cv.cases.length, all.length);
});

test("vram fit: a held-out prediction does not move with its own model's measurements; the in-sample fit does", () => {
  const all = cases();
  for (const model of new Set(all.map((c) => c.model))) {
    const moved = all.map((c) => (c.model === model ? { ...c, measuredGib: c.measuredGib * 1.5 } : c));
    const a = crossValidateVram(all).cases;
    const b = crossValidateVram(moved).cases;
    for (let i = 0; i < a.length; i++) {
      if (a[i]!.model !== model) continue;
      assert.equal(b[i]!.heldOutGib, a[i]!.heldOutGib, `${a[i]!.case}: held-out estimate moved with its own measurement`);
      assert.notEqual(b[i]!.inSampleGib, a[i]!.inSampleGib, `${a[i]!.case}: the in-sample fit does see it`);
    }
  }
});

test('vram fit: deterministic, and the committed figures are what it gives (estimateAccuracy.json)', () => {
  const all = cases();
  assert.deepEqual(fitVramCoefficients(all), fitVramCoefficients(all));
  const cv = crossValidateVram(all);
  const held = Math.max(...cv.cases.map((c) => Math.abs(c.heldOutGib / c.measuredGib - 1)));
  assert.ok(Math.abs(accuracy.vram.fit.heldOutMaxAbs - held) < 1e-3, `${accuracy.vram.fit.heldOutMaxAbs} vs ${held}`);
});

test('vram fit: held out, every measured case is within the ±15% the estimate claims; the band says held out', () => {
  const cv = crossValidateVram(cases());
  const misses = cv.cases
    .filter((c) => Math.abs(c.heldOutGib / c.measuredGib - 1) > TOLERANCE)
    .map((c) => `${c.case}: ${((c.heldOutGib / c.measuredGib - 1) * 100).toFixed(1)}%`);
  assert.deepEqual(misses, []);
  assert.ok(VRAM_BAND >= accuracy.vram.fit.heldOutMaxAbs && VRAM_BAND >= accuracy.vram.inSampleMaxAbs);
  assert.match(vramBandText(), /^±\d+%: held out over \d+ models, \d+ H200 cases \(in sample ±\d+%\)$/);
  assert.equal(vramBandText().split(':')[0], `±${Math.ceil(VRAM_BAND * 100)}%`);
});
