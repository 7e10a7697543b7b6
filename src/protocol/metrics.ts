// Training metrics panel messages. Any number of runs share one set of charts, each run a series keyed by
// a string the host chooses: the run the panel follows, runs of this extension added to compare, W&B runs.
import type { ActionMessage, EmptyStateMessage, ReadyMessage } from './common';

/** The curves the panel always charts; anything else a run logs is listed by name. */
export const METRIC_KEYS = ['loss', 'eval_loss', 'learning_rate', 'grad_norm', 'tokens_per_second'] as const;
export type MetricKey = (typeof METRIC_KEYS)[number];
/** Curves charted once a run logs them: the reward margin and accuracy TRL's DPO and ORPO trainers log
 *  (the runner's metrics events carry them in `extra`; W&B has them as train/rewards/…). */
export const PREFERENCE_METRIC_KEYS = ['rewards/margins', 'rewards/accuracies'] as const;
export type ChartKey = MetricKey | (typeof PREFERENCE_METRIC_KEYS)[number];
/** Every curve that has a chart: the metrics events' own fields, then the preference ones. */
export const CHART_KEYS: readonly ChartKey[] = [...METRIC_KEYS, ...PREFERENCE_METRIC_KEYS];

/** The key of the run the panel follows (its events.jsonl); compared runs have keys of their own. */
export const PRIMARY_RUN = 'primary';

export interface MetricPoint {
  readonly step: number;
  /** Curve values and other named numbers logged at this step. */
  readonly values: Readonly<Record<string, number>>;
}

export interface RunSeriesInfo {
  /** PRIMARY_RUN, `wandb:<entity>/<project>/<run id>` or `run:<id>` for a run of this extension. */
  readonly key: string;
  readonly source: 'events' | 'wandb';
  /** Display name: a run name, possibly chosen by whoever started the run; rendered as text. */
  readonly name: string;
  readonly state: string;
  /** True when the host can open a run page for it (W&B); the URL itself stays with the host. */
  readonly hasPage?: boolean;
}

export interface MetricsRunMessage {
  readonly type: 'run';
  readonly info: RunSeriesInfo;
  /** True: replace what the run shows; false: append. */
  readonly reset: boolean;
  readonly points: readonly MetricPoint[];
}

export interface MetricsErrorMessage {
  readonly type: 'error';
  /** The run the error is about; absent for a comparison that never loaded. */
  readonly key?: string;
  readonly message: string;
}

export interface MetricsRemoveRunMessage {
  readonly type: 'removeRun';
  readonly key: string;
}

/**
 * How far the followed run is, in words the host made from its record (runProgress.ts): while it trains "step N
 * of M, ≈ T left" and for a cloud run the cost so far; once it ended, its estimate against what happened. Empty:
 * nothing to say (a local events.jsonl, no step yet). Rendered as text.
 */
export interface MetricsProgressMessage {
  readonly type: 'progress';
  readonly lines: readonly string[];
}

/** The followed run's host, in words the host made: why the charts stopped (unreachable, reconnecting); '' when live. */
export interface MetricsHostStateMessage {
  readonly type: 'hostState';
  readonly text: string;
}

export type MetricsToWebview =
  EmptyStateMessage | MetricsRunMessage | MetricsErrorMessage | MetricsRemoveRunMessage | MetricsProgressMessage | MetricsHostStateMessage;

export interface WandbRunRef {
  readonly entity: string;
  readonly project: string;
  readonly runId: string;
}

export function wandbKey(ref: WandbRunRef): string {
  return `wandb:${ref.entity}/${ref.project}/${ref.runId}`;
}

export interface LoadWandbMessage {
  readonly type: 'loadWandb';
  readonly run: WandbRunRef;
}

/** Asks the host to pick a run of this extension (or an events.jsonl) to overlay. */
export interface CompareRunMessage {
  readonly type: 'compareRun';
}

/** The person took a compared run off the charts. */
export interface DropRunMessage {
  readonly type: 'dropRun';
  readonly key: string;
}

export interface OpenRunPageMessage {
  readonly type: 'openRunPage';
  readonly key: string;
}

export type MetricsFromWebview = ReadyMessage | ActionMessage | LoadWandbMessage | CompareRunMessage | DropRunMessage | OpenRunPageMessage;

export interface MetricsViewState {
  /** W&B runs on the charts, asked for again after a reload (the host keeps nothing across one). */
  readonly wandb: readonly WandbRunRef[];
  /** EMA weight as in TensorBoard's smoothing slider: 0 draws raw values, 0.99 the smoothest. */
  readonly smoothing: number;
}
