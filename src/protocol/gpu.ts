// GPU panel messages. A sample is one parsed line of `nvidia-smi --query-gpu=… --format=csv,noheader,nounits`;
// nvidia-smi prints [N/A] or [Not Supported] for fields a board lacks, which arrive here as null.
import type { ActionMessage, EmptyStateMessage, ReadyMessage } from './common';

export interface GpuSample {
  /** Milliseconds since the Unix epoch. */
  readonly t: number;
  readonly index: number;
  readonly name: string;
  readonly utilizationPct: number | null;
  readonly memoryUsedMiB: number | null;
  readonly memoryTotalMiB: number | null;
  readonly temperatureC: number | null;
  readonly powerW: number | null;
  readonly powerLimitW: number | null;
  readonly smClockMHz: number | null;
}

/** CPU and memory of a host without an NVIDIA GPU, sampled by the runner in place of nvidia-smi. */
export interface HostSample {
  /** Milliseconds since the Unix epoch. */
  readonly t: number;
  /** Busy share of all CPUs; null where the interval is unknown (the first sample). */
  readonly cpuPct: number | null;
  readonly cpus: number;
  readonly memoryUsedMiB: number | null;
  readonly memoryTotalMiB: number | null;
}

export interface GpuProcess {
  /** The GPU as nvidia-smi's --query-compute-apps names it (its UUID). */
  readonly gpu: string;
  readonly pid: number;
  readonly name: string;
  readonly usedMemoryMiB: number | null;
}

export type HostState =
  | { readonly kind: 'connecting' }
  | { readonly kind: 'connected' }
  | { readonly kind: 'noGpu'; readonly detail: string }
  /** A GPU that answered before stopped answering (fell off the bus, needs a reset): the charts stop there. */
  | { readonly kind: 'gpuLost'; readonly detail: string }
  | { readonly kind: 'unreachable'; readonly detail: string; readonly since: number }
  /** The link dropped and SshHost is reconnecting; unreachable once that lasts (core/runs/sync/hostLink.ts). */
  | { readonly kind: 'reconnecting'; readonly detail: string; readonly since: number }
  /** Connected to a live run, but gpu.csv stopped growing: `since` is when the last sample arrived (epoch ms). */
  | { readonly kind: 'noSample'; readonly since: number }
  /** The run's follow ended: the charts stop at the last sample. */
  | { readonly kind: 'ended' };

export interface GpuInitMessage {
  readonly type: 'init';
  readonly title: string;
  readonly host: string;
}

/** A batch of samples (replayed history first, then live ones as they come). */
export interface GpuSamplesMessage {
  readonly type: 'samples';
  readonly samples: readonly GpuSample[];
}

/** A batch of CPU/memory samples (history first, then live ones), from a host without a GPU. */
export interface GpuHostSamplesMessage {
  readonly type: 'hostSamples';
  readonly samples: readonly HostSample[];
}

export interface GpuProcessesMessage {
  readonly type: 'processes';
  readonly processes: readonly GpuProcess[];
}

export interface GpuHostStateMessage {
  readonly type: 'hostState';
  readonly state: HostState;
}

export type GpuToWebview = EmptyStateMessage | GpuInitMessage | GpuSamplesMessage | GpuHostSamplesMessage | GpuProcessesMessage | GpuHostStateMessage;

export type GpuFromWebview = ReadyMessage | ActionMessage;

export interface GpuViewState {
  /** Seconds of history shown. */
  readonly windowS: number;
}

export const GPU_WINDOWS_S: readonly number[] = [60, 300, 900, 3600];
