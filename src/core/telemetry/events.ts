// The events.jsonl schema shared with python-runner (python-runner/remote_finetune/events.py).
// Both sides test the same fixture files under test/fixtures/events, so they cannot drift.
// Field names are snake_case because Python writes them.
import { z } from 'zod';

export const EVENTS_SCHEMA_VERSION = 1;

const base = {
  v: z.literal(EVENTS_SCHEMA_VERSION).describe('Schema version of this line.'),
  /** Seconds since the Unix epoch, as Python's time.time() gives. */
  ts: z.number().nonnegative().describe('Seconds since the Unix epoch.'),
  /** HMAC-SHA256 of the line without this field, on lines the runner itself wrote (eventAuth.ts). */
  mac: z.string().optional().describe("The runner's signature of this line."),
};

const finite = z.number().finite();

/** The host's queue (gpuqueue.py): the run waits for its GPUs; position 1 is next. */
export const queuedEvent = z.object({
  ...base,
  type: z.literal('queued'),
  position: z.number().int().positive(),
  gpus_wanted: z.number().int().positive().optional(),
});

/** The run has its GPUs (CUDA_VISIBLE_DEVICES) and starts training; waited_s is its time in the queue. */
export const assignedEvent = z.object({
  ...base,
  type: z.literal('assigned'),
  gpus: z.array(z.number().int().nonnegative()),
  waited_s: finite.nonnegative().optional(),
});

/** A dataset named by URI (s3://, gs://, hf://) being copied onto the host before training (staging.py). */
export const stagingEvent = z.object({
  ...base,
  type: z.literal('staging'),
  uri: z.string(),
  bytes_done: z.number().int().nonnegative(),
  bytes_total: z.number().int().nonnegative().optional(),
  files_total: z.number().int().nonnegative().optional(),
  done: z.boolean().optional(),
  seconds: finite.nonnegative().optional(),
});

export const startedEvent = z.object({
  ...base,
  type: z.literal('started'),
  run_id: z.string().optional(),
  model: z.string(),
  method: z.enum(['qlora', 'lora-bf16', 'full', 'dpo', 'orpo', 'own-script']),
  total_params: z.number().int().nonnegative().optional(),
  trainable_params: z.number().int().nonnegative().optional(),
  trainable_pct: finite.min(0).max(100).optional(),
  world_size: z.number().int().positive().optional(),
  wandb_run_id: z.string().optional(),
  wandb_url: z.string().optional(),
});

export const metricsEvent = z.object({
  ...base,
  type: z.literal('metrics'),
  step: z.number().int().nonnegative(),
  /** The Trainer's planned optimizer steps (max_steps, or epochs × steps per epoch): "step N of M". */
  max_steps: z.number().int().positive().optional(),
  epoch: finite.optional(),
  loss: finite.optional(),
  learning_rate: finite.optional(),
  grad_norm: finite.optional(),
  tokens_per_second: finite.optional(),
  samples_per_second: finite.optional(),
  peak_gpu_memory_mb: finite.optional(),
  /** Other numeric values a user's own Trainer printed, kept by name. */
  extra: z.record(z.string(), finite).optional(),
});

export const evalEvent = z.object({
  ...base,
  type: z.literal('eval'),
  step: z.number().int().nonnegative(),
  epoch: finite.optional(),
  eval_loss: finite.optional(),
  /** exp(eval_loss): the Trainer's evaluations, and the runner's token-weighted one on data.eval when training ends. */
  perplexity: finite.nonnegative().optional(),
  metrics: z.record(z.string(), finite).optional(),
});

export const checkpointEvent = z.object({
  ...base,
  type: z.literal('checkpoint'),
  step: z.number().int().nonnegative(),
  path: z.string(),
  /** Set on the second event of a checkpoint that outputs.checkpoints copied to object storage (s3://, gs://). */
  uploaded_to: z.string().optional(),
  upload_s: finite.nonnegative().optional(),
});

export const warningEvent = z.object({
  ...base,
  type: z.literal('warning'),
  message: z.string(),
  code: z.string().optional(),
});

export const errorEvent = z.object({
  ...base,
  type: z.literal('error'),
  message: z.string(),
  /** Id of a known-failure signature (python-runner/remote_finetune/signatures.json) when one matched. */
  signature: z.string().optional(),
  hint: z.string().optional(),
});

/**
 * How a run can end, one word each everywhere (events, run record, Runs view, notifications, history): preempted
 * (the cloud's reclaim notice), stalled (watchdog.on_stall: stop), budget-stopped (the spec's budget), stopped (a
 * person's Stop), interrupted (a signal of no known cause), failed, completed.
 */
export const FINISHED_STATUSES = ['completed', 'failed', 'interrupted', 'stopped', 'preempted', 'stalled', 'budget-stopped'] as const;

/** No optimizer step for the stall threshold while the training process lives (python-runner stall.py). */
export const stalledEvent = z.object({
  ...base,
  type: z.literal('stalled'),
  stalled_s: finite.nonnegative(),
  threshold_s: finite.nonnegative(),
  /** notify: the run goes on; stop: the runner stops it (its end is then `stalled`). */
  action: z.enum(['notify', 'stop']),
  last_step: z.number().int().nonnegative().optional(),
  step_time_s: finite.nonnegative().optional(),
  gpu_util_pct: finite.min(0).max(100).optional(),
  /** The training process's state as /proc tells it (running, sleeping, disk-sleep, stopped, zombie). */
  process_state: z.string().optional(),
});

/** The host restarted the run by itself (python-runner boot_resume.py): same run id, from its newest checkpoint. */
export const resumedEvent = z.object({
  ...base,
  type: z.literal('resumed'),
  reason: z.enum(['host-restart']),
  from_step: z.number().int().nonnegative().optional(),
  /** The run's last sign of life before the interruption (its heartbeat), seconds since the epoch. */
  interrupted_at: finite.nonnegative().optional(),
});

export const finishedEvent = z.object({
  ...base,
  type: z.literal('finished'),
  status: z.enum(FINISHED_STATUSES),
  exit_code: z.number().int().nullable(),
  runtime_s: finite.nonnegative().optional(),
  adapter_path: z.string().optional(),
  /** What the run used, measured on the host (python-runner/remote_finetune/measured.py; issue 32.4). */
  measured: z
    .object({
      gpus: z
        .array(
          z.object({
            index: z.number().int().nonnegative(),
            /** torch.cuda.max_memory_allocated / max_memory_reserved of the rank on this GPU, MiB. */
            torch_peak_allocated_mib: finite.nonnegative().optional(),
            torch_peak_reserved_mib: finite.nonnegative().optional(),
            /** nvidia-smi's peak memory.used on this GPU during the run, MiB. */
            smi_peak_mib: finite.nonnegative().optional(),
          }),
        )
        .max(64)
        .optional(),
      /** Median tokens/s once the first tenth of the logged steps is past. */
      tokens_per_second: finite.nonnegative().optional(),
      /** Seconds from the runner's start to the end of the first optimizer step. */
      first_step_s: finite.nonnegative().optional(),
    })
    .optional(),
});

export const runEvent = z.discriminatedUnion('type', [
  queuedEvent,
  assignedEvent,
  stagingEvent,
  startedEvent,
  metricsEvent,
  evalEvent,
  checkpointEvent,
  warningEvent,
  errorEvent,
  stalledEvent,
  resumedEvent,
  finishedEvent,
]);

export type RunEvent = z.infer<typeof runEvent>;

export type ParsedEventLine = { readonly ok: true; readonly event: RunEvent } | { readonly ok: false; readonly error: string };

/** Parses one line of events.jsonl. Never throws: a bad line is reported, the stream goes on. */
export function parseEventLine(line: string): ParsedEventLine {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    return { ok: false, error: 'not JSON' };
  }
  if (typeof raw === 'object' && raw !== null && 'v' in raw && (raw as { v: unknown }).v !== EVENTS_SCHEMA_VERSION) {
    return { ok: false, error: `unsupported events schema version ${String((raw as { v: unknown }).v)}` };
  }
  const r = runEvent.safeParse(raw);
  if (!r.success) return { ok: false, error: r.error.issues.map((i) => `${i.path.join('.') || '(line)'}: ${i.message}`).join('; ') };
  return { ok: true, event: r.data };
}
