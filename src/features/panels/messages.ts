// Inbound webview messages are checked here before any handler sees them: a webview is a browser page and
// its messages are input like any other. The annotations tie each schema to its src/protocol type.
import { z } from 'zod';
import { MAX_WEBVIEW_TEXT } from '../../protocol/common';
import type { GpuFromWebview } from '../../protocol/gpu';
import type { LogFromWebview } from '../../protocol/log';
import type { MetricsFromWebview } from '../../protocol/metrics';
import type { CompareFromWebview } from '../../protocol/compare';
import { OPENABLE_FILES } from '../../protocol/compare';
import type { TryFromWebview } from '../../protocol/tryAdapterMessages';
import { TRY_MAX_NEW_TOKENS, TRY_MAX_PROMPT, TRY_MAX_TEMPERATURE } from '../../protocol/tryAdapterMessages';

const ready = z.object({ type: z.literal('ready') }).strict();
const action = z.object({ type: z.literal('action'), id: z.enum(['openLocalFile', 'startRun']) }).strict();

export const logFromWebview: z.ZodType<LogFromWebview> = z.discriminatedUnion('type', [
  ready,
  action,
  z.object({ type: z.literal('ack'), seq: z.number().int().nonnegative() }).strict(),
  z.object({ type: z.literal('copy'), text: z.string().max(MAX_WEBVIEW_TEXT) }).strict(),
  z.object({ type: z.literal('openFullLog'), line: z.number().int().positive().optional() }).strict(),
  z.object({ type: z.literal('openSource'), path: z.string().min(1).max(1000), line: z.number().int().positive().max(10_000_000) }).strict(),
]);

export const gpuFromWebview: z.ZodType<GpuFromWebview> = z.discriminatedUnion('type', [ready, action]);

// W&B names: entity and project are slugs, run ids are short; bounding them keeps URLs and queries sane.
const wandbName = z
  .string()
  .trim()
  .min(1)
  .max(128)
  .regex(/^[\w.-]+$/, 'letters, digits, ".", "-" and "_" only');
// Run keys come from the host and go back unchanged: bounded, never used as a path or URL by the host.
const runKey = z.string().min(1).max(400);

export const metricsFromWebview: z.ZodType<MetricsFromWebview> = z.discriminatedUnion('type', [
  ready,
  action,
  z.object({ type: z.literal('loadWandb'), run: z.object({ entity: wandbName, project: wandbName, runId: wandbName }).strict() }).strict(),
  z.object({ type: z.literal('compareRun') }).strict(),
  z.object({ type: z.literal('dropRun'), key: runKey }).strict(),
  z.object({ type: z.literal('openRunPage'), key: runKey }).strict(),
]);

export const compareFromWebview: z.ZodType<CompareFromWebview> = z.discriminatedUnion('type', [
  ready,
  z.object({ type: z.literal('openWandb'), run: runKey }).strict(),
  z.object({ type: z.literal('openFile'), run: runKey, file: z.enum(OPENABLE_FILES) }).strict(),
]);

const requestId = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

export const tryFromWebview: z.ZodType<TryFromWebview> = z.discriminatedUnion('type', [
  ready,
  z
    .object({
      type: z.literal('generate'),
      requestId,
      where: z.enum(['host', 'local']),
      prompt: z.string().min(1).max(TRY_MAX_PROMPT),
      temperature: z.number().min(0).max(TRY_MAX_TEMPERATURE),
      maxNewTokens: z.number().int().min(1).max(TRY_MAX_NEW_TOKENS),
      chat: z.boolean(),
    })
    .strict(),
  z.object({ type: z.literal('stop'), requestId }).strict(),
]);

export type Validated<T> = { readonly ok: true; readonly message: T } | { readonly ok: false; readonly error: string };

/** Never throws: a malformed message is reported to the log and dropped. */
export function validate<T>(schema: z.ZodType<T>, raw: unknown): Validated<T> {
  const r = schema.safeParse(raw);
  if (r.success) return { ok: true, message: r.data };
  return { ok: false, error: r.error.issues.map((i) => `${i.path.join('.') || '(message)'}: ${i.message}`).join('; ') };
}
