// The spec's `budget` against the estimate (issue 32.6): the host stops the run at 100% of budget.max_usd or
// budget.max_hours, so a plan whose estimate is already past it would stop before it finishes. RFT822 says
// so before anything is billed, with the figures; RFT823 marks a dollar limit the host cannot count (an own
// SSH host without budget.price_per_hour: only max_hours is enforced there).
import { nodeAt, scalarAt } from '../ast';
import type { DocNode } from '../ast';
import { toValue } from '../parse';
import type { ConfigDiagnostic, FileAccess } from '../types';
import { textOf } from '../types';
import type { RunSpecEstimate } from '../runSpecEstimate';
import { estimateRunCost, formatUsd } from '../../providers/cost';
import { readyWait, specReadyTimeout, SETUP_HOURS } from '../../providers/readyWait';
import { runSpecThroughput } from '../runSpecThroughput';
import { RUNNER_DEFAULTS } from '../runnerDefaults';
import { dirName, join } from '../../pathText';

const CLOUDS = ['lambda', 'ec2', 'gcp'] as const;
type Cloud = (typeof CLOUDS)[number];

const range = (n: { start: number; end: number }): { start: number; end: number } => ({ start: n.start, end: Math.max(n.end, n.start + 1) });

function positive(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : undefined;
}

/** Examples in a JSON Lines file read through the validator's bounded file access; other forms are not counted. */
function jsonlCounter(files: FileAccess | undefined): (abs: string) => number | undefined {
  return (abs) => {
    if (!files || !/\.jsonl$/i.test(abs)) return undefined;
    const text = textOf(files.read(abs));
    return text === undefined ? undefined : text.split('\n').filter((l) => l.trim()).length;
  };
}

/**
 * Training hours as the Start estimate counts them (core/runs/cost/runLength.ts, which config may not import): optimizer
 * steps (trainer.max_steps, or the local JSON Lines file's examples × epochs ÷ the global batch) × tokens per step ÷
 * the throughput of the estimate's own shape (runSpecThroughput.ts). Unknown without a step count.
 */
function trainingLength(
  root: DocNode,
  fileName: string,
  files: FileAccess | undefined,
  e: RunSpecEstimate,
): { readonly hours: number; readonly basis: string } | undefined {
  const x = e.input;
  const perStep = x.batch * e.accumulation * x.gpuCount;
  let steps = positive(scalarAt(root, ['trainer', 'max_steps']));
  let stepsBasis = `trainer.max_steps ${steps}`;
  if (steps === undefined) {
    const train = scalarAt(root, ['data', 'train']);
    const examples = typeof train === 'string' ? jsonlCounter(files)(train.startsWith('/') ? train : join(dirName(fileName), train)) : undefined;
    if (examples === undefined) return undefined;
    const epochs = positive(scalarAt(root, ['trainer', 'epochs'])) ?? RUNNER_DEFAULTS.epochs;
    // HF Trainer: batches per epoch on each process, then optimizer steps per epoch after accumulation.
    steps = Math.ceil(Math.ceil(Math.ceil(examples / (x.batch * x.gpuCount)) / e.accumulation) * epochs);
    stepsBasis = `${examples} examples × ${epochs} epochs`;
  }
  const t = runSpecThroughput(e);
  const tokens = steps * perStep * x.seqLen;
  return {
    hours: tokens / t.tokensPerSecond / 3600,
    basis: `${steps} steps (${stepsBasis}) × ${perStep * x.seqLen} tokens at ~${Math.round(t.tokensPerSecond)} tokens/s (${t.basis})`,
  };
}

export function checkBudget(root: DocNode, fileName: string, files: FileAccess | undefined, estimate: RunSpecEstimate | undefined): ConfigDiagnostic[] {
  const budget = nodeAt(root, ['budget']);
  if (!budget) return [];
  const out: ConfigDiagnostic[] = [];
  const maxUsd = positive(scalarAt(root, ['budget', 'max_usd']));
  const maxHours = positive(scalarAt(root, ['budget', 'max_hours']));
  const givenPrice = positive(scalarAt(root, ['budget', 'price_per_hour']));
  const provider = scalarAt(root, ['target', 'provider']);
  const cloud = CLOUDS.includes(provider as Cloud) ? (provider as Cloud) : undefined;
  if (maxUsd !== undefined && !cloud && givenPrice === undefined) {
    out.push({
      ...range(nodeAt(root, ['budget', 'max_usd'])!),
      severity: 'warning',
      code: 'RFT823',
      message: `budget.max_usd cannot be counted on ${provider === 'local' ? 'this machine' : 'your own SSH host'}: nothing knows its price. Add budget.price_per_hour (what the host costs you per hour), or use budget.max_hours.`,
    });
  }
  if ((maxUsd === undefined && maxHours === undefined) || !estimate) return out;
  const spec = toValue(root) as Record<string, unknown>;
  const gpuCount = positive(scalarAt(root, ['target', 'gpu_count'])) ?? 1;
  const length = trainingLength(root, fileName, files, estimate);
  if (!length) return out;
  // The wait for SSH and the setup bill as training does; the host counts them against the budget too.
  const ready = cloud ? readyWait(cloud, gpuCount, specReadyTimeout(spec)) : undefined;
  const overhead = ready ? ready.typicalMinutes / 60 + SETUP_HOURS : 0;
  const hours = length.hours + overhead;
  const over: string[] = [];
  if (maxHours !== undefined && hours > maxHours)
    over.push(
      `about ${hours.toFixed(2)} h (${length.hours.toFixed(2)} h training + ${overhead.toFixed(2)} h to ready and setup) is more than budget.max_hours ${maxHours}`,
    );
  // An offer's exact price is known only at Start; here the catalog's indicative price per GPU-hour.
  const price = givenPrice ?? (cloud ? estimate.gpu.pricePerHourUsd * gpuCount : undefined);
  if (maxUsd !== undefined && price !== undefined) {
    const cost = estimateRunCost({ provider: cloud ?? 'ssh', pricePerHour: price, spot: false }, length.hours, overhead);
    if (cost.totalUsd > maxUsd)
      over.push(
        `about ${formatUsd(cost.totalUsd)} (${cost.basis}${givenPrice === undefined ? `, ${estimate.gpu.id} list price` : ''}) is more than budget.max_usd ${formatUsd(maxUsd)}`,
      );
  }
  if (over.length)
    out.push({
      ...range(nodeAt(root, ['budget', 'max_usd']) ?? nodeAt(root, ['budget', 'max_hours']) ?? budget),
      severity: 'warning',
      code: 'RFT822',
      message: `The estimate exceeds the budget: ${over.join('; ')}. The host stops training at 100% (after saving a checkpoint), so this run would end early. Training: ${length.basis}.`,
    });
  return out;
}
