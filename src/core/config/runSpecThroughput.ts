// The training throughput for a run spec's estimate (the same model shape, method, batch, sequence and GPU the
// VRAM estimate used), with its band and basis, for the CLI and the estimate view.
import type { Throughput } from '../gpu/throughput';
import { trainingThroughput } from '../gpu/throughput';
import type { RunSpecEstimate } from './runSpecEstimate';

export function runSpecThroughput(e: RunSpecEstimate): Throughput {
  const x = e.input;
  return trainingThroughput({
    gpu: e.gpu.id,
    gpuCount: x.gpuCount,
    params: x.model.params,
    layers: x.model.layers,
    hidden: x.model.hidden,
    seqLen: x.seqLen,
    method: x.method,
    gradientCheckpointing: x.gradientCheckpointing,
    precision: x.weightBytes === 4 ? 'fp32' : 'bf16',
    tokensPerMicroBatch: x.batch * x.seqLen,
  });
}

/** "~5,400 tokens/s (4,350–6,450, ±20%): fitted on …". */
export function throughputLine(t: Throughput): string {
  const n = (v: number): string => Math.round(v).toLocaleString('en-US');
  return `~${n(t.tokensPerSecond)} tokens/s (${n(t.low)}–${n(t.high)}, ±${Math.ceil(t.band * 100)}%): ${t.basis}`;
}
