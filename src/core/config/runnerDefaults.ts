// The values python-runner uses for fields a run spec leaves unset (RUN_SPEC_DEFAULTS, which the runner reads from
// its generated spec_defaults.py), by the names the estimates use, so the VRAM estimate, the run length and the cost
// before launch assume what the host will train. test/unit/config/runnerDefaults.test.ts fails when the estimator
// and the runner differ on any of them.
import { RUN_SPEC_DEFAULTS as defaults } from './runSpecDefaults';
import type { Method } from '../gpu/estimate';

const method: Method = defaults.method;
const precision: 'bf16' | 'fp16' | 'fp32' = defaults.trainer.precision;

/** The defaults the estimates need, by their meaning. */
export const RUNNER_DEFAULTS = {
  method,
  /** quantization.double_quant under QLoRA. */
  doubleQuant: defaults.quantization.double_quant as boolean,
  loraR: defaults.lora.r as number,
  loraAlpha: defaults.lora.alpha as number,
  /** 'all-linear' (peft's every linear layer but the head) or module names. */
  loraTargets: defaults.lora.target_modules as 'all-linear' | readonly string[],
  optimizer: defaults.trainer.optimizer as string,
  gradientCheckpointing: defaults.trainer.gradient_checkpointing as boolean,
  maxSeqLength: defaults.data.max_seq_length as number,
  perDeviceBatch: defaults.trainer.per_device_batch_size as number,
  gradientAccumulation: defaults.trainer.gradient_accumulation as number,
  epochs: defaults.trainer.epochs as number,
  precision,
  attention: defaults.model.attn_implementation as string,
} as const;
