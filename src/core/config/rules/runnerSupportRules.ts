// Run-spec settings the built-in trainer cannot carry out as written, reported before anything is billed:
// RFT840 a learning-rate schedule that cannot run (transformers needs arguments the type alone does not give, or an
// evaluation to step on), RFT841 an attention kernel the model's class refuses at load time. The runner refuses
// the first (trainer_plan.scheduler_problem) and falls back to eager for the second; both say so here first.
import { nodeAt, scalarAt } from '../ast';
import type { ConfigDiagnostic } from '../types';
import type { RuleContext } from './crossChecks';
import { replaceNode } from '../edits';

const range = (n: { start: number; end: number }): { start: number; end: number } => ({ start: n.start, end: Math.max(n.end, n.start + 1) });

/** Required lr_scheduler_kwargs of transformers' schedule factories: any one name of each group. */
const SCHEDULER_NEEDS: Readonly<Record<string, readonly (readonly string[])[]>> = {
  cosine_with_min_lr: [['min_lr', 'min_lr_rate']],
  warmup_stable_decay: [['num_decay_steps']],
};

export function checkScheduler(ctx: RuleContext): ConfigDiagnostic[] {
  const node = nodeAt(ctx.root, ['trainer', 'lr_scheduler']);
  if (node?.kind !== 'scalar' || typeof node.value !== 'string') return [];
  const name = node.value;
  const kwargs = nodeAt(ctx.root, ['trainer', 'lr_scheduler_kwargs']);
  const given = new Set(kwargs?.kind === 'map' ? kwargs.pairs.map((p) => String(p.key.value)) : []);
  for (const group of SCHEDULER_NEEDS[name] ?? []) {
    if (group.some((k) => given.has(k))) continue;
    return [
      {
        ...range(node),
        severity: 'error',
        code: 'RFT840',
        message: `lr_scheduler ${name} needs trainer.lr_scheduler_kwargs.${group.join(' or ')}; without it transformers cannot build the schedule and the run stops at start-up. Add it (e.g. lr_scheduler_kwargs: {${group[0]}: ${group[0] === 'num_decay_steps' ? 100 : 0.1}}) or pick another schedule.`,
        fixes: [{ title: 'Use the cosine schedule', edits: [replaceNode(node, 'cosine', ctx.syntax)], preferred: true }],
      },
    ];
  }
  if (name === 'reduce_lr_on_plateau') {
    const strategy = scalarAt(ctx.root, ['trainer', 'eval_strategy']);
    const hasEval = nodeAt(ctx.root, ['data', 'eval']) !== undefined;
    // spec.py evaluates by steps when data.eval is set and eval_strategy is not.
    const evaluates = hasEval && (strategy === undefined ? true : strategy !== 'no');
    if (!evaluates) {
      return [
        {
          ...range(node),
          severity: 'error',
          code: 'RFT840',
          message: `lr_scheduler reduce_lr_on_plateau lowers the rate when the eval loss stops improving, so it needs data.eval${hasEval ? '' : ' and'} an eval_strategy of steps or epoch; transformers refuses it otherwise. ${hasEval ? 'Set trainer.eval_strategy.' : 'Add data.eval, or pick another schedule.'}`,
          fixes: [{ title: 'Use the cosine schedule', edits: [replaceNode(node, 'cosine', ctx.syntax)], preferred: true }],
        },
      ];
    }
  }
  return [];
}

/** Model families whose transformers classes refuse sdpa (`_supports_sdpa = False`): gpt-oss in every release
 *  that has it, Gemma-2 in transformers 5 (4.x accepted it). Matched on the Hub id's name part. */
const REFUSES_SDPA: ReadonlyArray<{ readonly family: string; readonly id: RegExp; readonly when: string }> = [
  { family: 'gpt-oss', id: /(^|\/)gpt-oss/i, when: '' },
  { family: 'Gemma-2', id: /(^|\/)gemma-2-/i, when: ' under transformers 5' },
];

export function checkAttention(ctx: RuleContext): ConfigDiagnostic[] {
  const node = nodeAt(ctx.root, ['model', 'attn_implementation']);
  const id = scalarAt(ctx.root, ['model', 'id']);
  if (node?.kind !== 'scalar' || node.value !== 'sdpa' || typeof id !== 'string') return [];
  const hit = REFUSES_SDPA.find((f) => f.id.test(id));
  if (!hit) return [];
  return [
    {
      ...range(node),
      severity: 'warning',
      code: 'RFT841',
      message: `${hit.family} models do not support sdpa attention${hit.when} (transformers refuses it when the model loads); the built-in trainer loads them with eager instead. Set attn_implementation to auto, which picks what the model class supports.`,
      fixes: [{ title: 'Set attn_implementation to auto', edits: [replaceNode(node, 'auto', ctx.syntax)], preferred: true }],
    },
  ];
}
