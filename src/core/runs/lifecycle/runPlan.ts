// Before anything is billed: read the run spec, check it with the same core as the editor and the CLI,
// estimate the fit on each candidate GPU, and gather what the host needs (spec.json, the env file).
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { validateText } from '../../config/validate';
import { toValue } from '../../config/parse';
import { isShellName, parseDotenv } from '../../config/dotenv';
import type { ConfigDiagnostic, FileAccess } from '../../config/types';
import type { DocNode } from '../../config/ast';
import { looseRunSpec, normaliseRunSpec, RUN_SPEC_DEFAULTS } from '../../config/runSpecDefaults';
import type { LooseRunSpec, ResolvedRunSpec, RunSpec } from '../../config/runSpecDefaults';
import { estimateRunSpecOrWhy, estimateLabel } from '../../config/runSpecEstimate';
import type { RunSpecEstimate } from '../../config/runSpecEstimate';
import { findGpu } from '../../gpu/catalog';
import type { TeardownSettings } from './teardown';

export interface RunPlan {
  readonly specPath: string;
  readonly specText: string;
  /** The spec as written (what is uploaded as spec.json), whatever the checks said. */
  readonly spec: Readonly<Record<string, unknown>>;
  /** The spec the schema accepted, defaults filled in; absent when the schema refused it (then `errors` say why). */
  readonly runSpec?: ResolvedRunSpec;
  /** `runSpec`, or when the schema refused the spec the fields it accepts one by one: what the estimates read. */
  readonly typed: LooseRunSpec;
  /** The parsed document, so the fit on other GPUs is estimated without parsing the text again. */
  readonly root?: DocNode;
  readonly name: string;
  readonly errors: readonly ConfigDiagnostic[];
  readonly warnings: readonly ConfigDiagnostic[];
  /** The folder synced to the host: the spec's folder (relative paths in the spec resolve there). */
  readonly workspaceDir: string;
  readonly envFile?: string;
  readonly teardown: TeardownSettings;
  readonly target: NonNullable<LooseRunSpec['target']>;
  readonly ownScript: boolean;
}

function lineOf(text: string, offset: number): number {
  let n = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) n++;
  return n;
}

export function describeDiagnostic(text: string, d: ConfigDiagnostic): string {
  return `line ${lineOf(text, d.start)}: ${d.code} ${d.message}`;
}

/**
 * Checks and reads a run spec. `gpu`: the GPU the command names ("Start Training on A100") when it is not the
 * spec's own `target.gpu`: hardware rules (bf16, fit) must speak of the GPU the run will get.
 */
export function planRun(specPath: string, specText: string, files: FileAccess, opts: { gpu?: string } = {}): RunPlan {
  const r = validateText(specText, { fileName: specPath, kind: 'runspec', files, ...(opts.gpu ? { gpu: findGpu(opts.gpu) } : {}) });
  const value = toValue(r.root);
  const spec = (typeof value === 'object' && value !== null && !Array.isArray(value) ? value : {}) as Record<string, unknown>;
  const base =
    specPath
      .replace(/\\/g, '/')
      .split('/')
      .pop()
      ?.replace(/\.ya?ml$/, '') ?? 'run';
  const dir = dirname(specPath);
  // A spec the schema refused has errors and never starts; its plan still names the run, the env file and the
  // teardown from the fields the schema accepts one by one.
  const runSpec = r.runSpec ? normaliseRunSpec(r.runSpec) : undefined;
  const typed: LooseRunSpec = runSpec ?? looseRunSpec(value);
  const envFile = typed.env_file;
  return {
    specPath,
    specText,
    spec,
    ...(runSpec ? { runSpec } : {}),
    typed,
    ...(r.root ? { root: r.root } : {}),
    name: typed.name ?? base,
    errors: r.diagnostics.filter((d) => d.severity === 'error'),
    warnings: r.diagnostics.filter((d) => d.severity === 'warning'),
    workspaceDir: dir,
    ...(envFile ? { envFile: isAbsolute(envFile) ? envFile : resolve(join(dir, envFile)) } : {}),
    teardown: {
      policy: typed.teardown?.policy ?? RUN_SPEC_DEFAULTS.teardown.policy,
      idleMinutes: typed.teardown?.idle_minutes ?? RUN_SPEC_DEFAULTS.teardown.idle_minutes,
    },
    target: typed.target ?? {},
    ownScript: typed.command !== undefined,
  };
}

export interface FitLine {
  readonly gpu: string;
  readonly label: string;
  readonly fits: boolean | undefined;
  readonly estimate?: RunSpecEstimate;
}

/** The fit of this spec on each GPU (the A100 command shows 40 GB and 80 GB side by side). */
export function fitOn(plan: RunPlan, gpuIds: readonly string[], files: FileAccess): FitLine[] {
  const root = plan.root ?? validateText(plan.specText, { fileName: plan.specPath, kind: 'runspec', files }).root;
  return gpuIds.map((id) => {
    const gpu = findGpu(id);
    if (!gpu) return { gpu: id, label: `${id}: unknown GPU`, fits: undefined };
    const e = estimateRunSpecOrWhy(root, plan.specPath, files, gpu);
    if ('reason' in e) return { gpu: id, label: `${id}: ${e.message}`, fits: undefined };
    return { gpu: id, label: estimateLabel(e), fits: e.fits, estimate: e };
  });
}

/**
 * The env file's text, only when it really lies inside `root` (the workspace folder): a spec is workspace
 * content, and `env_file: ../../.aws/credentials`, an absolute path or a symlink out of the folder would ship
 * the user's other secrets to the host. Resolved with realpath, so links are followed before the check.
 */
export function readEnvFileWithin(envFile: string, root: string): { text: string; path: string } | { error: string } {
  let real: string;
  let realRoot: string;
  try {
    realRoot = realpathSync(root);
  } catch {
    return { error: `the workspace folder ${root} cannot be read` };
  }
  try {
    real = realpathSync(envFile);
  } catch {
    return { error: `env_file ${envFile} does not exist` };
  }
  const rel = relative(realRoot, real);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
    return { error: `env_file ${envFile} resolves to ${real}, outside the workspace folder ${realRoot}: only a file inside it is sent to the host` };
  }
  try {
    if (!statSync(real).isFile()) return { error: `env_file ${envFile} is not a file` };
    return { text: readFileSync(real, 'utf8'), path: real };
  } catch (e) {
    return { error: `env_file ${envFile} cannot be read: ${(e as Error).message}` };
  }
}

const HF_TOKEN_NAMES = ['HF_TOKEN', 'HUGGING_FACE_HUB_TOKEN', 'HUGGINGFACE_TOKEN'];

/** A Hub reference (org/name, hf://…), as opposed to a path on the host or a local file. */
function isHubRef(v: unknown): boolean {
  if (typeof v !== 'string' || v === '') return false;
  if (v.startsWith('hf://')) return true;
  if (/^[./~]/.test(v) || /\.(jsonl?|csv|tsv|parquet|arrow|txt)$/i.test(v)) return false;
  return /^[\w.-]+\/[\w.-]+$/.test(v);
}

/** What makes the host's AWS SDKs use keys from the environment instead of the instance's role. */
const AWS_KEY_NAMES = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_SECURITY_TOKEN', 'AWS_CREDENTIAL_EXPIRATION', 'AWS_PROFILE'];

/**
 * Secrets go to a host only where the run uses them: the W&B key not when `wandb.enabled: false`, a Hugging
 * Face token only when something is fetched from or pushed to the Hub (a hub model or dataset, an hf://
 * upload) or the user's own script runs (it may download anything), AWS keys not to an EC2 instance that has
 * target.iam_instance_profile.
 */

export function dropUnneededSecrets(env: Readonly<Record<string, string>>, spec: RunSpec | undefined): { env: Record<string, string>; dropped: string[] } {
  const wandbOff = spec?.wandb?.enabled === false;
  const hubUsed = spec?.command !== undefined || [spec?.model?.id, spec?.data?.train, spec?.data?.eval, spec?.outputs?.upload].some(isHubRef);
  // An EC2 instance with a role reads S3 through IMDS: shipped keys would win over the role (the SDKs' chain
  // reads the environment first) and expire inside a long run.
  const roleOnHost = spec?.target.provider === 'ec2' && spec.target.iam_instance_profile !== undefined;
  const out: Record<string, string> = {};
  const dropped: string[] = [];
  for (const [k, v] of Object.entries(env)) {
    if ((k === 'WANDB_API_KEY' && wandbOff) || (HF_TOKEN_NAMES.includes(k) && !hubUsed) || (roleOnHost && AWS_KEY_NAMES.includes(k))) dropped.push(k);
    else out[k] = v;
  }
  return { env: out, dropped };
}

/**
 * The variables written to the host's 0600 env file: the spec's env_file, then secrets from the
 * editor's secret store (they win). Values never leave this object except into that file.
 */
export function collectEnv(envFileText: string | undefined, secrets: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const env: Record<string, string> = {};
  // A dotted name (python-dotenv allows it) cannot be exported by the shell that sources the env file; the
  // .env diagnostics say so (RFT608), and the run starts without it instead of failing.
  if (envFileText !== undefined) for (const e of parseDotenv(envFileText).entries) if (isShellName(e.key)) env[e.key] = e.value;
  for (const [k, v] of Object.entries(secrets)) if (v) env[k] = v;
  return env;
}

/** For an out-of-memory failure: the estimate on the run's GPU and its cheapest fixes, in one sentence. */
export function oomAdvice(specPath: string, gpu: string | undefined, files: FileAccess): string | undefined {
  if (!specPath || !gpu || !existsSync(specPath)) return undefined;
  const plan = planRun(specPath, readFileSync(specPath, 'utf8'), files);
  const fit = fitOn(plan, [gpu], files)[0];
  const advice = fit?.estimate?.advice.map((a) => a.title);
  return advice && advice.length > 0 ? `Estimate ${fit?.label}. Cheapest fixes: ${advice.join('; ')}.` : undefined;
}

/**
 * Where the host will send the run's outputs with the run's credentials, as sentences for the start
 * confirmation: the spec is a workspace file, so the person sees the destinations before anything starts.
 */
export function outputDestinations(spec: RunSpec): string[] {
  const outputs = spec.outputs ?? {};
  const out: string[] = [];
  if (outputs.upload !== undefined) out.push(`The adapter is uploaded to ${outputs.upload} from the host.`);
  if (outputs.checkpoints !== undefined) out.push(`Checkpoints are copied to ${outputs.checkpoints} from the host while it trains.`);
  return out;
}
