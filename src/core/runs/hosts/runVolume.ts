// target.volume in the run spec: a named persistent disk (EC2 EBS today, providers/ec2/volume.ts) mounted on the
// instance, holding what should outlive it: staged data (RFT_DATA_DIR), the Hugging Face cache (HF_HOME) and the
// run's outputs folder (checkpoints, adapter), which becomes a link onto the volume.
import { shellQuote } from '../../ssh/quote';
import type { RunSpec } from '../../config/runSpecDefaults';

export const VOLUME_MOUNT = '/mnt/rft-volume';

export interface RunVolume {
  readonly name: string;
  readonly sizeGiB: number;
}

export function volumeOf(spec: RunSpec): RunVolume | undefined {
  const v = spec.target.volume;
  return v ? { name: v.name, sizeGiB: v.size_gb } : undefined;
}

/** The env file's additions; the person's own values (the .env) win. */
export function volumeEnv(env: Readonly<Record<string, string>>, mount = VOLUME_MOUNT): Record<string, string> {
  const out: Record<string, string> = {};
  if (!env.RFT_DATA_DIR) out.RFT_DATA_DIR = `${mount}/data`;
  if (!env.HF_HOME) out.HF_HOME = `${mount}/huggingface`;
  return out;
}

/** Makes <workspace>/<outputs dir> a link to the volume (kept per workspace), unless it already exists on the host. */
export function linkOutputsScript(wsRemote: string, wsName: string, outputsDir: string, mount = VOLUME_MOUNT): string {
  const rel = /^[A-Za-z0-9._-]+$/.test(outputsDir) && outputsDir !== '..' && outputsDir !== '.' ? outputsDir : 'outputs';
  const target = `${mount}/outputs/${wsName}`;
  const link = `${wsRemote}/${rel}`;
  return `mkdir -p ${shellQuote(target)} ${shellQuote(`${mount}/data`)} ${shellQuote(`${mount}/huggingface`)} && { [ -e ${shellQuote(link)} ] || ln -s ${shellQuote(target)} ${shellQuote(link)}; }`;
}
