// The VRAM estimate's band and basis (estimateAccuracy.json, written by scripts/gpu-accuracy.ts from
// bench/gpu/vram-*.json). The band is the larger of the shipped coefficients' in-sample error and the held-out error
// of the calibration procedure (vramFit.ts: each model's cases predicted by a fit that never saw that model), so it
// never claims an in-sample figure as accuracy.
import accuracy from './estimateAccuracy.json';

const v = accuracy.vram;

/** The band as a fraction (0.11 = ±11%): the held-out error, or the in-sample one where that is larger. */
export const VRAM_BAND = Math.max(v.inSampleMaxAbs, v.fit.heldOutMaxAbs);

/** "±11%: held out over 3 models, 10 H200 cases (in sample ±8%)". */
export function vramBandText(): string {
  if (v.cases === 0) return 'no measured cases yet: formulas only';
  return `±${Math.ceil(VRAM_BAND * 100)}%: held out over ${v.models} models, ${v.cases} ${v.gpus.join(', ')} cases (in sample ±${Math.ceil(v.inSampleMaxAbs * 100)}%)`;
}
