// What the extension remembers about a run, persisted so a reload or crash of VS Code reattaches by
// itself. It holds no secret: only where the run is and how far each tail has read.
import { z } from 'zod';
import { runEstimatedSchema, runMeasuredSchema } from './runMeasuredSchema';
import { FINISHED_STATUSES } from '../../telemetry/events';
import { runFailureSchema } from '../view/failureReason';
import { runHardwareSchema } from '../view/runHardware';
import { runProgressSchema } from './runProgressSchema';
import { HISTORY_NAMES } from './runFolder';

const LIVE_STATUSES = ['planned', 'provisioning', 'connecting', 'syncing', 'bootstrapping', 'running'] as const;
/** The ends are the runner's words for how a run ended (events.ts), and cancelled: stopped before it ran. */
const END_STATUSES = [...FINISHED_STATUSES, 'cancelled'] as const;
export const RUN_STATUSES = [...LIVE_STATUSES, ...END_STATUSES] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export const TERMINAL_STATUSES: ReadonlySet<RunStatus> = new Set(END_STATUSES);

export const tailOffsetsSchema = z.object({
  output_log: z.number().int().nonnegative(),
  events: z.number().int().nonnegative(),
  gpu: z.number().int().nonnegative(),
});
export type TailOffsets = z.infer<typeof tailOffsetsSchema>;

/** One instance a cloud run used: the first, then a replacement after each spot reclaim (runRelaunch.ts). */
export const runAttemptSchema = z.object({
  n: z.number().int().positive(),
  instanceId: z.string().optional(),
  instanceType: z.string(),
  region: z.string(),
  zone: z.string().optional(),
  spot: z.boolean(),
  pricePerHour: z.number().nonnegative().optional(),
  /** The launch call (billing starts there) and the end of the instance, ms since the epoch. */
  startedAt: z.number(),
  endedAt: z.number().optional(),
  /** How the attempt ended: the cloud reclaimed it, or the run ended on it (completed, failed, stopped). */
  reason: z.enum(['reclaimed', 'completed', 'failed', 'stopped', 'cancelled', 'interrupted']).optional(),
  costUsd: z.number().nonnegative().optional(),
  /** Sizes of the local mirror when the attempt began: its host's files start at 0 and append after them. */
  mirrorBase: tailOffsetsSchema,
  /** The checkpoint step the attempt resumed from (the runner's checkpoint-restored warning). */
  resumedFromStep: z.number().int().nonnegative().optional(),
  /** Zones that refused this launch before it landed (zone failover), with the provider's words. */
  refused: z
    .array(z.object({ region: z.string(), zone: z.string(), code: z.string(), message: z.string().max(500) }))
    .max(32)
    .optional(),
  /** Where pricePerHour comes from and when (a price list, a spot price history, a catalog). */
  priceSource: z.string().max(300).optional(),
});
export type RunAttempt = z.infer<typeof runAttemptSchema>;

const pinnedHostKeysSchema = z.array(z.string().regex(/^[a-z0-9@.-]+ [A-Za-z0-9+/=]+$/)).max(8);

export const runRecordSchema = z.object({
  // A run id names local folders: never '.', '..' or anything with a path separator (a host may send any text).
  id: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,80}$/)
    .refine((id) => !id.includes('..') && id !== '.', 'not a run id'),
  name: z.string(),
  specPath: z.string(),
  specHash: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  /** When the run reached a terminal status (set by the store): its duration and how long it shows as finished. */
  finishedAt: z.string().optional(),
  status: z.enum(RUN_STATUSES),
  /** ssh target as the user named it (alias or user@host:port); for provisioned hosts the address. */
  host: z.string().optional(),
  /** How to reach the host again after a reload; the private key stays in its file, never here. */
  sshUser: z.string().optional(),
  sshPort: z.number().int().min(1).max(65535).optional(),
  identityFile: z.string().optional(),
  /** The run wrapper's pid on the host (the tails follow it). */
  pid: z.number().int().positive().optional(),
  launchedAt: z.number().optional(),
  provider: z.enum(['ssh', 'local', 'lambda', 'ec2', 'gcp']),
  instanceId: z.string().optional(),
  /** Host keys the provider vouched for at launch ("type base64"); only these are accepted for the instance. */
  pinnedHostKeys: pinnedHostKeysSchema.optional(),
  region: z.string().optional(),
  /** The GPU the spec asked for. */
  gpu: z.string().optional(),
  /** What the run had (runHardware.ts): the runner's report, else the probe before the start; absent in older records. */
  hardware: runHardwareSchema.optional(),
  remoteDir: z.string().optional(),
  /** Place in the host's queue while the run waits for its GPUs (1 = next); absent once it has them. */
  queuePosition: z.number().int().positive().optional(),
  /** Data named by URI being copied onto the host before training (staging events); absent once done. */
  staging: z.object({ uri: z.string(), bytesDone: z.number().int().nonnegative(), bytesTotal: z.number().int().nonnegative().optional() }).optional(),
  /** The host's GPUs the run was given (its CUDA_VISIBLE_DEVICES), from the host's queue. */
  gpuIndices: z.array(z.number().int().nonnegative()).max(64).optional(),
  lastStep: z.number().int().nonnegative().optional(),
  lastLoss: z.number().optional(),
  /** The logged steps' total and timing while the run trains (runProgress.ts): its time left. */
  progress: runProgressSchema.optional(),
  pricePerHour: z.number().nonnegative().optional(),
  costUsd: z.number().nonnegative().optional(),
  /** The estimate the run started with and what the host measured (issue 32.4); local only. */
  estimated: runEstimatedSchema.optional(),
  measured: runMeasuredSchema.optional(),
  /** When SSH first answered on the run's instance, ms since the epoch: launchedAt to this is the provisioning wait. */
  readyAt: z.number().optional(),
  wandbRunId: z.string().optional(),
  wandbUrl: z.string().optional(),
  exitCode: z.number().int().nullable().optional(),
  failure: runFailureSchema.optional(),
  artifactsDir: z.string().optional(),
  /** The spec's outputs (dir, download): what comes back when the run ends, and where it goes. */
  outputs: z.object({ dir: z.string().optional(), download: z.array(z.enum(['adapter', 'checkpoints', 'logs'])).optional() }).optional(),
  /** Local folder mirroring the run's files (output.log, events.jsonl, gpu.csv) by byte offset. */
  localDir: z.string().optional(),
  workspaceDir: z.string().optional(),
  /** Where the run came from: started here, or found on the host (started from another machine). */
  origin: z.enum(['here', 'found']).optional(),
  teardownPolicy: z.enum(['terminate', 'stop', 'keep']).optional(),
  idleMinutes: z.number().int().positive().optional(),
  finishedAction: z.enum(['terminated', 'stopped', 'kept']).optional(),
  /** Where the synced folder stood in git at the start (gitInfo.ts); its diff is git.diff in localDir. */
  git: z
    .object({
      repo: z.boolean(),
      commit: z
        .string()
        .regex(/^[0-9a-f]{40,64}$/)
        .optional(),
      branch: z.string().max(256).optional(),
      dirty: z.boolean().optional(),
      untracked: z.array(z.string().max(4096)).max(200).optional(),
      untrackedMore: z.number().int().nonnegative().optional(),
      note: z.string().max(1000).optional(),
      error: z.string().max(1000).optional(),
    })
    .optional(),
  /** The history files kept in localDir (runHistory.ts): spec text, spec.json, git.diff, resolved config, lock. */
  historyFiles: z.array(z.enum(HISTORY_NAMES)).optional(),
  /** The last value of each number the run logged (runHistory.ts finalMetricsFromEvents), set when it ends. */
  finalMetrics: z.record(z.string().max(200), z.number().finite()).optional(),
  /** A multi-node run's machines after rank 0 (which is the record's own host and folder), in rank order. */
  machines: z
    .array(
      z.object({
        rank: z.number().int().min(1).max(1023),
        host: z.string(),
        identityFile: z.string().optional(),
        /** A multi-node cloud run's node: its instance, login and the host keys it was launched with. */
        sshUser: z.string().optional(),
        sshPort: z.number().int().min(1).max(65535).optional(),
        instanceId: z.string().optional(),
        pinnedHostKeys: pinnedHostKeysSchema.optional(),
        remoteDir: z.string().optional(),
        pid: z.number().int().positive().optional(),
        status: z.enum(RUN_STATUSES).optional(),
        exitCode: z.number().int().nullable().optional(),
        failure: runFailureSchema.optional(),
        /** When this rank's wrapper was seen to exit (ms): the first failure to end is the run's. */
        endedAt: z.number().optional(),
      }),
    )
    .max(1023)
    .optional(),
  /** A cloud run's instances, oldest first; the last is the current one. */
  attempts: z.array(runAttemptSchema).max(32).optional(),
  /** Each Resume of the run (runResume.ts): when, from which status, and the checkpoint step it went on from. */
  resumes: z
    .array(
      z.object({
        at: z.string(),
        from: z.enum(RUN_STATUSES),
        fromStep: z.number().int().nonnegative().optional(),
        /** host: the host restarted the run by itself after a reboot (its `resumed` event); absent: Resume here. */
        by: z.enum(['host']).optional(),
      }),
    )
    .max(1000)
    .optional(),
  /** How many instances the run may use in all (the spec's target.max_attempts on a spot target). */
  maxAttempts: z.number().int().positive().optional(),
  /** The run's public key (the private key stays in identityFile): a replacement instance is launched with it. */
  sshPublicKey: z.string().max(16_384).optional(),
  /** The env file, relative to workspaceDir: where a relaunch after a reload reads the run's variables again. */
  envFileRel: z.string().optional(),
  /** Signs the runner's own control events (telemetry/eventAuth.ts); written to the run folder, never shown. */
  controlKey: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
});
export type RunRecord = z.infer<typeof runRecordSchema>;

export function isTerminal(status: RunStatus): boolean {
  return TERMINAL_STATUSES.has(status);
}
