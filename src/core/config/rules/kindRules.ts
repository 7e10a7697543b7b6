// Rules that belong to one kind: accelerate process counts, DeepSpeed batch arithmetic, sweep bounds.
import type { DocNode } from '../ast';
import { nodeAt, scalarAt, keyText } from '../ast';
import type { ConfigDiagnostic, Fix } from '../types';
import type { RuleContext } from './crossChecks';
import { setValue } from './crossChecks';
import { insertKey, replaceNode } from '../edits';
import { plural } from '../plainText';

const range = (n: { start: number; end: number }): { start: number; end: number } => ({ start: n.start, end: Math.max(n.end, n.start + 1) });

export function checkAccelerate(ctx: RuleContext): ConfigDiagnostic[] {
  const out: ConfigDiagnostic[] = [];
  const dt = scalarAt(ctx.root, ['distributed_type']);
  const npNode = nodeAt(ctx.root, ['num_processes']);
  const np = scalarAt(ctx.root, ['num_processes']);
  // accelerate launch takes distributed_type NO as a single-process launch (simple_launcher) and never
  // reads num_processes: nothing fails, the GPUs just go unused, so a warning.
  if (dt === 'NO' && typeof np === 'number' && np > 1 && npNode) {
    out.push({
      ...range(npNode),
      severity: 'warning',
      code: 'RFT805',
      message: `distributed_type is NO, so accelerate starts one process and ignores num_processes: ${np}. Set distributed_type to MULTI_GPU (or DEEPSPEED/FSDP) to use ${np} GPUs, or num_processes to 1.`,
      fixes: [{ title: 'Set num_processes to 1', edits: [replaceNode(npNode, 1, ctx.syntax)] }],
    });
  }
  if (dt === 'DEEPSPEED' && nodeAt(ctx.root, ['deepspeed_config']) === undefined) {
    const n = nodeAt(ctx.root, ['distributed_type'])!;
    out.push({
      ...range(n),
      severity: 'error',
      code: 'RFT805',
      message: 'distributed_type is DEEPSPEED but there is no deepspeed_config section: add deepspeed_config with zero_stage (or deepspeed_config_file).',
    });
  }
  // RFT809: the DeepSpeed section and mixed_precision must agree, or accelerate raises at launch.
  const mp = scalarAt(ctx.root, ['mixed_precision']);
  const dsBf = nodeAt(ctx.root, ['deepspeed_config', 'bf16', 'enabled']);
  if (dsBf?.kind === 'scalar' && dsBf.value === true && typeof mp === 'string' && mp !== 'bf16') {
    out.push({
      ...range(dsBf),
      severity: 'error',
      code: 'RFT809',
      message: `deepspeed_config.bf16.enabled is true but mixed_precision is ${mp}: make them agree.`,
      fixes: [{ title: `Set mixed_precision to bf16`, edits: [setValue(ctx, ['mixed_precision'], 'bf16')!], preferred: true }],
    });
  }
  // accelerate loads this file with PyYAML (YAML 1.1), where bare no/yes/on/off are booleans: a bare
  // `distributed_type: NO` arrives as False. `accelerate config` quotes them for that reason.
  for (const k of ['distributed_type', 'downcast_bf16', 'mixed_precision']) {
    const n = nodeAt(ctx.root, [k]);
    if (n?.kind === 'scalar' && !n.quoted && typeof n.value === 'string' && /^(no|yes|on|off|y|n)$/i.test(n.value)) {
      out.push({
        ...range(n),
        severity: 'warning',
        code: 'RFT817',
        message: `accelerate reads this file as YAML 1.1, where a bare ${n.value} means the boolean ${/^(no|off|n)$/i.test(n.value) ? 'false' : 'true'}: write '${n.value}' in quotes.`,
        fixes: [{ title: `Quote '${n.value}'`, edits: [{ start: n.start, end: n.end, newText: `'${n.value}'` }], preferred: true }],
      });
    }
  }
  const useCpu = scalarAt(ctx.root, ['use_cpu']);
  if (useCpu === true && typeof mp === 'string' && (mp === 'fp16' || mp === 'fp8')) {
    const n = nodeAt(ctx.root, ['mixed_precision'])!;
    out.push({
      ...range(n),
      severity: 'error',
      code: 'RFT809',
      message: `use_cpu is true but mixed_precision is ${mp}; CPUs train in no or bf16.`,
      fixes: [{ title: 'Set mixed_precision to no', edits: [replaceNode(n, 'no', ctx.syntax)], preferred: true }],
    });
  }
  return out;
}

/** RFT806: train_batch_size = micro batch × accumulation × world size (DeepSpeed checks this at init). */
export function checkDeepSpeedBatch(ctx: RuleContext, worldSize: number | undefined): ConfigDiagnostic[] {
  const tbsNode = nodeAt(ctx.root, ['train_batch_size']);
  const micro = scalarAt(ctx.root, ['train_micro_batch_size_per_gpu']);
  const acc = scalarAt(ctx.root, ['gradient_accumulation_steps']);
  if (tbsNode?.kind !== 'scalar' || typeof tbsNode.value !== 'number' || typeof micro !== 'number' || typeof acc !== 'number') return [];
  const tbs = tbsNode.value;
  const per = micro * acc;
  if (worldSize !== undefined) {
    const want = per * worldSize;
    if (want === tbs) return [];
    return [
      {
        ...range(tbsNode),
        severity: 'error',
        code: 'RFT806',
        message: `train_batch_size ${tbs} ≠ micro batch ${micro} × accumulation ${acc} × ${plural(worldSize, 'GPU')} = ${want}; DeepSpeed stops at start-up. Use ${want} or "auto".`,
        fixes: [
          { title: `Set to ${want}`, edits: [replaceNode(tbsNode, want, ctx.syntax)], preferred: true },
          { title: 'Set to "auto"', edits: [replaceNode(tbsNode, 'auto', ctx.syntax)] },
        ],
      },
    ];
  }
  if (tbs % per === 0) return [];
  return [
    {
      ...range(tbsNode),
      severity: 'error',
      code: 'RFT806',
      message: `train_batch_size ${tbs} is not micro batch ${micro} × accumulation ${acc} × a whole number of GPUs; DeepSpeed stops at start-up. Use a multiple of ${per} or "auto".`,
      fixes: [{ title: 'Set to "auto"', edits: [replaceNode(tbsNode, 'auto', ctx.syntax)], preferred: true }],
    },
  ];
}

export function deepSpeedStage(root: DocNode | undefined): number | undefined {
  const s = scalarAt(root, ['zero_optimization', 'stage']);
  return typeof s === 'number' ? s : undefined;
}

function fixesForMethod(ctx: RuleContext): Fix[] {
  const e = ctx.root?.kind === 'map' ? insertKey(ctx.text, ctx.root, 'method', 'random', ctx.syntax) : undefined;
  return e ? [{ title: "Add 'method: random'", edits: [e] }] : [];
}

const LOG_VALUES = new Set(['log_uniform_values', 'q_log_uniform_values', 'inv_log_uniform_values']);
const INT_DISTS = new Set(['int_uniform']);
const GRID_DISTS = new Set(['int_uniform', 'q_uniform']);

export function checkSweep(ctx: RuleContext): ConfigDiagnostic[] {
  const out: ConfigDiagnostic[] = [];
  const method = scalarAt(ctx.root, ['method']);
  // wandb/sweeps' schema requires a method; a Launch sweep run by a scheduler job (optuna, a custom
  // one) takes it from the scheduler instead.
  if (nodeAt(ctx.root, ['method']) === undefined && nodeAt(ctx.root, ['scheduler']) === undefined && ctx.root?.kind === 'map') {
    const first = ctx.root.pairs[0];
    if (first)
      out.push({
        ...range(first.key),
        severity: 'error',
        code: 'RFT501',
        message: "Missing required key 'method' in the top level: add method: random, grid or bayes (bayes also needs metric).",
        fixes: fixesForMethod(ctx),
      });
  }
  if (method === 'bayes' && nodeAt(ctx.root, ['metric']) === undefined) {
    const n = nodeAt(ctx.root, ['method'])!;
    out.push({
      ...range(n),
      severity: 'error',
      code: 'RFT513',
      message: 'Bayesian search needs a metric to optimise: add metric with name (e.g. eval/loss) and goal (minimize), or use random search.',
      fixes: [{ title: 'Use random search', edits: [replaceNode(n, 'random', ctx.syntax)] }],
    });
  }
  const params = nodeAt(ctx.root, ['parameters']);
  const intLiteral = (n: DocNode | undefined): boolean =>
    n?.kind === 'scalar' && typeof n.value === 'number' && /^[-+]?\d+$/.test(ctx.text.slice(n.start, n.end));
  const walk = (map: DocNode | undefined, depth: number): void => {
    if (map?.kind !== 'map' || depth > 8) return;
    for (const p of map.pairs) {
      const spec = p.value;
      if (spec?.kind !== 'map') continue;
      const get = (k: string): DocNode | undefined => nodeAt(spec, [k]);
      const dist = get('distribution');
      const distName = dist?.kind === 'scalar' ? String(dist.value) : undefined;
      const min = get('min');
      const max = get('max');
      const minV = min?.kind === 'scalar' && typeof min.value === 'number' ? min.value : undefined;
      const maxV = max?.kind === 'scalar' && typeof max.value === 'number' ? max.value : undefined;
      const name = keyText(p);
      const hasValues = get('values') !== undefined || get('value') !== undefined;
      if (!hasValues && !dist && get('parameters') === undefined && minV === undefined) {
        out.push({
          ...range(p.key),
          severity: 'error',
          code: 'RFT514',
          message: `Parameter ${name} has no value, values or distribution: add values: [...] or a distribution with min and max.`,
        });
      }
      if (minV !== undefined && maxV !== undefined && minV >= maxV && max) {
        out.push({
          ...range(max),
          severity: 'error',
          code: 'RFT510',
          message: `${name}: max (${maxV}) must be greater than min (${minV}).`,
          fixes: [{ title: 'Swap min and max', edits: [replaceNode(min!, maxV, ctx.syntax), replaceNode(max, minV, ctx.syntax)], preferred: true }],
        });
      }
      if (distName && LOG_VALUES.has(distName) && minV !== undefined && minV <= 0 && min) {
        out.push({
          ...range(min),
          severity: 'error',
          code: 'RFT511',
          message: `${name}: ${distName} draws between the values min and max on a log scale, so min must be > 0 (got ${minV}). For learning rates use e.g. 1e-5.`,
        });
      }
      if (distName === 'log_uniform' && minV !== undefined && maxV !== undefined && min && minV > 0 && maxV < 1 && maxV > 0) {
        out.push({
          ...range(dist!),
          severity: 'warning',
          code: 'RFT511',
          message: `${name}: log_uniform takes min/max as natural-log exponents (e^${minV} … e^${maxV}); these look like the values themselves. Use log_uniform_values.`,
          fixes: [{ title: 'Change to log_uniform_values', edits: [replaceNode(dist!, 'log_uniform_values', ctx.syntax)], preferred: true }],
        });
      }
      if (distName && INT_DISTS.has(distName)) {
        for (const b of [min, max])
          if (b?.kind === 'scalar' && typeof b.value === 'number' && !Number.isInteger(b.value))
            out.push({
              ...range(b),
              severity: 'error',
              code: 'RFT512',
              message: `${name}: int_uniform needs integer bounds (got ${b.value}).`,
              fixes: [{ title: `Set to ${Math.round(b.value)}`, edits: [replaceNode(b, Math.round(b.value), ctx.syntax)] }],
            });
      }
      // wandb/sweeps' grid search expands bounded int_uniform and q_uniform into their values
      // (grid_search.py); every other distribution has no finite grid. Without a distribution it
      // infers int_uniform from integer bounds (written as integers: 1.0 is a float to Python).
      const effectiveDist = distName ?? (intLiteral(min) && intLiteral(max) ? 'int_uniform' : undefined);
      if (method === 'grid' && !hasValues && get('parameters') === undefined && !(effectiveDist !== undefined && GRID_DISTS.has(effectiveDist))) {
        const m = nodeAt(ctx.root, ['method']);
        out.push({
          ...range(p.key),
          severity: 'error',
          code: 'RFT514',
          message: `Grid search needs discrete values: give ${name} values: [...] or an int_uniform/q_uniform range (or use method random/bayes).`,
          ...(m ? { fixes: [{ title: 'Use random search', edits: [replaceNode(m, 'random', ctx.syntax)] }] } : {}),
        });
      }
      const probs = get('probabilities');
      if (probs?.kind === 'seq') {
        const sum = probs.items.reduce((s, it) => s + (it.kind === 'scalar' && typeof it.value === 'number' ? it.value : 0), 0);
        if (Math.abs(sum - 1) > 1e-6) out.push({ ...range(probs), severity: 'error', code: 'RFT512', message: `${name}: probabilities sum to ${sum}, not 1.` });
      }
      walk(get('parameters'), depth + 1);
    }
  };
  walk(params, 0);
  return out;
}
