// "Fine-Tune: Compare Runs" without VS Code: N runs side by side from their records and history files (spec.json,
// training_args.json, events.jsonl in each run's local folder): a config diff over nested keys, the final
// metrics, cost, duration, host and GPU, git commit, W&B link and the loss curves. Files are the runs' own
// (written by the host or the person's spec): every one is parsed defensively and only ever shown as text.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { RunRecord } from '../store/runRecord';
import { runDurationMs } from './runSummary';
import { formatDuration } from '../cost/duration';
import { runDisplayName } from './runDisplayName';
import { usedHardwareLabel } from './runHardware';
import { eventsOfText, HISTORY_FILES, readRunEvents } from '../store/runFolder';
import type { ReadEvent } from '../store/runFolder';
import type { CompareCurve, CompareModel, CompareRunColumn, ConfigDiffRow } from '../../../protocol/compare';

/** Keys are dotted paths (`lora.target_modules`, `data.files[1].path`); values their JSON text. */
export function flattenConfig(value: unknown, prefix = '', out: Map<string, string> = new Map()): Map<string, string> {
  if (Array.isArray(value)) {
    // A list of plain values (target modules, report_to) is one setting; a list of objects is walked by index.
    if (value.length === 0 || value.every((v) => v === null || typeof v !== 'object')) out.set(prefix, JSON.stringify(value));
    else value.forEach((v, i) => flattenConfig(v, `${prefix}[${i}]`, out));
  } else if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0 && prefix) out.set(prefix, '{}');
    for (const [k, v] of entries) flattenConfig(v, prefix ? `${prefix}.${k}` : k, out);
  } else if (prefix) {
    out.set(prefix, value === undefined ? 'undefined' : JSON.stringify(value));
  }
  return out;
}

/**
 * One row per key of any of the configs (in the order keys first appear), each run's value (null where that
 * run has no such key, or no config at all) and whether they differ. A missing key differs from any value.
 */
export function diffConfigs(configs: ReadonlyArray<unknown>, section: ConfigDiffRow['section']): ConfigDiffRow[] {
  const flat = configs.map((c) => (c === undefined ? undefined : flattenConfig(c)));
  const keys: string[] = [];
  const seen = new Set<string>();
  for (const f of flat)
    for (const k of f?.keys() ?? [])
      if (!seen.has(k)) {
        seen.add(k);
        keys.push(k);
      }
  return keys.map((key) => {
    const values = flat.map((f) => f?.get(key) ?? null);
    return { section, key, values, differs: values.some((v) => v !== values[0]) };
  });
}

/** The JSON object a history file holds, or undefined (absent, too big, not JSON, not an object). */
function readJsonObject(path: string): Record<string, unknown> | undefined {
  try {
    if (!existsSync(path) || statSync(path).size > 4 * 1024 * 1024) return undefined;
    const v: unknown = JSON.parse(readFileSync(path, 'utf8'));
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Curves are thinned to this many points per run and metric: enough for a chart, small for a message. */
export const MAX_CURVE_POINTS = 2000;

function thin(steps: number[], values: number[]): { steps: number[]; values: number[] } {
  if (steps.length <= MAX_CURVE_POINTS) return { steps, values };
  const every = steps.length / MAX_CURVE_POINTS;
  const s: number[] = [];
  const v: number[] = [];
  for (let i = 0; i < MAX_CURVE_POINTS; i++) {
    const j = Math.min(steps.length - 1, Math.round(i * every));
    s.push(steps[j]!);
    v.push(values[j]!);
  }
  s[s.length - 1] = steps[steps.length - 1]!;
  v[v.length - 1] = values[values.length - 1]!;
  return { steps: s, values: v };
}

/** Training and eval loss per step from an events.jsonl. */
export function lossCurves(eventsText: string, run: string): CompareCurve[] {
  return lossCurvesOf(eventsOfText(eventsText).events, run);
}

function lossCurvesOf(events: readonly ReadEvent[], run: string): CompareCurve[] {
  const train = { steps: [] as number[], values: [] as number[] };
  const evals = { steps: [] as number[], values: [] as number[] };
  for (const { event: e } of events) {
    if (e.type === 'metrics' && e.loss !== undefined) {
      train.steps.push(e.step);
      train.values.push(e.loss);
    } else if (e.type === 'eval' && e.eval_loss !== undefined) {
      evals.steps.push(e.step);
      evals.values.push(e.eval_loss);
    }
  }
  const out: CompareCurve[] = [];
  if (train.steps.length) out.push({ run, metric: 'loss', ...thin(train.steps, train.values) });
  if (evals.steps.length) out.push({ run, metric: 'eval_loss', ...thin(evals.steps, evals.values) });
  return out;
}

/** Only https links are offered (the host opens them); anything else a record holds is not a link. */
export function httpsUrl(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const u = new URL(url);
    return u.protocol === 'https:' && !u.username && !u.password ? u.toString() : undefined;
  } catch {
    return undefined;
  }
}

/** W&B's own site: the page of a run on W&B's cloud. */
export const WANDB_APP_ORIGIN = 'https://wandb.ai';

/**
 * The W&B page a run's record names, when it is https and on W&B (or the person's W&B Server, `origins`): the
 * link came from the GPU host, which could name any site, so a page elsewhere is not offered.
 */
export function wandbPageUrl(url: string | undefined, origins: readonly string[] = [WANDB_APP_ORIGIN]): string | undefined {
  const u = httpsUrl(url);
  return u && origins.includes(new URL(u).origin) ? u : undefined;
}

export interface ComparedRunInput {
  readonly record: RunRecord;
  /** The run's local folder (mirrored logs and history files). */
  readonly localDir: string;
}

/** Everything the Compare Runs view shows for these runs, in the order given; `wandbOrigins` as for wandbPageUrl. */
export function buildComparison(runs: readonly ComparedRunInput[], now: number = Date.now(), wandbOrigins?: readonly string[]): CompareModel {
  const columns: CompareRunColumn[] = runs.map(({ record: r, localDir }) => {
    const ms = runDurationMs(r, now);
    const has = (f: string): boolean => existsSync(join(localDir, f));
    const wandb = wandbPageUrl(r.wandbUrl, wandbOrigins);
    return {
      key: r.id,
      name: runDisplayName(r, now),
      status: r.status,
      createdAt: r.createdAt,
      ...(ms !== undefined ? { duration: formatDuration(ms), durationMs: ms } : {}),
      ...(r.costUsd !== undefined ? { costUsd: r.costUsd } : {}),
      ...(r.host ? { host: r.host } : {}),
      // What the run had, with the spec's ask beside it when they differ (a GPU-less host after Start Anyway).
      ...(usedHardwareLabel(r) ? { gpu: usedHardwareLabel(r)! } : {}),
      provider: r.provider,
      git: r.git
        ? {
            repo: r.git.repo,
            ...(r.git.commit ? { commit: r.git.commit } : {}),
            ...(r.git.branch ? { branch: r.git.branch } : {}),
            ...(r.git.dirty !== undefined ? { dirty: r.git.dirty } : {}),
            untracked: r.git.untracked?.length ?? 0,
            ...(r.git.note ? { note: r.git.note } : {}),
          }
        : undefined,
      ...(r.wandbRunId ? { wandbRunId: r.wandbRunId } : {}),
      hasWandbPage: wandb !== undefined,
      files: Object.values(HISTORY_FILES).filter(has),
    };
  });
  const specs = runs.map(({ localDir }) => readJsonObject(join(localDir, HISTORY_FILES.specJson)));
  const args = runs.map(({ localDir }) => readJsonObject(join(localDir, HISTORY_FILES.trainingArgs)));
  const metricKeys: string[] = [];
  for (const { record } of runs) for (const k of Object.keys(record.finalMetrics ?? {})) if (!metricKeys.includes(k)) metricKeys.push(k);
  const curves = runs.flatMap(({ record, localDir }) => lossCurvesOf(readRunEvents(localDir).events, record.id));
  return {
    runs: columns,
    config: [...diffConfigs(specs, 'spec'), ...diffConfigs(args, 'trainingArgs')],
    // Own keys only: a run without `constructor` among its metrics would otherwise show Object's function.
    metrics: metricKeys.map((key) => ({
      key,
      values: runs.map(({ record }) => (record.finalMetrics && Object.hasOwn(record.finalMetrics, key) ? (record.finalMetrics[key] ?? null) : null)),
    })),
    curves,
  };
}
