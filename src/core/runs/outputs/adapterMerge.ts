// "Merge Adapter": peft's merge_and_unload on the run's host (python-runner/remote_finetune/merge.py), in a
// dtype chosen from the GPU fit: bf16 where the GPU has it (Ampere and later), fp16 on older GPUs, and fp32
// on the host's CPU when no GPU is known or the 16-bit base model would not fit in its memory. The result is
// <outputs.dir>/merged on the host, a plain transformers model in safetensors with the tokenizer.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { findGpu } from '../../gpu/catalog';
import { usedGpu, usedHardwareLabel } from '../view/runHardware';
import type { HardwareOf } from '../view/runHardware';
import { lookupModel, shapeFromName } from '../../gpu/models';
import type { OnRunHost, OpLine } from '../hosts/hostOps';
import { runHostOp, runnerOpCommand } from '../hosts/hostOps';
import { HISTORY_FILES } from '../store/runFolder';
import { repoNameProblem } from './hubPublish';

export type MergeDtype = 'bf16' | 'fp16' | 'fp32';
export type MergeDevice = 'auto' | 'cuda' | 'cpu';

export interface MergePlan {
  readonly dtype: MergeDtype;
  readonly device: MergeDevice;
  /** Why, in words for the picker. */
  readonly reason: string;
}

/** Weights plus the merge's working copies of one layer and the load's transient buffers. */
const MERGE_OVERHEAD = 1.2;

/** The dtype and device for merging `modelId` on a host with `gpu` (the record's GPU, as the user named it). */
export function mergePlan(gpu: string | undefined, modelId: string | undefined): MergePlan {
  const info = gpu ? findGpu(gpu) : undefined;
  if (!info)
    return {
      dtype: 'fp32',
      device: 'cpu',
      reason: gpu ? `${gpu} is not a GPU the estimator knows: fp32 on the CPU` : 'no GPU known for this host: fp32 on the CPU',
    };
  const shape = modelId ? (lookupModel(modelId) ?? shapeFromName(modelId)) : undefined;
  const needGb = shape ? (shape.params * 2 * MERGE_OVERHEAD) / 1e9 : undefined;
  if (needGb !== undefined && needGb > info.vramGb * 0.95)
    return {
      dtype: 'fp32',
      device: 'cpu',
      reason: `the 16-bit base model needs about ${needGb.toFixed(0)} GB, more than ${info.id}'s ${info.vramGb} GB: fp32 on the CPU`,
    };
  const size = needGb !== undefined ? ` (about ${needGb.toFixed(1)} GB)` : '';
  return info.bf16
    ? { dtype: 'bf16', device: 'auto', reason: `${info.id} supports bf16${size}` }
    : { dtype: 'fp16', device: 'auto', reason: `${info.id} has no bf16 (compute capability ${info.computeCapability}): fp16${size}` };
}

/**
 * The plan for a run's host from the hardware the run had (runHardware.ts), not the GPU its spec asked for: a
 * host that trained on the CPU merges on the CPU, whatever the spec named.
 */
export function mergePlanFor(r: HardwareOf, modelId: string | undefined): MergePlan {
  const used = usedGpu(r);
  if (used === null)
    return {
      dtype: 'fp32',
      device: 'cpu',
      reason: `the run's host has no GPU (${usedHardwareLabel(r) ?? 'CPU only'}): fp32 on the CPU`,
    };
  return mergePlan(used ? (used.info?.id ?? used.name) : undefined, modelId);
}

export interface MergeOptions {
  readonly dtype: MergeDtype;
  readonly device: MergeDevice;
  /** The adapter folder relative to the run's workspace (default: the one the run left). */
  readonly adapter?: string;
  /** Where the merged model goes, relative to the workspace (default: <outputs.dir>/merged). */
  readonly out?: string;
  /** For a gated base model the host has not cached: the Hub token, sent on stdin only, and only for a Hub model. */
  readonly hfToken?: string;
  /** model.id of the run's spec (startedSpecModel): the token goes to the host only when this is a Hub repo id. */
  readonly baseModel?: string;
  /** Non-secret environment for the runner (HF_ENDPOINT, HF_HUB_OFFLINE). */
  readonly env?: Readonly<Record<string, string>>;
  readonly onProgress?: (line: OpLine) => void;
  readonly signal?: AbortSignal;
}

export interface MergeResult {
  /** The merged folder, relative to the run's workspace on the host when inside it. */
  readonly path: string;
  readonly bytes?: number;
  readonly dtype: MergeDtype;
  readonly device?: string;
  readonly seconds?: number;
}

/**
 * Whether a model id names a Hub repo ("name" or "namespace/name" by the Hub's rules), not a folder: an absolute,
 * ./, ../, ~ or Windows path loads from the host's disk, and a token sent for it would only be one more copy.
 * Whether a Hub model is gated is the Hub's to say, so a Hub id gets the token.
 */
export function isHubModelId(id: string | undefined): boolean {
  if (!id || /^(?:[/~.]|[A-Za-z]:)|\\/.test(id)) return false;
  return repoNameProblem(id) === undefined;
}

/** model.id of the spec as the run was started with it (its local history's spec.json), when it names one. */
export function startedSpecModel(localDir: string | undefined): string | undefined {
  if (!localDir) return undefined;
  try {
    const spec = JSON.parse(readFileSync(join(localDir, HISTORY_FILES.specJson), 'utf8')) as { model?: { id?: unknown } } | null;
    return typeof spec?.model?.id === 'string' ? spec.model.id : undefined;
  } catch {
    // No history (an older run, a folder that could not be written): no Hub model known, so no token.
    return undefined;
  }
}

export async function mergeAdapter(onRunHost: OnRunHost, runId: string, opts: MergeOptions): Promise<MergeResult> {
  return onRunHost(
    runId,
    async (session, at) => {
      const argv = ['merge', '--run-dir', at.runDir, '--workdir', at.workspace, '--dtype', opts.dtype, '--device', opts.device];
      if (opts.adapter) argv.push('--adapter', opts.adapter);
      if (opts.out) argv.push('--out', opts.out);
      const stdin = JSON.stringify(opts.hfToken && isHubModelId(opts.baseModel) ? { token: opts.hfToken } : {});
      const done = await runHostOp(session, runnerOpCommand(at, argv, opts.env), stdin, (l) => opts.onProgress?.(l), opts.signal, {
        what: `merging the adapter of run ${runId}`,
      });
      const path = typeof done.path === 'string' ? done.path : '';
      if (!path) throw new Error('the host reported no merged folder');
      return {
        path,
        dtype: opts.dtype,
        ...(typeof done.bytes === 'number' ? { bytes: done.bytes } : {}),
        ...(typeof done.device === 'string' ? { device: done.device } : {}),
        ...(typeof done.seconds === 'number' ? { seconds: done.seconds } : {}),
      };
    },
    opts.signal,
  );
}
