// What a run record keeps of the estimate it started with and of what the host measured (issue 32.4): the
// Runs view shows one against the other, and a later estimate of the same case uses the measurement.
// Stored in the local run store only; never sent anywhere.
import { z } from 'zod';

const nonneg = z.number().finite().nonnegative();

/** The case an estimate is for (what decides whether a later spec is "the same"), and what it said. */
export const runEstimatedSchema = z.object({
  model: z.string(),
  gpu: z.string(),
  gpuCount: z.number().int().positive(),
  method: z.string(),
  seqLen: z.number().int().positive(),
  /** Sequences per optimizer step on one GPU: per-device batch × gradient accumulation. */
  batch: z.number().int().positive(),
  vramGib: nonneg.optional(),
  hours: nonneg.optional(),
  costUsd: nonneg.optional(),
  tokensPerSecond: nonneg.optional(),
});
export type RunEstimated = z.infer<typeof runEstimatedSchema>;

/** The `finished` event's `measured` (python-runner/remote_finetune/measured.py), plus its runtime. */
export const runMeasuredSchema = z.object({
  gpus: z
    .array(
      z.object({
        index: z.number().int().nonnegative(),
        torchPeakAllocatedMib: nonneg.optional(),
        torchPeakReservedMib: nonneg.optional(),
        smiPeakMib: nonneg.optional(),
      }),
    )
    .max(64)
    .optional(),
  tokensPerSecond: nonneg.optional(),
  firstStepS: nonneg.optional(),
  runtimeS: nonneg.optional(),
});
export type RunMeasured = z.infer<typeof runMeasuredSchema>;
