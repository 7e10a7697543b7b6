// What Start Training's confirmation says about time and money, and what the record keeps of it: the run's
// length (steps, tokens, the GPU class's throughput, the estimator's model size), the person's own run of this
// case when there is one (issue 32.4), the offer's price with the billed wait for SSH, and the budget line.
import { runLength, RUNNER_DEFAULTS } from './runLength';
import type { RunLength } from './runLength';
import { launchCost } from './launchCost';
import { budgetLine } from './runBudget';
import { ownHostLine } from './specTimeCost';
import { estimateCaseOf, measuredMatch, withMeasuredThroughput } from './estimateVsActual';
import type { MeasuredMatch } from './estimateVsActual';
import { describeReadyWait, readyWait, specReadyTimeout } from '../../providers/readyWait';
import type { FitLine, RunPlan } from '../lifecycle/runPlan';
import type { RunSpec } from '../../config/runSpecDefaults';
import type { RunEstimated } from '../store/runMeasuredSchema';
import type { RunRecord } from '../store/runRecord';
import type { Offer, Provider } from '../../providers/provider';

/** Where a run can go, as the Start Training picker lists it. */
export type TargetChoice =
  | { readonly kind: 'ssh'; readonly host: string; readonly gpus?: readonly string[] }
  | { readonly kind: 'cloud'; readonly provider: Provider; readonly offer: Offer };

export interface StartEstimateInput {
  readonly plan: RunPlan;
  readonly runSpec: RunSpec;
  readonly gpus: readonly string[];
  readonly fits: readonly FitLine[];
  readonly choice: TargetChoice;
  readonly pastRuns: readonly RunRecord[];
  readonly countExamples: (absPath: string) => number | undefined;
}

export interface StartEstimate {
  /** Kept in the record, to be set against what the host measures. */
  readonly estimated?: RunEstimated;
  /** Price × hours (a cloud offer), or the own host's time line. */
  readonly priceLine: string;
  /** " Estimate from your own run: …." or ''. */
  readonly measuredLine: string;
  readonly budgetText?: string;
}

function lengthOn(x: StartEstimateInput, gpu: string, gpuCount: number, fit: FitLine | undefined, measured: MeasuredMatch | undefined): RunLength {
  return withMeasuredThroughput(
    runLength({
      spec: x.plan.typed,
      specDir: x.plan.workspaceDir,
      gpu,
      gpuCount,
      ...(fit?.estimate ? { params: fit.estimate.model.params, layers: fit.estimate.model.layers } : {}),
      countExamples: x.countExamples,
    }),
    measured,
  );
}

export function startEstimate(x: StartEstimateInput): StartEstimate {
  const { plan, choice, fits } = x;
  const runGpu = choice.kind === 'cloud' ? choice.offer.gpu : (x.gpus[0] ?? '');
  const runGpuCount = choice.kind === 'cloud' ? choice.offer.gpuCount : (plan.target.gpu_count ?? 1);
  const runCase = estimateCaseOf(plan.typed, runGpu, runGpuCount, RUNNER_DEFAULTS);
  const measured = runCase ? measuredMatch(x.pastRuns, runCase) : undefined;
  const runFit = fits.find((f) => f.gpu === runGpu) ?? fits[0];
  let estimated: RunEstimated | undefined = runCase ? { ...runCase, ...(runFit?.estimate ? { vramGib: runFit.estimate.estimate.totalGib } : {}) } : undefined;
  let priceLine: string;
  if (choice.kind === 'cloud') {
    const length = lengthOn(x, choice.offer.gpu, choice.offer.gpuCount, fits.find((f) => f.gpu === choice.offer.gpu) ?? fits[0], measured);
    // The wait for SSH bills and grows with the GPU count: in the total, and said with the limit that ends it.
    const ready = readyWait(choice.offer.provider, choice.offer.gpuCount, specReadyTimeout(plan.typed));
    const cost = launchCost(choice.offer, length, ready);
    if (estimated && length.known)
      estimated = { ...estimated, hours: length.hours, tokensPerSecond: length.tokensPerSecond, ...(cost.estimate ? { costUsd: cost.estimate.totalUsd } : {}) };
    priceLine = `${cost.text} ${describeReadyWait(ready, choice.offer.provider, choice.offer.gpuCount)} Teardown: ${plan.teardown.policy}.`;
  } else {
    // An own host has no offer, but the run's length still goes into the record, against the budget and into the
    // confirmation.
    const own = lengthOn(x, runGpu, runGpuCount, runFit, measured);
    priceLine = ownHostLine(own);
    if (estimated && own.known) estimated = { ...estimated, hours: own.hours, tokensPerSecond: own.tokensPerSecond };
  }
  const budgetText = budgetLine(x.runSpec, {
    ...(estimated?.costUsd !== undefined ? { costUsd: estimated.costUsd } : {}),
    ...(estimated?.hours !== undefined ? { hours: estimated.hours } : {}),
    ...(choice.kind === 'cloud' ? { pricePerHour: choice.offer.pricePerHour } : {}),
  });
  return {
    ...(estimated ? { estimated } : {}),
    priceLine,
    measuredLine: measured ? ` Estimate from your own run: ${measured.text}.` : '',
    ...(budgetText ? { budgetText } : {}),
  };
}
