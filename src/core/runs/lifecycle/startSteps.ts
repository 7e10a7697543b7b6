// Start Training's decisions, without VS Code: from the spec's plan, the GPU/target facts and the person's
// answers so far, the next step as data — what to ask, what to refuse and why, or the StartRequest for the
// RunManager. The command (features/runs/startTraining.ts) asks, and feeds each answer back in.
import { relative } from 'node:path';
import { describeDiagnostic, fitOn, planRun, readEnvFileWithin } from './runPlan';
import type { FitLine, RunPlan } from './runPlan';
import { hostsOf, machinesOf } from './multiNode';
import type { RunTarget, StartRequest } from './runTypes';
import { startEstimate } from '../cost/startEstimate';
import type { StartEstimate, TargetChoice } from '../cost/startEstimate';
import { countExamples } from '../view/dataExamples';
import { isGpuId } from '../../gpu/catalog';
import type { FileAccess } from '../../config/types';
import type { ResolvedRunSpec } from '../../config/runSpecDefaults';
import type { RunRecord } from '../store/runRecord';
import type { RunHardware } from '../view/runHardware';
import type { CloudKey } from '../hosts/cloudKey';

export type { TargetChoice };
export const A100_GPUS = ['A100-40GB', 'A100-80GB'] as const;

/** Run Again's arguments: the last run's GPU and SSH host (a cloud run's instance is gone: its GPU only). */
export interface StartAgain {
  readonly gpu?: string;
  readonly host?: string;
}

/** What the steps read besides the answers; fixed for one run of the command. */
export interface StartContext {
  readonly trusted: boolean;
  /** "Start Training on A100": the GPU is an A100, whatever the spec says. */
  readonly a100: boolean;
  readonly again?: StartAgain;
  /** The spec's files as the editor has them (unsaved text over the disk). */
  readonly files: (specPath: string) => FileAccess;
  /** Past runs: the person's own run of this case speaks before the model. */
  readonly pastRuns: () => readonly RunRecord[];
  /** The workspace folder that holds the spec: the env file must lie inside it. */
  readonly workspaceRootOf: (specPath: string) => string | undefined;
  /** A path as the person reads it (relative to the workspace). */
  readonly displayPath: (path: string) => string;
  readonly countExamples?: (absPath: string) => number | undefined;
  /** The fit on each GPU; fitOn over `files` unless given. The spec's own check refuses a spec that does not fit
   *  the GPU it is checked for, so this is the last word only where the estimates differ. */
  readonly fitOn?: (plan: RunPlan, gpus: readonly string[]) => FitLine[];
}

/** The host check and the confirmation passed: the run's variables and what the probe found. */
export interface StartGatePassed {
  readonly env: Readonly<Record<string, string>>;
  readonly hardware?: RunHardware;
}

/** The person's answers so far; `null` or `false`: cancelled or declined. */
export interface StartAnswers {
  readonly spec?: { readonly path: string; readonly text: string } | null;
  readonly warnings?: boolean;
  readonly gpu?: string | null;
  readonly noFit?: boolean;
  readonly target?: TargetChoice | null;
  readonly gate?: StartGatePassed | null;
  readonly cloudKey?: CloudKey;
}

/** Everything the confirmation and the start need, once the target is known. */
export interface StartReady extends StartEstimate {
  readonly plan: RunPlan;
  readonly runSpec: ResolvedRunSpec;
  readonly gpus: readonly string[];
  readonly fitText: string;
  readonly choice: TargetChoice;
  /** A multi-node spec's hosts (rank 0 first): reached only after the confirmation. */
  readonly machineHosts?: readonly string[];
  readonly where: string;
  readonly envRead?: { readonly text: string; readonly path: string };
  readonly envName: string;
  /** The synced folder as the person reads it. */
  readonly folderName: string;
}

export type StartRefusal = 'untrusted' | 'specErrors' | 'envFile';

export type StartStep =
  | { readonly kind: 'refuse'; readonly reason: StartRefusal; readonly message: string; readonly detail?: string }
  | { readonly kind: 'pickSpec' }
  | { readonly kind: 'confirmWarnings'; readonly message: string; readonly detail: string }
  | { readonly kind: 'pickGpu'; readonly current?: string }
  | { readonly kind: 'confirmNoFit'; readonly message: string; readonly fixes?: string }
  | { readonly kind: 'pickTarget'; readonly plan: RunPlan; readonly gpus: readonly string[]; readonly fitText: string }
  | { readonly kind: 'gate'; readonly ready: StartReady }
  | { readonly kind: 'cloudKey' }
  | { readonly kind: 'start'; readonly ready: StartReady; readonly request: StartRequest }
  /** Nothing is started: a pick was cancelled, a question declined, or the spec has no typed form. */
  | { readonly kind: 'end' };

// The steps are asked again after each answer: per context (one run of the command), the spec is checked, the fit
// estimated and the data counted once per answer that changes them, not once per step.
interface StartCaches {
  readonly plans: WeakMap<object, Map<string, RunPlan>>;
  readonly fits: WeakMap<object, Map<string, FitLine[]>>;
  readonly readies: WeakMap<object, Map<string, StartReady | StartStep>>;
}
const caches = new WeakMap<StartContext, StartCaches>();

function cachesOf(ctx: StartContext): StartCaches {
  const have = caches.get(ctx);
  if (have) return have;
  const made: StartCaches = { plans: new WeakMap(), fits: new WeakMap(), readies: new WeakMap() };
  caches.set(ctx, made);
  return made;
}

function memo<V>(cache: WeakMap<object, Map<string, V>>, key: object, sub: string, make: () => V): V {
  const inner = cache.get(key) ?? new Map<string, V>();
  cache.set(key, inner);
  const hit = inner.get(sub);
  if (hit !== undefined) return hit;
  const made = make();
  inner.set(sub, made);
  return made;
}

/** The GPU the spec is checked for: "on A100" and Run Again check for the GPU the run will get, not target.gpu. */
export function checkedGpu(ctx: Pick<StartContext, 'a100' | 'again'>): string | undefined {
  return ctx.a100 ? A100_GPUS[0] : ctx.again?.gpu;
}

/** The GPUs the run asks for without asking the person, or undefined when the picker must ask. */
function knownGpus(ctx: StartContext, plan: RunPlan): readonly string[] | undefined {
  if (ctx.a100) return A100_GPUS;
  if (ctx.again?.gpu) return [ctx.again.gpu];
  // The spec names its GPU: asking again would only echo it ("on A100", or an edit of target.gpu, picks another).
  if (typeof plan.target.gpu === 'string' && isGpuId(plan.target.gpu)) return [plan.target.gpu];
  return undefined;
}

function fitTextOf(plan: RunPlan, gpus: readonly string[], fits: readonly FitLine[]): string {
  // An own script's memory is the script's business: no estimate to show for it.
  return plan.ownScript && fits.every((f) => f.fits === undefined) ? `your own command on ${gpus.join(' / ')}` : fits.map((f) => f.label).join(' · ');
}

function planChecks(ctx: StartContext, plan: RunPlan, a: StartAnswers): StartStep | undefined {
  if (plan.errors.length > 0)
    return {
      kind: 'refuse',
      reason: 'specErrors',
      message: `${plan.errors.length} error(s) in ${ctx.displayPath(plan.specPath)} block the run.`,
      detail: plan.errors
        .slice(0, 3)
        .map((d) => describeDiagnostic(plan.specText, d))
        .join('\n'),
    };
  if (plan.warnings.length > 0 && a.warnings !== true) {
    if (a.warnings === false) return { kind: 'end' };
    return {
      kind: 'confirmWarnings',
      message: `${plan.warnings.length} warning(s) in the run spec. Start anyway?`,
      detail: plan.warnings
        .slice(0, 5)
        .map((d) => describeDiagnostic(plan.specText, d))
        .join('\n'),
    };
  }
  return undefined;
}

function readyOf(
  ctx: StartContext,
  plan: RunPlan,
  runSpec: ResolvedRunSpec,
  gpus: readonly string[],
  fits: readonly FitLine[],
  choice: TargetChoice,
  machineHosts?: readonly string[],
): StartReady | StartStep {
  const where = machineHosts
    ? `${machineHosts.length} machines (${machineHosts.join(', ')})`
    : choice.kind === 'ssh'
      ? choice.host
      : `a new ${choice.provider.kind} ${choice.offer.instanceType}`;
  // The env file must lie inside the workspace folder (links resolved): its values go to the host.
  const root = ctx.workspaceRootOf(plan.specPath) ?? plan.workspaceDir;
  const envRead = plan.envFile ? readEnvFileWithin(plan.envFile, root) : undefined;
  if (envRead && 'error' in envRead) return { kind: 'refuse', reason: 'envFile', message: `${plan.name} was not started: ${envRead.error}.` };
  const estimate = startEstimate({ plan, runSpec, gpus, fits, choice, pastRuns: ctx.pastRuns(), countExamples: ctx.countExamples ?? countExamples });
  return {
    ...estimate,
    plan,
    runSpec,
    gpus,
    fitText: fitTextOf(plan, gpus, fits),
    choice,
    ...(machineHosts ? { machineHosts } : {}),
    where,
    ...(envRead ? { envRead } : {}),
    envName: envRead ? ctx.displayPath(envRead.path) : '',
    folderName: ctx.displayPath(plan.workspaceDir),
  };
}

function requestOf(ready: StartReady, gate: StartGatePassed, key: CloudKey | undefined): StartRequest | undefined {
  const { plan, choice, envRead } = ready;
  let target: RunTarget;
  if (choice.kind === 'ssh') target = { kind: 'ssh', host: choice.host };
  else if (key) target = { kind: 'cloud', provider: choice.provider, offer: choice.offer, sshPublicKey: key.publicKey, identityFile: key.privateKeyPath };
  else return undefined;
  const envFileRel = envRead ? relative(plan.workspaceDir, envRead.path) : undefined;
  return {
    specPath: plan.specPath,
    specText: plan.specText,
    spec: plan.spec,
    runSpec: ready.runSpec,
    name: plan.name,
    workspaceDir: plan.workspaceDir,
    env: gate.env,
    target,
    gpu: ready.gpus[0] ?? '',
    ...(gate.hardware ? { hardware: gate.hardware } : {}),
    teardown: plan.teardown,
    ...(ready.estimated ? { estimated: ready.estimated } : {}),
    ...(envFileRel !== undefined && !envFileRel.startsWith('..') ? { envFileRel } : {}),
  };
}

/** The next step of Start Training for these answers. */
export function nextStartStep(ctx: StartContext, a: StartAnswers): StartStep {
  if (!ctx.trusted)
    return {
      kind: 'refuse',
      reason: 'untrusted',
      message: 'Starting a run connects to hosts and runs code: trust this workspace first. Config checks work without trust.',
    };
  if (a.spec === undefined) return { kind: 'pickSpec' };
  if (a.spec === null) return { kind: 'end' };
  const spec = a.spec;
  const gpuOverride = checkedGpu(ctx);
  const plan = memo(cachesOf(ctx).plans, spec, gpuOverride ?? '', () =>
    planRun(spec.path, spec.text, ctx.files(spec.path), gpuOverride ? { gpu: gpuOverride } : {}),
  );
  const refused = planChecks(ctx, plan, a);
  if (refused) return refused;
  // A plan without errors is one the schema accepted: its typed spec is what the start reads.
  const runSpec = plan.runSpec;
  if (!runSpec) return { kind: 'end' };

  const picked = a.gpu ? [a.gpu] : undefined;
  const gpus = knownGpus(ctx, plan) ?? picked;
  if (!gpus && a.gpu === null) return { kind: 'end' };
  if (!gpus) return { kind: 'pickGpu', ...(typeof plan.target.gpu === 'string' ? { current: plan.target.gpu } : {}) };
  const fits = memo(cachesOf(ctx).fits, plan, gpus.join('\n'), () => (ctx.fitOn ? ctx.fitOn(plan, gpus) : fitOn(plan, gpus, ctx.files(plan.specPath))));
  const fitText = fitTextOf(plan, gpus, fits);
  if (fits.length > 0 && fits.every((f) => f.fits === false) && a.noFit !== true) {
    if (a.noFit === false) return { kind: 'end' };
    const fixes = fits[fits.length - 1]?.estimate?.advice.map((x) => x.title).join('; ');
    return { kind: 'confirmNoFit', message: `The estimate says this run does not fit: ${fitText}`, ...(fixes ? { fixes: `Cheapest fixes: ${fixes}` } : {}) };
  }
  // A multi-node run goes to the hosts its spec lists (target.hosts, rank 0 first): no picker for one host. The
  // spec's checks (RFT830) and the start itself (runStart.ts) say what is wrong with a multi-node spec.
  const machineHosts = machinesOf(runSpec) > 1 ? hostsOf(runSpec) : undefined;
  const choice: TargetChoice | null | undefined = machineHosts
    ? { kind: 'ssh', host: machineHosts[0]! }
    : ctx.again?.host
      ? { kind: 'ssh', host: ctx.again.host }
      : a.target;
  if (choice === undefined) return { kind: 'pickTarget', plan, gpus, fitText };
  if (choice === null) return { kind: 'end' };

  // Keyed on the picked target (or, without a picker, the plan): the data files are counted once.
  const ready = memo(cachesOf(ctx).readies, a.target ?? plan, gpus.join('\n'), () => readyOf(ctx, plan, runSpec, gpus, fits, choice, machineHosts));
  if ('kind' in ready) return ready;
  if (a.gate === undefined) return { kind: 'gate', ready };
  if (a.gate === null) return { kind: 'end' };
  if (choice.kind === 'cloud' && !a.cloudKey) return { kind: 'cloudKey' };
  const request = requestOf(ready, a.gate, a.cloudKey);
  return request ? { kind: 'start', ready, request } : { kind: 'end' };
}
