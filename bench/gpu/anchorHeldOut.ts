// The GPU benchmark's plain TRL SFT cases (bench/gpu/throughput-<gpu>-<date>.json, issue 34) as held-out checks of
// the VRAM estimate (src/core/gpu/estimate.ts) and of the throughput model (src/core/gpu/throughputModel.ts): neither
// fit reads these files, so each figure here is predicted by a fit that never saw it.
// TRL SFT prepares a 4-bit base as the runner now does (base frozen, loaded dtypes kept: quantized_base.py) but casts
// its LoRA adapters to bf16, where the runner keeps peft's fp32. The VRAM check therefore adds to the measurement the
// difference the estimator itself gives between fp32 and bf16 adapters (weights, gradients, optimizer states) and
// holds the runner's recipe to that. Both sides compute the loss as TRL's SFTTrainer does (fused LM head, no logits):
// the runner takes that path with data.packing or trainer.use_sft_trainer.
import { readFileSync } from 'node:fs';
import type { EstimateInput } from '../../src/core/gpu/estimate';
import type { GpuId } from '../../src/core/gpu/catalog';
import { findGpu } from '../../src/core/gpu/catalog';
import { shapeFromConfigJson } from '../../src/core/gpu/models';
import { MEMORY_TBPS, PEAK_DENSE_16BIT_TFLOPS } from '../../src/core/gpu/throughput';
import type { ThroughputCoefficients } from '../../src/core/gpu/throughputModel';
import { LLAMA_LINEAR_MODULES, predictTokensPerSecond } from '../../src/core/gpu/throughputModel';
import type { VramCoefficients } from '../../src/core/gpu/estimate';
import { allocatorEstimateGib } from '../../src/core/gpu/vramFit';
import { RUNNER_DEFAULTS } from '../../src/core/config/runnerDefaults';
import type { AnchorFile } from './anchorThroughput';
import { anchorFiles, parseAnchorFile } from './anchorThroughput';
import { readRepoText } from './vramCheck';

const BASELINE = 'trl-sft';

interface Baseline {
  readonly case: string;
  readonly gpu: GpuId;
  readonly input: EstimateInput;
  readonly params: number;
  readonly reservedMib: number | undefined;
  readonly tokensPerSecond: number | undefined;
}

/** Every measured TRL SFT case of the committed issue-34 files, with the estimator's input for its recipe. */
function baselines(files: readonly AnchorFile[], readText: (repoPath: string) => string): Baseline[] {
  const out: Baseline[] = [];
  for (const f of files) {
    if (f.dry_run) continue;
    const gpu = findGpu(f.gpu)?.id;
    if (!gpu) throw new Error(`${f.path}: no catalog GPU for ${f.gpu}`);
    for (const a of f.anchors) {
      const c = a.cases.find((x) => x.variant === BASELINE && x.status === 'ok');
      if (!c || (a.method !== 'qlora' && a.method !== 'lora-bf16')) continue;
      const config = String(a.config);
      const model = shapeFromConfigJson(readText(config), config);
      if (!model) throw new Error(`${a.anchor}: ${config} is not a model config`);
      out.push({
        case: `${gpu}: ${a.anchor} (${BASELINE}, ${f.date})`,
        gpu,
        params: typeof a.params === 'number' ? a.params : model.params,
        // bench/gpu/trl_sft_baseline.py: NF4 with double quantization, all linear layers, sdpa, checkpointing as the
        // recipe says; issue33.py passes it the runner's default optimizer.
        input: {
          model,
          method: a.method,
          doubleQuant: true,
          weightBytes: 2,
          loraR: a.lora_r,
          loraTargets: 'all-linear',
          batch: a.batch,
          seqLen: a.seq_len,
          gradientCheckpointing: a.gradient_checkpointing === true,
          optimizer: RUNNER_DEFAULTS.optimizer,
          attention: 'flash',
          gpuCount: 1,
          zeroStage: 0,
          fusedLmHead: true,
        },
        reservedMib: c.cuda_max_memory_reserved_mib ?? undefined,
        tokensPerSecond: c.timed_tokens_per_second ?? undefined,
      });
    }
  }
  return out;
}

export interface AnchorVramCheck {
  readonly case: string;
  /** TRL SFT's peak reserved memory (bf16 adapters). */
  readonly measuredGib: number;
  /** What the estimator gives for fp32 over bf16 adapters (weights, gradients, states): added to the measurement. */
  readonly adapterDeltaGib: number;
  /** The runner's recipe (fp32 adapters) as estimated (less the CUDA context, as torch's reserved peak). */
  readonly estimateGib: number;
}

export interface AnchorThroughputCheck {
  readonly case: string;
  readonly gpu: GpuId;
  readonly measured: number;
  /** Predicted by the fit on the measured VRAM files' cases: this case is not one of them. */
  readonly heldOut: number;
}

const round = (x: number, digits: number): number => Number(x.toPrecision(digits));

export function committedAnchors(): AnchorFile[] {
  return anchorFiles().map((p) => parseAnchorFile(readFileSync(p, 'utf8'), p));
}

/** The VRAM estimate against each TRL SFT measurement, adjusted to the runner's fp32 adapters. */
export function anchorVramChecks(files: readonly AnchorFile[], k?: VramCoefficients, readText = readRepoText): AnchorVramCheck[] {
  return baselines(files, readText)
    .filter((b) => b.reservedMib !== undefined)
    .map((b) => {
      const runner = allocatorEstimateGib({ ...b.input, adapterBytes: 4 }, k);
      const trl = allocatorEstimateGib({ ...b.input, adapterBytes: 2 }, k);
      return { case: b.case, measuredGib: round(b.reservedMib! / 1024, 6), adapterDeltaGib: round(runner - trl, 6), estimateGib: round(runner, 6) };
    });
}

/** The throughput model (fitted without these cases) against each TRL SFT case's timed tokens/s. */
export function anchorThroughputChecks(files: readonly AnchorFile[], k: ThroughputCoefficients, readText = readRepoText): AnchorThroughputCheck[] {
  return baselines(files, readText)
    .filter((b) => b.tokensPerSecond !== undefined && k.gpus[b.gpu] !== undefined)
    .map((b) => {
      const x = b.input;
      const heldOut = predictTokensPerSecond(
        {
          params: b.params,
          layers: x.model.layers,
          hidden: x.model.hidden,
          linearModules: LLAMA_LINEAR_MODULES,
          method: x.method,
          gradientCheckpointing: x.gradientCheckpointing,
          seqLen: x.seqLen,
          tokensPerMicroBatch: x.batch * x.seqLen,
          peakTflops: PEAK_DENSE_16BIT_TFLOPS[b.gpu],
          memoryTBps: MEMORY_TBPS[b.gpu],
        },
        k,
        b.gpu,
      );
      return { case: b.case, gpu: b.gpu, measured: b.tokensPerSecond!, heldOut: round(heldOut, 6) };
    });
}
