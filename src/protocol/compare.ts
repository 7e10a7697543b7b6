// "Fine-Tune: Compare Runs" messages: the host sends the whole comparison (CompareModel, defined here once and
// built by core/runs/view/runCompare.ts, which imports these types); the page asks to open a run's W&B page or one of
// its history files. Every string in a comparison came from a run (its spec, its host, its trainer) and is
// rendered as text.
import type { ReadyMessage } from './common';

/** One config key across the compared runs. */
export interface ConfigDiffRow {
  readonly section: 'spec' | 'trainingArgs';
  /** Dotted path of the setting: `lora.r`, `data.files[0].path`. */
  readonly key: string;
  /** Each run's value as JSON text, in the order of `runs`; null where that run has no such key (or no such file). */
  readonly values: ReadonlyArray<string | null>;
  readonly differs: boolean;
}

export interface CompareGit {
  readonly repo: boolean;
  readonly commit?: string;
  readonly branch?: string;
  readonly dirty?: boolean;
  readonly untracked: number;
  readonly note?: string;
}

export interface CompareRunColumn {
  /** The run id: what the page sends back to name a run. */
  readonly key: string;
  readonly name: string;
  readonly status: string;
  readonly createdAt: string;
  readonly duration?: string;
  readonly durationMs?: number;
  readonly costUsd?: number;
  readonly host?: string;
  readonly gpu?: string;
  readonly provider: string;
  readonly git: CompareGit | undefined;
  readonly wandbRunId?: string;
  /** True when the host can open the run's W&B page (an https URL it keeps; the URL itself stays with the host). */
  readonly hasWandbPage: boolean;
  /** History files present in the run's local folder. */
  readonly files: readonly string[];
}

export interface CompareCurve {
  readonly run: string;
  readonly metric: 'loss' | 'eval_loss';
  readonly steps: readonly number[];
  readonly values: readonly number[];
}

export interface CompareModel {
  readonly runs: readonly CompareRunColumn[];
  readonly config: readonly ConfigDiffRow[];
  readonly metrics: ReadonlyArray<{ readonly key: string; readonly values: ReadonlyArray<number | null> }>;
  readonly curves: readonly CompareCurve[];
}

export interface CompareShowMessage {
  readonly type: 'compare';
  readonly model: CompareModel;
}

export type CompareToWebview = CompareShowMessage;

/** History files the page may ask the host to open (names only; the host builds the path). */
export const OPENABLE_FILES = ['spec-source.yaml', 'spec.json', 'git.diff', 'training_args.json', 'pip-freeze.txt'] as const;
export type OpenableFile = (typeof OPENABLE_FILES)[number];

export interface OpenWandbMessage {
  readonly type: 'openWandb';
  readonly run: string;
}

export interface OpenHistoryFileMessage {
  readonly type: 'openFile';
  readonly run: string;
  readonly file: OpenableFile;
}

export type CompareFromWebview = ReadyMessage | OpenWandbMessage | OpenHistoryFileMessage;

export interface CompareViewState {
  /** Only the keys whose values differ (the default), or every key. */
  readonly onlyDiffs: boolean;
}
