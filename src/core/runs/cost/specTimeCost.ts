// Time and money for a run spec's target before anything starts, in the editor (CodeLens and the hover on
// `target`): the same run length (runLength.ts, with the user's own measured throughput when there is one) and
// the same money line (launchCost.ts) the Start confirmation shows, priced from the spec's provider's own catalog
// (providerMachines.ts); an own host costs nothing from here and says how long.
import type { RunSpecEstimate } from '../../config/runSpecEstimate';
import type { LooseRunSpec } from '../../config/runSpecDefaults';
import { cheapestMachine, providerMachines, provisionedProvider } from '../../config/rules/providerMachines';
import type { ProviderMachine } from '../../config/rules/providerMachines';
import { formatUsd } from '../../providers/cost';
import { readyWait, specReadyTimeout } from '../../providers/readyWait';
import type { RunRecord } from '../store/runRecord';
import { measuredForSpec, withMeasuredThroughput } from './estimateVsActual';
import { launchCost } from './launchCost';
import { runLength } from './runLength';
import type { RunLength } from './runLength';

export interface SpecTimeCost {
  /** Short, for the CodeLens after the memory: "≈ 2h 10m · ≈ $8.40 on gcp a2-highgpu-1g". */
  readonly lens: string;
  /** Markdown-free sentences for the hover: the rate, the total with its band and basis, the training basis. */
  readonly detail: string;
}

export interface SpecTimeCostInput {
  /** The fields of the editor's spec the schema accepts. */
  readonly spec: LooseRunSpec;
  /** The spec's folder: data.train resolves there (as the Start confirmation does). */
  readonly specDir: string;
  readonly estimate: RunSpecEstimate;
  readonly countExamples: (absPath: string) => number | undefined;
  readonly history?: readonly RunRecord[];
}

/** "≈ 40 min", "≈ 2h 10m": an estimate's length without false precision. */
export function roughDuration(hours: number): string {
  const min = Math.max(1, Math.round(hours * 60));
  return min < 60 ? `≈ ${min} min` : `≈ ${Math.floor(min / 60)}h ${String(min % 60).padStart(2, '0')}m`;
}

/** The Start confirmation's money line for an own host: nothing billed here, and how long, when that can be known. */
export function ownHostLine(length: RunLength | undefined): string {
  const free = 'Your own host: no cloud charges from this extension.';
  return length ? `${free} ${trainingLine(length)}` : free;
}

/** "Training ≈ 40 min: <basis>." or why there is no time. */
function trainingLine(length: RunLength): string {
  return length.known ? `Training ${roughDuration(length.hours)}: ${length.basis}.` : `No time estimate: ${length.reason}.`;
}

/** The machine the spec names (target.instance_type, when it holds the GPU), else the provider's cheapest for it. */
function machineFor(provider: 'lambda' | 'ec2' | 'gcp', e: RunSpecEstimate, count: number, instanceType: string | undefined): ProviderMachine | undefined {
  const named = instanceType ? providerMachines(provider).find((m) => m.instanceType === instanceType) : undefined;
  if (named && named.gpu === e.gpu.id && named.perHour > 0) return named;
  const m = cheapestMachine(provider, e.gpu.id, count);
  return m && m.perHour > 0 ? m : undefined;
}

export function specTimeCost(x: SpecTimeCostInput): SpecTimeCost {
  const target = x.spec.target ?? {};
  const e = x.estimate;
  const count = e.input.gpuCount;
  const length: RunLength = withMeasuredThroughput(
    runLength({
      spec: x.spec,
      specDir: x.specDir,
      gpu: e.gpu.id,
      gpuCount: count,
      params: e.model.params,
      layers: e.model.layers,
      countExamples: x.countExamples,
    }),
    measuredForSpec(x.spec, e.gpu.id, x.history ?? []),
  );
  const time = length.known ? roughDuration(length.hours) : undefined;
  const training = trainingLine(length);
  const provider = provisionedProvider(target.provider);
  if (!provider) return { lens: time ? `own host: no charge, ${time}` : 'own host: no charge', detail: training };
  const gpus = `${count > 1 ? `${count}× ` : ''}${e.gpu.id}`;
  const machine = machineFor(provider, e, count, target.instance_type);
  if (!machine)
    return { lens: time ?? `no ${provider} price for ${gpus}`, detail: `${provider} sells no ${gpus} machine in the project's catalog: no price. ${training}` };
  const cost = launchCost(
    {
      provider,
      pricePerHour: machine.perHour,
      spot: false,
      instanceType: machine.instanceType,
      priceSource: `${provider}'s on-demand list price from the project's catalog; Start asks ${provider} for today's`,
    },
    length,
    readyWait(provider, count, specReadyTimeout(x.spec)),
  );
  const where = `on ${provider} ${machine.instanceType}`;
  const lens = cost.estimate && time ? `${time} · ≈ ${formatUsd(cost.estimate.totalUsd)} ${where}` : `${formatUsd(machine.perHour)}/h ${where}`;
  return { lens, detail: cost.text };
}
