// RFT825: offload_param below ZeRO-3. Only stage 3 partitions the parameters, so only stage 3 can move them to the
// CPU or NVMe (DeepSpeed's ZeRO docs: "offload_param … Valid only with stage 3"); at stages 0–2 DeepSpeed takes the
// setting without a word and every GPU keeps a whole copy, so the memory the config counts on is not saved.
import type { DocNode } from '../ast';
import { nodeAt } from '../ast';
import { replaceNode } from '../edits';
import type { ConfigDiagnostic } from '../types';
import type { RuleContext } from './crossChecks';

/** The offload device node and the stage node, for a DeepSpeed JSON (root) or an accelerate config's deepspeed_config. */
function offloadAndStage(root: DocNode | undefined, kind: 'deepspeed' | 'accelerate'): { device: DocNode | undefined; stage: DocNode | undefined } {
  return kind === 'deepspeed'
    ? { device: nodeAt(root, ['zero_optimization', 'offload_param', 'device']), stage: nodeAt(root, ['zero_optimization', 'stage']) }
    : { device: nodeAt(root, ['deepspeed_config', 'offload_param_device']), stage: nodeAt(root, ['deepspeed_config', 'zero_stage']) };
}

export function checkOffloadParamStage(ctx: RuleContext, kind: 'deepspeed' | 'accelerate'): ConfigDiagnostic[] {
  const { device, stage } = offloadAndStage(ctx.root, kind);
  if (device?.kind !== 'scalar' || (device.value !== 'cpu' && device.value !== 'nvme')) return [];
  // No stage is stage 0 to DeepSpeed; "auto" or a non-number is the schema's business.
  const s = stage === undefined ? 0 : stage.kind === 'scalar' && typeof stage.value === 'number' ? stage.value : undefined;
  if (s === undefined || s >= 3) return [];
  const name = kind === 'deepspeed' ? 'offload_param' : 'offload_param_device';
  const fixes = [
    ...(stage?.kind === 'scalar' ? [{ title: 'Use ZeRO stage 3 (parameters partitioned and offloaded)', edits: [replaceNode(stage, 3, ctx.syntax)] }] : []),
    { title: `Set ${name} to none`, edits: [replaceNode(device, 'none', ctx.syntax)] },
  ];
  return [
    {
      start: device.start,
      end: Math.max(device.end, device.start + 1),
      severity: 'warning',
      code: 'RFT825',
      message: `${name} ${String(device.value)} does nothing at ZeRO stage ${s}: only stage 3 partitions the parameters, so DeepSpeed ignores it and every GPU keeps the whole model. Use stage 3 to offload them, or set it to none.`,
      fixes,
    },
  ];
}
