// Cross-field and hardware rules shared by every trainer-like kind, driven by the facts each kind
// states (facts.ts) and the target GPU from the catalog.
import type { DocNode, PathSegment } from '../ast';
import { nodeAt, keyText } from '../ast';
import type { ConfigDiagnostic, Fix, TextEdit } from '../types';
import type { GpuInfo } from '../../gpu/catalog';
import type { Syntax } from '../edits';
import { insertKey, replaceNode } from '../edits';
import type { PrecisionFact, TrainingFacts } from './facts';
import type { Rule } from './ruleTable';
import { nodeRange, runRules } from './ruleTable';
import { tokenKind } from '../tokenPatterns';

export interface RuleContext {
  readonly text: string;
  readonly syntax: Syntax;
  readonly root: DocNode | undefined;
  readonly gpu: GpuInfo | undefined;
}

/** Sets a boolean/scalar at path: replaces the value when the key exists, inserts it into its mapping otherwise. */
export function setValue(ctx: RuleContext, path: readonly PathSegment[], value: string | number | boolean): TextEdit | undefined {
  const existing = nodeAt(ctx.root, path);
  if (existing && existing.kind === 'scalar') return replaceNode(existing, value, ctx.syntax);
  const parent = nodeAt(ctx.root, path.slice(0, -1));
  if (parent?.kind === 'map') return insertKey(ctx.text, parent, String(path[path.length - 1]), value, ctx.syntax);
  return undefined;
}

function fix(title: string, edits: ReadonlyArray<TextEdit | undefined>, preferred = false): Fix[] {
  const ok = edits.filter((e): e is TextEdit => e !== undefined);
  return ok.length === edits.length && ok.length > 0 ? [{ title, edits: ok, preferred }] : [];
}

interface FactsInput {
  readonly f: TrainingFacts;
  readonly ctx: RuleContext;
}

/** RFT801 bf16 on a GPU without it. */
function bf16Unsupported({ f, ctx }: FactsInput): ConfigDiagnostic[] {
  const gpu = ctx.gpu;
  if (!gpu) return [];
  return f.precisions
    .filter((p) => p.value === 'bf16' && !gpu.bf16)
    .map((p) => ({
      ...nodeRange(p.node),
      severity: 'error',
      code: 'RFT801',
      message: `${gpu.id} (compute capability ${gpu.computeCapability}) has no bf16 support; training fails or falls back to slow emulation. Use fp16 here.`,
      fixes: fp16Instead(p, ctx),
    }));
}

function fp16Instead(p: PrecisionFact, ctx: RuleContext): Fix[] {
  if (!p.flag) return fix(`Change to ${p.fp16Spelling ?? 'fp16'}`, [replaceNode(p.node, p.fp16Spelling ?? 'fp16', ctx.syntax)], true);
  const last = p.path[p.path.length - 1];
  const fp16Path = last === 'enabled' ? [...p.path.slice(0, -2), 'fp16', 'enabled'] : [...p.path.slice(0, -1), 'fp16'];
  return fix('Use fp16 instead of bf16', [replaceNode(p.node, false, ctx.syntax), setValue(ctx, fp16Path, true)], true);
}

/** RFT816 fp8 on a GPU without it. */
function fp8Unsupported({ f, ctx }: FactsInput): ConfigDiagnostic[] {
  const gpu = ctx.gpu;
  if (!gpu) return [];
  const want = gpu.bf16 ? 'bf16' : 'fp16';
  return f.precisions
    .filter((p) => p.value === 'fp8' && !gpu.fp8)
    .map((p) => ({
      ...nodeRange(p.node),
      severity: 'error',
      code: 'RFT816',
      message: `fp8 needs an Ada or Hopper GPU (L4, RTX 4090, H100, H200); ${gpu.id} has none. Use ${want}.`,
      fixes: fix(`Change to ${want}`, [replaceNode(p.node, want, ctx.syntax)], true),
    }));
}

/** RFT811 FlashAttention-2 on a GPU that cannot run it. */
function flashAttentionUnsupported({ f, ctx }: FactsInput): ConfigDiagnostic[] {
  const gpu = ctx.gpu;
  if (!gpu || !f.flashAttention || !isFlash(f.flashAttention.value) || gpu.flashAttention2 || f.flashOff === undefined) return [];
  return [
    {
      ...nodeRange(f.flashAttention.node),
      severity: 'error',
      code: 'RFT811',
      message: `FlashAttention-2 needs an Ampere or newer GPU; ${gpu.id} is compute capability ${gpu.computeCapability}. Use sdpa (PyTorch's memory-efficient attention).`,
      fixes: fix(`Change to ${String(f.flashOff)}`, [replaceNode(f.flashAttention.node, f.flashOff, ctx.syntax)], true),
    },
  ];
}

/** RFT804 bf16 and fp16 both on. */
function bf16AndFp16({ f, ctx }: FactsInput): ConfigDiagnostic[] {
  if (f.bf16Flag?.value !== true || f.fp16Flag?.value !== true) return [];
  const gpu = ctx.gpu;
  const keepFp16 = gpu ? !gpu.bf16 : false;
  const off = keepFp16 ? f.bf16Flag : f.fp16Flag;
  return [
    {
      ...nodeRange(off.node),
      severity: 'error',
      code: 'RFT804',
      message: `bf16 and fp16 are both true; the trainer refuses that. Keep ${keepFp16 ? 'fp16' : 'bf16'}${gpu ? ` (${gpu.id} ${gpu.bf16 ? 'supports bf16' : 'has no bf16'})` : ''} and set the other to false.`,
      fixes: fix(`Set ${keepFp16 ? 'bf16' : 'fp16'} to false`, [replaceNode(off.node, false, ctx.syntax)], true),
    },
  ];
}

/** RFT802 4-bit loading with FlashAttention-2: 4-bit weights are packed in uint8, and FlashAttention only
 *  takes fp16/bf16 tensors; unless the 4-bit layers compute in a 16-bit dtype the run dies with the
 *  seed's dtype error ("FlashAttention only support fp16 and bf16 data type" / uint8 tensors). */
function fourBitFlashDtype({ f, ctx }: FactsInput): ConfigDiagnostic[] {
  if (!f.load4bit || !f.flashAttention || !isFlash(f.flashAttention.value)) return [];
  const cd = f.computeDtype?.value;
  if (cd !== undefined && cd !== 'float32' && cd !== 'fp32') return [];
  const want = ctx.gpu && !ctx.gpu.bf16 ? 'float16' : 'bfloat16';
  const fixes: Fix[] = [
    ...computeDtypeFix(f, ctx, want),
    ...(f.flashOff !== undefined ? fix(`Use ${String(f.flashOff)} attention instead`, [replaceNode(f.flashAttention.node, f.flashOff, ctx.syntax)]) : []),
  ];
  return [
    {
      ...nodeRange(f.flashAttention.node),
      severity: 'error',
      code: 'RFT802',
      message: `4-bit loading stores weights as uint8 and computes in ${cd ?? 'float32'} here; FlashAttention-2 only takes fp16/bf16, so the first forward pass fails with a dtype error. Set the 4-bit compute dtype to ${want}, or load in BF16 without quantization (as the A100 profile does), or use sdpa.`,
      fixes,
    },
  ];
}

/** RFT807 load_best_model_at_end without evaluation (TrainingArguments.__post_init__). */
function loadBestNeedsEval({ f, ctx }: FactsInput): ConfigDiagnostic[] {
  if (f.loadBest?.value !== true || (f.evalStrategy?.value ?? 'no') !== 'no') return [];
  const want = (f.saveStrategy?.value ?? 'steps') === 'epoch' ? 'epoch' : 'steps';
  return [
    {
      ...nodeRange(f.loadBest.node),
      severity: 'error',
      code: 'RFT807',
      message: `load_best_model_at_end needs evaluation: set ${f.names.evalStrategy} to ${want} (it is ${f.evalStrategy ? 'no' : 'unset'}).`,
      fixes: fix(`Set ${f.names.evalStrategy} to ${want}`, [setValue(ctx, [...f.trainerPath, f.names.evalStrategy], want)], true),
    },
  ];
}

/** RFT807 load_best_model_at_end needs the save strategy to match the evaluation's. */
function loadBestSaveStrategy({ f, ctx }: FactsInput): ConfigDiagnostic[] {
  const ev = f.evalStrategy?.value ?? 'no';
  const sv = f.saveStrategy?.value ?? 'steps';
  if (f.loadBest?.value !== true || ev === 'no' || sv === 'best' || sv === ev) return [];
  return [
    {
      ...nodeRange(f.saveStrategy?.node ?? f.loadBest.node),
      severity: 'error',
      code: 'RFT807',
      message: `load_best_model_at_end needs ${f.names.saveStrategy} to equal ${f.names.evalStrategy} ('${ev}'), it is '${sv}'.`,
      fixes: fix(`Set ${f.names.saveStrategy} to ${ev}`, [setValue(ctx, [...f.trainerPath, f.names.saveStrategy], ev)], true),
    },
  ];
}

/** RFT807 load_best_model_at_end with steps: save_steps must be a multiple of eval_steps. */
function loadBestStepMultiple({ f, ctx }: FactsInput): ConfigDiagnostic[] {
  const ev = f.evalStrategy?.value ?? 'no';
  const sv = f.saveStrategy?.value ?? 'steps';
  if (f.loadBest?.value !== true || ev !== 'steps' || sv !== 'steps' || !f.evalSteps || !f.saveSteps) return [];
  const e = f.evalSteps.value;
  const s = f.saveSteps.value;
  if (e < 1 || s % e === 0) return [];
  const up = Math.ceil(s / e) * e;
  return [
    {
      ...nodeRange(f.saveSteps.node),
      severity: 'error',
      code: 'RFT807',
      message: `With load_best_model_at_end, ${f.names.saveSteps} (${s}) must be a multiple of eval_steps (${e}); use ${up}.`,
      fixes: fix(`Set ${f.names.saveSteps} to ${up}`, [replaceNode(f.saveSteps.node, up, ctx.syntax)], true),
    },
  ];
}

/** RFT808 lora_alpha far from 2 × r (info): the update scale alpha/r drifts from the usual 2. */
function loraAlphaRatio({ f, ctx }: FactsInput): ConfigDiagnostic[] {
  if (!f.loraR || !f.loraAlpha || f.loraR.value <= 0) return [];
  const ratio = f.loraAlpha.value / f.loraR.value;
  if (ratio >= 0.5 && ratio <= 4) return [];
  return [
    {
      ...nodeRange(f.loraAlpha.node),
      severity: 'info',
      code: 'RFT808',
      message: `lora_alpha ${f.loraAlpha.value} is ${ratio.toFixed(2)} × r (${f.loraR.value}); about 2 × r (${2 * f.loraR.value}) is the usual choice, and the effective learning rate scales with alpha / r.`,
      fixes: fix(`Set to ${2 * f.loraR.value}`, [replaceNode(f.loraAlpha.node, 2 * f.loraR.value, ctx.syntax)], true),
    },
  ];
}

export const TRAINING_FACT_RULES: readonly Rule<FactsInput>[] = [
  { id: 'facts.bf16-unsupported', check: bf16Unsupported },
  { id: 'facts.fp8-unsupported', check: fp8Unsupported },
  { id: 'facts.flash-attention-unsupported', check: flashAttentionUnsupported },
  { id: 'facts.bf16-and-fp16', check: bf16AndFp16 },
  { id: 'facts.4bit-flash-dtype', check: fourBitFlashDtype },
  { id: 'facts.load-best-needs-eval', check: loadBestNeedsEval },
  { id: 'facts.load-best-save-strategy', check: loadBestSaveStrategy },
  { id: 'facts.load-best-step-multiple', check: loadBestStepMultiple },
  { id: 'facts.lora-alpha-ratio', check: loraAlphaRatio },
];

export function checkTrainingFacts(f: TrainingFacts, ctx: RuleContext): ConfigDiagnostic[] {
  return runRules(TRAINING_FACT_RULES, { f, ctx });
}

/** The quick fix that makes 4-bit layers compute in `want`: its own key, or what the kind derives it from. */
function computeDtypeFix(f: TrainingFacts, ctx: RuleContext, want: 'bfloat16' | 'float16'): Fix[] {
  const derived = f.computeDtypeSetting?.(want);
  if (derived)
    return fix(
      `Set ${String(derived.path[derived.path.length - 1])} to ${String(derived.value)} (4-bit layers then compute in ${want})`,
      [setValue(ctx, derived.path, derived.value)],
      true,
    );
  return fix(`Set the 4-bit compute dtype to ${want}`, [f.computeDtypePath ? setValue(ctx, f.computeDtypePath, want) : undefined], true);
}

function isFlash(v: string | boolean): boolean {
  return v === true || v === 'flash_attention_2' || v === 'fa2';
}

/** RFT810: a credential written into a YAML/JSON config. */
export function checkSecrets(root: DocNode | undefined): ConfigDiagnostic[] {
  const out: ConfigDiagnostic[] = [];
  let budget = 100_000;
  const walk = (n: DocNode | undefined, key: string | undefined): void => {
    if (!n || budget-- <= 0) return;
    if (n.kind === 'map') for (const p of n.pairs) walk(p.value, keyText(p));
    else if (n.kind === 'seq') for (const it of n.items) walk(it, key);
    else if (typeof n.value === 'string') {
      const kind = tokenKind(n.value, key);
      if (kind)
        out.push({
          ...nodeRange(n),
          severity: 'error',
          code: 'RFT810',
          message: `This looks like a real ${kind}. Tokens in config files end up in git and in uploads: move it to .env (HF_TOKEN, WANDB_API_KEY, …) or the secret store (Fine-Tune: Set Secret), and rotate it.`,
        });
    }
  };
  walk(root, undefined);
  return out;
}
