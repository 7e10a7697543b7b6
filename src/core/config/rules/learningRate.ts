// RFT818: a learning rate inside the schema's range (up to 1) but far too high for LoRA/QLoRA, where
// 1e-5..5e-4 is usual; above 1e-2 the adapter's loss diverges within a few steps. A warning: some
// schedules start high on purpose, and nothing stops the run.
import { nodeAt } from '../ast';
import type { ConfigDiagnostic, ConfigKind } from '../types';
import type { RuleContext } from './crossChecks';
import { LORA_LEARNING_RATE, LORA_LEARNING_RATE_WARN, learningRatePath, numberText, trainsAdapter } from '../sensibleValues';

export function checkLearningRate(kind: ConfigKind, ctx: RuleContext): ConfigDiagnostic[] {
  const path = learningRatePath(kind);
  if (!path || trainsAdapter(kind, ctx.root) !== true) return [];
  const n = nodeAt(ctx.root, path);
  if (n?.kind !== 'scalar') return [];
  const v = typeof n.value === 'number' ? n.value : typeof n.value === 'string' && n.value.trim() !== '' ? Number(n.value) : NaN;
  // Above 1 the schema's own range error says it already.
  if (!Number.isFinite(v) || v <= LORA_LEARNING_RATE_WARN || v > 1) return [];
  const text = numberText(LORA_LEARNING_RATE, kind, ctx.syntax);
  return [
    {
      start: n.start,
      end: Math.max(n.end, n.start + 1),
      severity: 'warning',
      code: 'RFT818',
      message: `A learning rate of ${v} is very high for LoRA/QLoRA (above 1e-2); training usually diverges. 2e-4 is the usual choice.`,
      fixes: [{ title: `Set to ${text} (usual for LoRA/QLoRA)`, edits: [{ start: n.start, end: n.end, newText: text }], preferred: true }],
    },
  ];
}
