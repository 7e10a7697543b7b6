// What the run record keeps of a live run's steps (runProgress.ts reads it): zod only, so the record's schema
// imports nothing else.
import { z } from 'zod';

/** Kept in the run record (runRecord.ts `progress`): enough to tell the rate and whether steps still come. */
export const runProgressSchema = z.object({
  /** The Trainer's max_steps, when the runner said it (an own script's printed logs do not). */
  maxSteps: z.number().int().positive().optional(),
  /** The first logged step of this stretch and its time on the host (ms since the epoch). */
  fromStep: z.number().int().nonnegative(),
  fromAt: z.number(),
  /** The latest logged step's time on the host, and when it reached this machine (local clock, ms). */
  lastAt: z.number(),
  seenAt: z.number(),
  /** The host time between the last two logged steps: what "no step for a while" is measured against. */
  gapMs: z.number().nonnegative().optional(),
});
export type RunProgress = z.infer<typeof runProgressSchema>;
