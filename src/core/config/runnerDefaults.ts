// The values python-runner uses for fields a run spec leaves unset, read from the runner's own data file
// (python-runner/remote_finetune/defaults.json, which spec.py loads; esbuild inlines it), so the VRAM estimate,
// the run length and the cost before launch assume what the host will train. test/unit/config/runnerDefaults.test.ts
// fails when the estimator and the runner differ on any of them.
import defaults from '../../../python-runner/remote_finetune/defaults.json';
import type { Method } from '../gpu/estimate';

const method = defaults.method as Method;
const precision = defaults.trainer.precision as 'bf16' | 'fp16' | 'fp32';

/** The defaults the estimates need, by their meaning. */
export const RUNNER_DEFAULTS = {
  method,
  /** quantization.double_quant under QLoRA. */
  doubleQuant: defaults.quantization.double_quant,
  loraR: defaults.lora.r,
  loraAlpha: defaults.lora.alpha,
  /** 'all-linear' (peft's every linear layer but the head) or module names. */
  loraTargets: defaults.lora.target_modules as 'all-linear' | readonly string[],
  optimizer: defaults.trainer.optimizer,
  gradientCheckpointing: defaults.trainer.gradient_checkpointing,
  maxSeqLength: defaults.data.max_seq_length,
  perDeviceBatch: defaults.trainer.per_device_batch_size,
  gradientAccumulation: defaults.trainer.gradient_accumulation,
  epochs: defaults.trainer.epochs,
  precision,
  attention: defaults.model.attn_implementation,
} as const;
