// The Start confirmation names the hardware the run will get when the host's probe found other than the spec asks
// for (the person chose "Start Anyway"): the fit, time and cost lines above it are the spec's GPU's, not the host's.
import type { ProbeOutcome } from '../../hosts/gpuCheck';
import { hostGpuWarning } from '../../hosts/gpuCheck';
import { hardwareFromProbe, hardwareText } from './runHardware';

export function probedHardwareLine(host: string, outcome: ProbeOutcome, wanted: readonly string[]): string | undefined {
  const hw = hardwareFromProbe(outcome);
  if (!hw || !hostGpuWarning(host, outcome, wanted)) return undefined;
  const asked = wanted.length > 0 ? ` The spec asks for ${wanted.join(' / ')}; the estimates above are for that.` : '';
  return `Hardware on ${host}: ${hw.gpus.length ? hardwareText(hw) : 'CPU only (no NVIDIA GPU found)'}.${asked}`;
}
