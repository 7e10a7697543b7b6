// The VRAM estimate's band and basis, from its error on the measured cases (estimateAccuracy.json, written by
// scripts/gpu-accuracy.ts from bench/gpu/vram-*.json). Its coefficients were calibrated on those same cases, so the
// figure is an in-sample error and is called one: no held-out figure exists for it yet.
import accuracy from './estimateAccuracy.json';

/** Largest relative error on the measured cases (0.071 = 7.1%). */
export const VRAM_BAND = accuracy.vram.inSampleMaxAbs;

/** "±8%: calibrated on 10 H200 cases (in-sample error)". */
export function vramBandText(): string {
  const v = accuracy.vram;
  if (v.cases === 0) return 'no measured cases yet: formulas only';
  return `±${Math.ceil(v.inSampleMaxAbs * 100)}%: calibrated on ${v.cases} ${v.gpus.join(', ')} cases (in-sample error)`;
}
