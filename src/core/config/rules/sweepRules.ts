// W&B sweep rules: the top-level method and metric, then one table run on every parameter (nested ones too).
import type { DocNode, ScalarNode } from '../ast';
import { nodeAt, scalarAt } from '../ast';
import type { ConfigDiagnostic, Fix } from '../types';
import type { RuleContext } from './crossChecks';
import { insertKey, replaceNode } from '../edits';
import type { Rule } from './ruleTable';
import { nodeRange, runRules } from './ruleTable';

const LOG_VALUES = new Set(['log_uniform_values', 'q_log_uniform_values', 'inv_log_uniform_values']);
const INT_DISTS = new Set(['int_uniform']);
const GRID_DISTS = new Set(['int_uniform', 'q_uniform']);

function fixesForMethod(ctx: RuleContext): Fix[] {
  const e = ctx.root?.kind === 'map' ? insertKey(ctx.text, ctx.root, 'method', 'random', ctx.syntax) : undefined;
  return e ? [{ title: "Add 'method: random'", edits: [e] }] : [];
}

/** wandb/sweeps' schema requires a method; a Launch sweep run by a scheduler job (optuna, a custom
 *  one) takes it from the scheduler instead. */
function methodMissing(ctx: RuleContext): ConfigDiagnostic[] {
  if (nodeAt(ctx.root, ['method']) !== undefined || nodeAt(ctx.root, ['scheduler']) !== undefined || ctx.root?.kind !== 'map') return [];
  const first = ctx.root.pairs[0];
  if (!first) return [];
  return [
    {
      ...nodeRange(first.key),
      severity: 'error',
      code: 'RFT501',
      message: "Missing required key 'method' in the top level: add method: random, grid or bayes (bayes also needs metric).",
      fixes: fixesForMethod(ctx),
    },
  ];
}

function bayesNeedsMetric(ctx: RuleContext): ConfigDiagnostic[] {
  if (scalarAt(ctx.root, ['method']) !== 'bayes' || nodeAt(ctx.root, ['metric']) !== undefined) return [];
  const n = nodeAt(ctx.root, ['method'])!;
  return [
    {
      ...nodeRange(n),
      severity: 'error',
      code: 'RFT513',
      message: 'Bayesian search needs a metric to optimise: add metric with name (e.g. eval/loss) and goal (minimize), or use random search.',
      fixes: [{ title: 'Use random search', edits: [replaceNode(n, 'random', ctx.syntax)] }],
    },
  ];
}

/** One parameter of the sweep, with what every parameter rule reads. */
interface SweepParameter {
  readonly ctx: RuleContext;
  readonly name: string;
  readonly key: DocNode;
  readonly get: (k: string) => DocNode | undefined;
  readonly dist: DocNode | undefined;
  readonly distName: string | undefined;
  readonly min: DocNode | undefined;
  readonly max: DocNode | undefined;
  readonly minV: number | undefined;
  readonly maxV: number | undefined;
  readonly hasValues: boolean;
}

function parameterOf(ctx: RuleContext, key: ScalarNode, spec: DocNode): SweepParameter {
  const get = (k: string): DocNode | undefined => nodeAt(spec, [k]);
  const dist = get('distribution');
  const min = get('min');
  const max = get('max');
  return {
    ctx,
    name: String(key.value),
    key,
    get,
    dist,
    distName: dist?.kind === 'scalar' ? String(dist.value) : undefined,
    min,
    max,
    minV: min?.kind === 'scalar' && typeof min.value === 'number' ? min.value : undefined,
    maxV: max?.kind === 'scalar' && typeof max.value === 'number' ? max.value : undefined,
    hasValues: get('values') !== undefined || get('value') !== undefined,
  };
}

function parameterEmpty(p: SweepParameter): ConfigDiagnostic[] {
  if (p.hasValues || p.dist || p.get('parameters') !== undefined || p.minV !== undefined) return [];
  return [
    {
      ...nodeRange(p.key),
      severity: 'error',
      code: 'RFT514',
      message: `Parameter ${p.name} has no value, values or distribution: add values: [...] or a distribution with min and max.`,
    },
  ];
}

function minBelowMax({ ctx, name, min, max, minV, maxV }: SweepParameter): ConfigDiagnostic[] {
  if (minV === undefined || maxV === undefined || minV < maxV || !max) return [];
  return [
    {
      ...nodeRange(max),
      severity: 'error',
      code: 'RFT510',
      message: `${name}: max (${maxV}) must be greater than min (${minV}).`,
      fixes: [{ title: 'Swap min and max', edits: [replaceNode(min!, maxV, ctx.syntax), replaceNode(max, minV, ctx.syntax)], preferred: true }],
    },
  ];
}

function logMinPositive({ name, distName, min, minV }: SweepParameter): ConfigDiagnostic[] {
  if (!distName || !LOG_VALUES.has(distName) || minV === undefined || minV > 0 || !min) return [];
  return [
    {
      ...nodeRange(min),
      severity: 'error',
      code: 'RFT511',
      message: `${name}: ${distName} draws between the values min and max on a log scale, so min must be > 0 (got ${minV}). For learning rates use e.g. 1e-5.`,
    },
  ];
}

function logUniformExponents({ ctx, name, dist, distName, min, minV, maxV }: SweepParameter): ConfigDiagnostic[] {
  if (distName !== 'log_uniform' || minV === undefined || maxV === undefined || !min || !(minV > 0 && maxV < 1 && maxV > 0)) return [];
  return [
    {
      ...nodeRange(dist!),
      severity: 'warning',
      code: 'RFT511',
      message: `${name}: log_uniform takes min/max as natural-log exponents (e^${minV} … e^${maxV}); these look like the values themselves. Use log_uniform_values.`,
      fixes: [{ title: 'Change to log_uniform_values', edits: [replaceNode(dist!, 'log_uniform_values', ctx.syntax)], preferred: true }],
    },
  ];
}

function integerBounds({ ctx, name, distName, min, max }: SweepParameter): ConfigDiagnostic[] {
  if (!distName || !INT_DISTS.has(distName)) return [];
  const out: ConfigDiagnostic[] = [];
  for (const b of [min, max])
    if (b?.kind === 'scalar' && typeof b.value === 'number' && !Number.isInteger(b.value))
      out.push({
        ...nodeRange(b),
        severity: 'error',
        code: 'RFT512',
        message: `${name}: int_uniform needs integer bounds (got ${b.value}).`,
        fixes: [{ title: `Set to ${Math.round(b.value)}`, edits: [replaceNode(b, Math.round(b.value), ctx.syntax)] }],
      });
  return out;
}

/** wandb/sweeps' grid search expands bounded int_uniform and q_uniform into their values (grid_search.py); every
 *  other distribution has no finite grid. Without a distribution it infers int_uniform from integer bounds
 *  (written as integers: 1.0 is a float to Python). */
function gridNeedsDiscrete(p: SweepParameter): ConfigDiagnostic[] {
  const { ctx } = p;
  const intLiteral = (n: DocNode | undefined): boolean =>
    n?.kind === 'scalar' && typeof n.value === 'number' && /^[-+]?\d+$/.test(ctx.text.slice(n.start, n.end));
  const effectiveDist = p.distName ?? (intLiteral(p.min) && intLiteral(p.max) ? 'int_uniform' : undefined);
  const discrete = p.hasValues || p.get('parameters') !== undefined || (effectiveDist !== undefined && GRID_DISTS.has(effectiveDist));
  if (scalarAt(ctx.root, ['method']) !== 'grid' || discrete) return [];
  const m = nodeAt(ctx.root, ['method']);
  return [
    {
      ...nodeRange(p.key),
      severity: 'error',
      code: 'RFT514',
      message: `Grid search needs discrete values: give ${p.name} values: [...] or an int_uniform/q_uniform range (or use method random/bayes).`,
      ...(m ? { fixes: [{ title: 'Use random search', edits: [replaceNode(m, 'random', ctx.syntax)] }] } : {}),
    },
  ];
}

function probabilitiesSum({ name, get }: SweepParameter): ConfigDiagnostic[] {
  const probs = get('probabilities');
  if (probs?.kind !== 'seq') return [];
  const sum = probs.items.reduce((s, it) => s + (it.kind === 'scalar' && typeof it.value === 'number' ? it.value : 0), 0);
  return Math.abs(sum - 1) > 1e-6 ? [{ ...nodeRange(probs), severity: 'error', code: 'RFT512', message: `${name}: probabilities sum to ${sum}, not 1.` }] : [];
}

export const SWEEP_PARAMETER_RULES: readonly Rule<SweepParameter>[] = [
  { id: 'sweep.parameter-empty', check: parameterEmpty },
  { id: 'sweep.min-below-max', check: minBelowMax },
  { id: 'sweep.log-min-positive', check: logMinPositive },
  { id: 'sweep.log-uniform-exponents', check: logUniformExponents },
  { id: 'sweep.integer-bounds', check: integerBounds },
  { id: 'sweep.grid-needs-discrete', check: gridNeedsDiscrete },
  { id: 'sweep.probabilities-sum', check: probabilitiesSum },
];

/** Every parameter, nested `parameters` included (at most 8 deep), through the parameter table. */
function parameterRules(ctx: RuleContext): ConfigDiagnostic[] {
  const out: ConfigDiagnostic[] = [];
  const walk = (map: DocNode | undefined, depth: number): void => {
    if (map?.kind !== 'map' || depth > 8) return;
    for (const p of map.pairs) {
      if (p.value?.kind !== 'map') continue;
      out.push(...runRules(SWEEP_PARAMETER_RULES, parameterOf(ctx, p.key, p.value)));
      walk(nodeAt(p.value, ['parameters']), depth + 1);
    }
  };
  walk(nodeAt(ctx.root, ['parameters']), 0);
  return out;
}

export const SWEEP_RULES: readonly Rule<RuleContext>[] = [
  { id: 'sweep.method-missing', check: methodMissing },
  { id: 'sweep.bayes-needs-metric', check: bayesNeedsMetric },
  { id: 'sweep.parameters', check: parameterRules },
];

export function checkSweep(ctx: RuleContext): ConfigDiagnostic[] {
  return runRules(SWEEP_RULES, ctx);
}
