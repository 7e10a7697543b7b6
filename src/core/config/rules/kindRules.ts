// Rules that belong to one kind: accelerate process counts and precision, DeepSpeed batch arithmetic.
import type { DocNode } from '../ast';
import { nodeAt, scalarAt } from '../ast';
import type { ConfigDiagnostic } from '../types';
import type { RuleContext } from './crossChecks';
import { setValue } from './crossChecks';
import { replaceNode } from '../edits';
import { plural } from '../plainText';
import type { Rule } from './ruleTable';
import { nodeRange, runRules } from './ruleTable';

/** accelerate launch takes distributed_type NO as a single-process launch (simple_launcher) and never
 *  reads num_processes: nothing fails, the GPUs just go unused, so a warning. */
function processesIgnored(ctx: RuleContext): ConfigDiagnostic[] {
  const np = scalarAt(ctx.root, ['num_processes']);
  const npNode = nodeAt(ctx.root, ['num_processes']);
  if (scalarAt(ctx.root, ['distributed_type']) !== 'NO' || typeof np !== 'number' || np <= 1 || !npNode) return [];
  return [
    {
      ...nodeRange(npNode),
      severity: 'warning',
      code: 'RFT805',
      message: `distributed_type is NO, so accelerate starts one process and ignores num_processes: ${np}. Set distributed_type to MULTI_GPU (or DEEPSPEED/FSDP) to use ${np} GPUs, or num_processes to 1.`,
      fixes: [{ title: 'Set num_processes to 1', edits: [replaceNode(npNode, 1, ctx.syntax)] }],
    },
  ];
}

function deepSpeedSectionMissing(ctx: RuleContext): ConfigDiagnostic[] {
  if (scalarAt(ctx.root, ['distributed_type']) !== 'DEEPSPEED' || nodeAt(ctx.root, ['deepspeed_config']) !== undefined) return [];
  return [
    {
      ...nodeRange(nodeAt(ctx.root, ['distributed_type'])!),
      severity: 'error',
      code: 'RFT805',
      message: 'distributed_type is DEEPSPEED but there is no deepspeed_config section: add deepspeed_config with zero_stage (or deepspeed_config_file).',
    },
  ];
}

/** RFT809: the DeepSpeed section and mixed_precision must agree, or accelerate raises at launch. */
function deepSpeedBf16Precision(ctx: RuleContext): ConfigDiagnostic[] {
  const mp = scalarAt(ctx.root, ['mixed_precision']);
  const dsBf = nodeAt(ctx.root, ['deepspeed_config', 'bf16', 'enabled']);
  if (dsBf?.kind !== 'scalar' || dsBf.value !== true || typeof mp !== 'string' || mp === 'bf16') return [];
  return [
    {
      ...nodeRange(dsBf),
      severity: 'error',
      code: 'RFT809',
      message: `deepspeed_config.bf16.enabled is true but mixed_precision is ${mp}: make them agree.`,
      fixes: [{ title: `Set mixed_precision to bf16`, edits: [setValue(ctx, ['mixed_precision'], 'bf16')!], preferred: true }],
    },
  ];
}

/** accelerate loads this file with PyYAML (YAML 1.1), where bare no/yes/on/off are booleans: a bare
 *  `distributed_type: NO` arrives as False. `accelerate config` quotes them for that reason. */
function yaml11Booleans(ctx: RuleContext): ConfigDiagnostic[] {
  const out: ConfigDiagnostic[] = [];
  for (const k of ['distributed_type', 'downcast_bf16', 'mixed_precision']) {
    const n = nodeAt(ctx.root, [k]);
    if (n?.kind !== 'scalar' || n.quoted || typeof n.value !== 'string' || !/^(no|yes|on|off|y|n)$/i.test(n.value)) continue;
    out.push({
      ...nodeRange(n),
      severity: 'warning',
      code: 'RFT817',
      message: `accelerate reads this file as YAML 1.1, where a bare ${n.value} means the boolean ${/^(no|off|n)$/i.test(n.value) ? 'false' : 'true'}: write '${n.value}' in quotes.`,
      fixes: [{ title: `Quote '${n.value}'`, edits: [{ start: n.start, end: n.end, newText: `'${n.value}'` }], preferred: true }],
    });
  }
  return out;
}

function cpuPrecision(ctx: RuleContext): ConfigDiagnostic[] {
  const mp = scalarAt(ctx.root, ['mixed_precision']);
  if (scalarAt(ctx.root, ['use_cpu']) !== true || (mp !== 'fp16' && mp !== 'fp8')) return [];
  const n = nodeAt(ctx.root, ['mixed_precision'])!;
  return [
    {
      ...nodeRange(n),
      severity: 'error',
      code: 'RFT809',
      message: `use_cpu is true but mixed_precision is ${mp}; CPUs train in no or bf16.`,
      fixes: [{ title: 'Set mixed_precision to no', edits: [replaceNode(n, 'no', ctx.syntax)], preferred: true }],
    },
  ];
}

export const ACCELERATE_RULES: readonly Rule<RuleContext>[] = [
  { id: 'accelerate.processes-ignored', check: processesIgnored },
  { id: 'accelerate.deepspeed-section-missing', check: deepSpeedSectionMissing },
  { id: 'accelerate.deepspeed-bf16-precision', check: deepSpeedBf16Precision },
  { id: 'accelerate.yaml11-booleans', check: yaml11Booleans },
  { id: 'accelerate.cpu-precision', check: cpuPrecision },
];

export function checkAccelerate(ctx: RuleContext): ConfigDiagnostic[] {
  return runRules(ACCELERATE_RULES, ctx);
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
        ...nodeRange(tbsNode),
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
      ...nodeRange(tbsNode),
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
