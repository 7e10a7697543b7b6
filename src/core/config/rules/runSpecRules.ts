// The run-spec check: a table of named rules over the facts worked out once (runSpecFacts.ts). The rules on the
// spec alone are here; those on launching are in runSpecLauncherRules.ts, those on the files it names in
// runSpecFileRules.ts.
import type { PathSegment } from '../ast';
import { nodeAt, scalarAt } from '../ast';
import type { ConfigDiagnostic, Fix, TextEdit } from '../types';
import type { RuleContext } from './crossChecks';
import { setValue } from './crossChecks';
import { replaceNode } from '../edits';
import { anchorFor } from '../schemaCheck';
import { formatGb } from '../runSpecEstimate';
import type { RunSpecEstimate } from '../runSpecEstimate';
import { vramBandText } from '../../gpu/vramAccuracy';
import { preferenceBase } from '../preferenceMethod';
import { checkAttention, checkScheduler } from './runnerSupportRules';
import type { GpuId } from '../../gpu/catalog';
import { instanceTypeEditsFor, specProvider } from './instanceFit';
import type { Rule } from './ruleTable';
import { nodeRange, runRules } from './ruleTable';
import type { RunSpecFacts, RunSpecRuleInput } from './runSpecFacts';
import { runSpecFacts } from './runSpecFacts';
import { multiNodeCloud, multiNodeHosts, processesPerGpu, pythonOnSeveralGpus } from './runSpecLauncherRules';
import {
  accelerateFilePrecision,
  accelerateFileProcesses,
  accelerateFileZero3Qlora,
  deepSpeedFileBatch,
  deepSpeedFileZero3Qlora,
  referencedFiles,
  trainFileMissing,
  trainRows,
} from './runSpecFileRules';

/** RFT101 the built-in trainer's required keys, unless the spec runs its own command. */
function requiredKeys(s: RunSpecFacts): ConfigDiagnostic[] {
  if (s.hasCommand) return [];
  const need = { model: 'model.id', method: 'method (qlora, lora-bf16, full, dpo or orpo)', data: 'data.train' } as const;
  return (['model', 'method', 'data'] as const)
    .filter((k) => nodeAt(s.root, [k]) === undefined)
    .map((k) => ({
      ...nodeRange(anchorFor(s.root, [k])),
      severity: 'error',
      code: 'RFT101',
      message: `Missing required key '${k}' in the top level: the built-in trainer needs ${need[k]}. Add it, or set command to run your own script.`,
    }));
}

/** RFT812 4-bit loading under a method other than qlora (for dpo/orpo: a base other than qlora). */
function fourBitNeedsQlora(s: RunSpecFacts): ConfigDiagnostic[] {
  const { method } = s;
  if (!nodeAt(s.root, ['quantization']) || method === undefined || method === 'qlora' || scalarAt(s.root, ['quantization', 'load_in_4bit']) !== true) return [];
  const mNode = nodeAt(s.root, ['method'])!;
  // A dpo/orpo run keeps its method: its base is what loads in 4 bits.
  const preference = preferenceBase(scalarAt(s.root, ['method']), undefined) !== undefined;
  const edits = [setValue(s, ['preference', 'base_method'], 'qlora')].filter((e): e is TextEdit => e !== undefined);
  return [
    {
      ...nodeRange(mNode),
      severity: 'warning',
      code: 'RFT812',
      ...(preference
        ? {
            message: `quantization.load_in_4bit is true but preference.base_method is ${String(method)}; a 4-bit base is qlora. Set preference.base_method to qlora or remove the quantization section.`,
            fixes: [{ title: 'Set preference.base_method to qlora', edits, preferred: true }],
          }
        : {
            message: `quantization.load_in_4bit is true but method is ${String(method)}; 4-bit loading is QLoRA. Set method to qlora or remove the quantization section.`,
            fixes: [{ title: 'Set method to qlora', edits: [replaceNode(mNode, 'qlora', s.syntax)], preferred: true }],
          }),
    },
  ];
}

/** RFT812 qlora with load_in_4bit false. */
function qloraNeedsFourBit(s: RunSpecFacts): ConfigDiagnostic[] {
  if (s.method !== 'qlora' || scalarAt(s.root, ['quantization', 'load_in_4bit']) !== false) return [];
  const n = nodeAt(s.root, ['quantization', 'load_in_4bit'])!;
  return [
    {
      ...nodeRange(n),
      severity: 'warning',
      code: 'RFT812',
      message: 'method is qlora but load_in_4bit is false; QLoRA loads the base model in 4-bit.',
      fixes: [{ title: 'Set load_in_4bit to true', edits: [replaceNode(n, true, s.syntax)], preferred: true }],
    },
  ];
}

/** RFT820 a persistent volume is an EBS volume today: elsewhere the start would refuse it, so say so while editing. */
function volumeOnEc2Only(s: RunSpecFacts): ConfigDiagnostic[] {
  const volNode = nodeAt(s.root, ['target', 'volume']);
  const provider = scalarAt(s.root, ['target', 'provider']);
  if (!volNode || typeof provider !== 'string' || provider === 'ec2') return [];
  return [
    {
      ...nodeRange(volNode),
      severity: 'error',
      code: 'RFT820',
      message: `target.volume: persistent volumes are made on EC2 only (EBS), not on ${provider}. Remove it, or keep data in a bucket (data.train: s3://…, gs://…, hf://…) that the host fetches.`,
    },
  ];
}

/** RFT901/RFT903 the model against the GPU's memory. */
function memoryFit(s: RunSpecFacts): ConfigDiagnostic[] {
  const e = s.estimate();
  return e ? vramDiagnostics(e, s) : [];
}

export const RUN_SPEC_RULES: readonly Rule<RunSpecFacts>[] = [
  { id: 'runspec.required-keys', check: requiredKeys },
  { id: 'runspec.4bit-needs-qlora', check: fourBitNeedsQlora },
  { id: 'runspec.qlora-needs-4bit', check: qloraNeedsFourBit },
  { id: 'runspec.scheduler-arguments', check: checkScheduler },
  { id: 'runspec.attention-kernel', check: checkAttention },
  { id: 'runspec.processes-per-gpu', check: processesPerGpu },
  { id: 'runspec.multi-node-cloud', check: multiNodeCloud },
  { id: 'runspec.multi-node-hosts', check: multiNodeHosts },
  { id: 'runspec.python-on-several-gpus', check: pythonOnSeveralGpus },
  { id: 'runspec.referenced-files', check: referencedFiles },
  { id: 'runspec.train-file-missing', check: trainFileMissing },
  { id: 'runspec.train-rows', check: trainRows },
  { id: 'runspec.volume-on-ec2-only', check: volumeOnEc2Only },
  { id: 'runspec.accelerate-file-processes', check: accelerateFileProcesses },
  { id: 'runspec.accelerate-file-precision', check: accelerateFilePrecision },
  { id: 'runspec.accelerate-file-zero3-qlora', check: accelerateFileZero3Qlora },
  { id: 'runspec.deepspeed-file-zero3-qlora', check: deepSpeedFileZero3Qlora },
  { id: 'runspec.deepspeed-file-batch', check: deepSpeedFileBatch },
  { id: 'runspec.memory-fit', check: memoryFit },
];

export function checkRunSpec(inp: RunSpecRuleInput): { diagnostics: ConfigDiagnostic[]; estimate: RunSpecEstimate | undefined } {
  const facts = runSpecFacts(inp);
  const diagnostics = runRules(RUN_SPEC_RULES, facts);
  return { diagnostics, estimate: facts.estimate() };
}

/** The built-in trainer hands a trainer key the schema lacks to TrainingArguments/SFTConfig when the installed
 *  class has a field of that name (trainer_plan.training_args_kwargs), so "ignored" would be false there. */
export function runSpecUnknownKeyFate(path: readonly PathSegment[]): string | undefined {
  if (path.length !== 1 || path[0] !== 'trainer') return undefined;
  return 'It is not checked here: the built-in trainer passes it to TrainingArguments (SFTConfig with TRL) unchanged when the installed version has a field of that name, and says so in the run log; otherwise it drops it with a warning.';
}

/** RFT901 does not fit (with the cheapest fixes), RFT903 fits with under 10% to spare. */
export function vramDiagnostics(e: RunSpecEstimate, inp: RuleContext): ConfigDiagnostic[] {
  const at = e.gpuNode ?? nodeAt(inp.root, ['target']);
  if (!at) return [];
  const total = e.estimate.totalGib;
  const top = [...e.estimate.parts]
    .sort((a, b) => b.gib - a.gib)
    .slice(0, 3)
    .map((p) => `${p.name} ${formatGb(p.gib)} GB`)
    .join(', ');
  if (!e.fits) {
    const fixes: Fix[] = [];
    for (const a of e.advice) {
      const edits =
        a.change === 'gradient_checkpointing'
          ? [setValue(inp, ['trainer', 'gradient_checkpointing'], true)]
          : a.change === 'batch'
            ? [setValue(inp, ['trainer', 'per_device_batch_size'], a.batch!), setValue(inp, ['trainer', 'gradient_accumulation'], a.accumulation!)]
            : a.change === 'gpu' && e.gpuNode
              ? [replaceNode(e.gpuNode, a.gpu!.id, inp.syntax), ...instanceEdits(inp, a.gpu!.id)]
              : a.change === 'qlora'
                ? [setValue(inp, ['method'], 'qlora'), setValue(inp, ['trainer', 'gradient_checkpointing'], true)]
                : [];
      const ok = edits.filter((x): x is NonNullable<typeof x> => x !== undefined);
      if (ok.length === edits.length && ok.length > 0)
        fixes.push({ title: `Fit: ${a.title} (≈ ${formatGb(a.totalGib)} GB)`, edits: ok, preferred: fixes.length === 0 });
    }
    const adv = e.advice.length
      ? ` Cheapest fixes: ${e.advice.map((a) => `${a.title} → ≈ ${formatGb(a.totalGib)} GB`).join('; ')}.`
      : ' No single change makes it fit; use several GPUs with ZeRO-3/FSDP.';
    return [
      {
        ...nodeRange(at),
        severity: 'error',
        code: 'RFT901',
        message: `Estimated peak memory ≈ ${formatGb(total)} GB (${vramBandText()}) does not fit the ${e.gpu.vramGb} GB of ${e.gpu.id} (largest: ${top}).${adv}`,
        fixes,
      },
    ];
  }
  if (total > 0.9 * e.gpu.vramGb) {
    return [
      {
        ...nodeRange(at),
        severity: 'warning',
        code: 'RFT903',
        message: `Estimated peak memory ≈ ${formatGb(total)} GB (${vramBandText()}) leaves under 10% of the ${e.gpu.vramGb} GB on ${e.gpu.id}; longer sequences or a larger batch may run out of memory. Consider gradient checkpointing or a smaller batch.`,
      },
    ];
  }
  return [];
}

/** A fix that changes the GPU keeps target.instance_type a machine that holds it. */
function instanceEdits(inp: RuleContext, gpu: GpuId): TextEdit[] {
  const p = specProvider(inp);
  return p ? instanceTypeEditsFor(inp, p, gpu) : [];
}
