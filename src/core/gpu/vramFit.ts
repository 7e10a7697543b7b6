// The VRAM estimate's calibration as a procedure: the coefficients of estimate.ts (VramCoefficients) fitted to
// measured peak reserved memory, and their leave-one-model-out error (every case predicted by a fit that never saw
// a case of its model). scripts/gpu-accuracy.ts runs it over bench/gpu/vram-*.json into estimateAccuracy.json.
// Neither the start nor the prior sees any measurement: both are the first-principles counts (four bf16 tensors of
// the MLP's width, 8·i; Korthikanti et al. 2022 eq. 1's 34·h for attention and norms; a 10% allocator cache), and
// the prior's weight is small (a factor e away from a count costs what a 10% miss on one case does), so the data
// decides wherever it can and the prior only holds a coefficient no remaining case constrains (a fold without
// checkpointed cases, say).
import type { Estimate, EstimateInput, VramCoefficients } from './estimate';
import { CUDA_CONTEXT_PART, estimateMemory } from './estimate';
import { leaveOneModelOut } from './leaveOneModelOut';
import { minimize } from './nelderMead';

export interface VramCase {
  readonly case: string;
  /** The model the case trained: leave-one-model-out holds out every case of one model together. */
  readonly model: string;
  readonly input: EstimateInput;
  /** torch's peak reserved memory, GiB. */
  readonly measuredGib: number;
}

const KEYS = [
  'mlpBytesPerIntermediate',
  'attentionBytesPerHidden',
  'cacheCheckpointed',
  'cacheUncheckpointed',
  'cacheLongLived',
] as const satisfies readonly (keyof VramCoefficients)[];

/** The first-principles counts: the fit's start and its prior. */
export const VRAM_PRIOR: VramCoefficients = {
  mlpBytesPerIntermediate: 8,
  attentionBytesPerHidden: 34,
  cacheCheckpointed: 0.1,
  cacheUncheckpointed: 0.1,
  cacheLongLived: 0.1,
};
const PRIOR_WEIGHT = 0.01;

/** The estimate's parts that torch's caching allocator does not hold (the CUDA context). */
export function allocatorOutside(e: Estimate): number {
  return e.parts.filter((p) => p.name === CUDA_CONTEXT_PART).reduce((sum, p) => sum + p.gib, 0);
}

/** What torch's peak reserved memory is held to: the estimate less the CUDA context. */
export function allocatorEstimateGib(input: EstimateInput, k?: VramCoefficients): number {
  const e = estimateMemory(input, k);
  return e.totalGib - allocatorOutside(e);
}

const fromLog = (p: readonly number[]): VramCoefficients => Object.fromEntries(KEYS.map((key, i) => [key, Math.exp(p[i]!)])) as unknown as VramCoefficients;

/** Least squares on log(estimate / measured) over the cases, plus the weak prior toward the counts. */
export function fitVramCoefficients(cases: readonly VramCase[]): VramCoefficients {
  if (cases.length === 0) throw new Error('no VRAM case to fit');
  const prior = KEYS.map((key) => Math.log(VRAM_PRIOR[key]));
  const loss = (p: readonly number[]): number => {
    const k = fromLog(p);
    const data = cases.reduce((s, c) => s + Math.log(allocatorEstimateGib(c.input, k) / c.measuredGib) ** 2, 0);
    return data + PRIOR_WEIGHT * p.reduce((s, v, i) => s + (v - prior[i]!) ** 2, 0);
  };
  return fromLog(minimize(loss, prior));
}

export interface VramCaseError {
  readonly case: string;
  readonly model: string;
  readonly measuredGib: number;
  /** The estimator as shipped (VRAM_COEFFICIENTS). */
  readonly shippedGib: number;
  /** The fit on every case. */
  readonly inSampleGib: number;
  /** The fit on the other models' cases only. */
  readonly heldOutGib: number;
}

/** The fit on every case, and each case's estimate as shipped, in sample and held out (leave-one-model-out). */
export function crossValidateVram(
  cases: readonly VramCase[],
  fit: (cases: readonly VramCase[]) => VramCoefficients = fitVramCoefficients,
): { readonly coefficients: VramCoefficients; readonly cases: VramCaseError[] } {
  const folds = leaveOneModelOut(cases, fit);
  const coefficients = folds.all;
  return {
    coefficients,
    cases: cases.map((c) => ({
      case: c.case,
      model: c.model,
      measuredGib: c.measuredGib,
      shippedGib: allocatorEstimateGib(c.input),
      inSampleGib: allocatorEstimateGib(c.input, coefficients),
      heldOutGib: allocatorEstimateGib(c.input, folds.without(c.model)),
    })),
  };
}
