// What a panel needs from a run, whatever carries it: the run lifecycle implements this over SSH tails,
// localRunSource.ts over files on this machine. Kept free of `vscode` so tests and benchmarks use it directly.
import type { ComparedRunInput } from '../../core/runs/view/runCompare';
import type { RunEvent } from '../../core/telemetry/events';
import type { GpuProcess, GpuSample, HostSample, HostState } from '../../protocol/gpu';

export interface Unsubscribe {
  dispose(): void;
}

export interface LogChunk {
  /** Byte offset of bytes[0] in the full log. */
  readonly offset: number;
  readonly bytes: Uint8Array;
}

export interface RunDataSource {
  readonly id: string;
  /** Shown as the panel title: a run name or a file name. */
  readonly label: string;
  /** Where the data comes from, for the GPU panel's header (a host name or "this machine"). */
  readonly host: string;
  /** The full log as a file on this machine, when there is one (the panel only keeps a bounded tail). */
  fullLogPath(): string | undefined;
  /** Bytes of log known so far. */
  logSize(): number;
  /** Reads log bytes from `offset`; fewer than maxBytes at the end of what is known. */
  readLog(offset: number, maxBytes: number): Promise<LogChunk>;
  onLogGrown(listener: (size: number) => void): Unsubscribe;
  /** Known events first (replay), then each new batch as it arrives. */
  onEvents(listener: (events: readonly RunEvent[]) => void): Unsubscribe;
  /** Samples kept so far (bounded), then live batches. */
  onGpuSamples(listener: (samples: readonly GpuSample[]) => void): Unsubscribe;
  /** CPU/memory samples of a host without a GPU kept so far (bounded), then live batches. */
  onHostSamples(listener: (samples: readonly HostSample[]) => void): Unsubscribe;
  /** Latest process list, then each new one. */
  onGpuProcesses(listener: (processes: readonly GpuProcess[]) => void): Unsubscribe;
  /** Current state, then each change. */
  onHostState(listener: (state: HostState) => void): Unsubscribe;
  dispose(): void;
}

/** The run the panels follow when opened from their commands. */
export interface RunContext {
  activeRun(): RunDataSource | undefined;
  onDidChangeActiveRun?(listener: (run: RunDataSource | undefined) => void): Unsubscribe;
  /** Runs of this extension whose metrics the metrics panel can overlay, newest first (their local mirrors). */
  comparableRuns?(): readonly ComparableRun[];
  /** Records and local folders of these runs (unknown ids left out), for Compare Runs. */
  runHistories?(ids: readonly string[]): readonly ComparedRunInput[];
  /** Called on any change to the recorded runs. */
  onDidChangeRuns?(listener: () => void): Unsubscribe;
  /** Called when the last run panel closes (what was opened for the runs' panels, such as TensorBoard, can end). */
  panelsClosed?(): void;
}

export interface ComparableRun {
  readonly id: string;
  readonly label: string;
  /** Shown under the label in the picker: when it ran, GPU, state. */
  readonly detail?: string;
  /** The run's events.jsonl on this machine. */
  readonly eventsPath: string;
}
