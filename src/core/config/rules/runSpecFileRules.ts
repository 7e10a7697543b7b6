// Run-spec rules that look into the files it names: that they exist and may be read, the training data's first
// rows, and whether the accelerate and DeepSpeed configs agree with the spec.
import type { DocNode } from '../ast';
import { nodeAt, scalarAt } from '../ast';
import type { ConfigDiagnostic, Fix } from '../types';
import { textOf } from '../types';
import { replaceNode } from '../edits';
import { dirName, join } from '../../pathText';
import { plural } from '../plainText';
import { firstRowProblem, plainOf } from './dataRows';
import { checkDeepSpeedBatch, deepSpeedStage } from './kindRules';
import type { RunSpecFacts } from './runSpecFacts';
import { finiteNumber, nodeRange } from './ruleTable';

/** RFT813 a named file that does not exist, RFT814 one that is not read (outside the workspace, a device …). */
export function referencedFiles(s: RunSpecFacts): ConfigDiagnostic[] {
  return s.references.flatMap(({ path, node, severity, got }): ConfigDiagnostic[] =>
    'missing' in got
      ? [
          {
            ...nodeRange(node),
            severity,
            code: 'RFT813',
            message: `${path.join('.')} points to ${node.value}, which does not exist (paths are relative to this file). Fix the path or create the file.`,
          },
        ]
      : 'refused' in got
        ? [
            {
              ...nodeRange(node),
              severity: 'error',
              code: 'RFT814',
              message: `${path.join('.')} points to ${node.value}, which is not read: ${got.refused}. Point it at the config file inside the workspace.`,
            },
          ]
        : [],
  );
}

/** data.train when it names a local data file (not a URL, not a hub dataset). */
function localTrainFile(s: RunSpecFacts): (DocNode & { readonly value: string }) | undefined {
  const n = nodeAt(s.root, ['data', 'train']);
  if (n?.kind !== 'scalar' || typeof n.value !== 'string' || !s.files) return undefined;
  if (!/\.(jsonl|json|csv|parquet|arrow|txt)$/i.test(n.value) || /^[a-z][a-z0-9+.-]*:\/\//i.test(n.value)) return undefined;
  return n as DocNode & { readonly value: string };
}

/** RFT813 data.train is synced from the workspace, so a file missing here is missing on the host. */
export function trainFileMissing(s: RunSpecFacts): ConfigDiagnostic[] {
  const n = localTrainFile(s);
  if (!n || s.files!.exists(join(dirName(s.fileName), n.value))) return [];
  return [
    {
      ...nodeRange(n),
      severity: 'warning',
      code: 'RFT813',
      message: `data.train points to ${n.value}, which is not in the workspace; it is synced from here, so the run will not find it unless it already exists on the host.`,
    },
  ];
}

/** RFT850 the first rows of a JSON/JSONL data file lack what the method reads. */
export function trainRows(s: RunSpecFacts): ConfigDiagnostic[] {
  const n = localTrainFile(s);
  const at = n ? join(dirName(s.fileName), n.value) : undefined;
  if (!n || !at || !/\.jsonl?$/i.test(n.value) || !s.files!.exists(at)) return [];
  // Bounded read (4 MiB; a larger file is left to the runner's own check at start), first rows only.
  const text = textOf(s.files!.read(at));
  const rolesNode = nodeAt(s.root, ['data', 'roles']);
  const problem =
    text === undefined
      ? undefined
      : firstRowProblem(text, {
          json: /\.json$/i.test(n.value),
          textField: String(scalarAt(s.root, ['data', 'text_field']) ?? 'text'),
          roles: rolesNode ? plainOf(rolesNode) : undefined,
          method: scalarAt(s.root, ['method']),
        });
  if (!problem) return [];
  return [
    {
      ...nodeRange(n),
      severity: 'error',
      code: 'RFT850',
      message: `${n.value} row ${problem.row}${problem.column ? `, column '${problem.column}'` : ''} ${problem.message}. The run would stop at start.`,
    },
  ];
}

/** The accelerate config this spec launches with, and the key that names it. */
function accelerateFile(s: RunSpecFacts): { acc: DocNode; node: DocNode } | undefined {
  const acc = s.loaded.get('launcher.config_file');
  const node = nodeAt(s.root, ['launcher', 'config_file']);
  return acc && node ? { acc, node } : undefined;
}

/** RFT805 (warning) the accelerate file's num_processes: the runner passes --num_processes (launcher.num_processes,
 *  default 1) to accelerate launch, and a flag wins over the config file, so the file's value is never used. */
export function accelerateFileProcesses(s: RunSpecFacts): ConfigDiagnostic[] {
  const f = accelerateFile(s);
  const accNp = finiteNumber(scalarAt(f?.acc, ['num_processes']));
  if (!f || accNp === undefined || accNp === s.world) return [];
  const passed = finiteNumber(scalarAt(s.root, ['launcher', 'num_processes'])) ?? 1;
  return [
    {
      ...nodeRange(f.node),
      severity: 'warning',
      code: 'RFT805',
      message: `${String(scalarAt(s.root, ['launcher', 'config_file']))} sets num_processes: ${accNp}, but the target has ${plural(s.world, 'GPU')}. The run passes --num_processes ${passed} to accelerate launch, which overrides the file's value; make them agree to avoid confusion.`,
    },
  ];
}

/** RFT809 trainer.precision and the accelerate file's mixed_precision must agree, or the launch fails. */
export function accelerateFilePrecision(s: RunSpecFacts): ConfigDiagnostic[] {
  const f = accelerateFile(s);
  const mp = scalarAt(f?.acc, ['mixed_precision']);
  const prec = nodeAt(s.root, ['trainer', 'precision']);
  if (!f || typeof mp !== 'string' || prec?.kind !== 'scalar' || typeof prec.value !== 'string') return [];
  if ((mp === 'no' && prec.value === 'fp32') || mp === prec.value) return [];
  const want = mp === 'no' ? 'fp32' : mp;
  const fixes: Fix[] =
    want === 'bf16' || want === 'fp16' || want === 'fp32'
      ? [{ title: `Set trainer.precision to ${want}`, edits: [replaceNode(prec, want, s.syntax)], preferred: true }]
      : [];
  return [
    {
      ...nodeRange(prec),
      severity: 'error',
      code: 'RFT809',
      message: `trainer.precision is ${prec.value} but the accelerate config's mixed_precision is ${mp}; the trainer and accelerate must agree or the launch fails with a mixed-precision mismatch.`,
      fixes,
    },
  ];
}

/** RFT803 QLoRA under the accelerate file's ZeRO-3. */
export function accelerateFileZero3Qlora(s: RunSpecFacts): ConfigDiagnostic[] {
  const f = accelerateFile(s);
  if (!f || finiteNumber(scalarAt(f.acc, ['deepspeed_config', 'zero_stage'])) !== 3 || s.method !== 'qlora') return [];
  return [
    {
      ...nodeRange(f.node),
      severity: 'error',
      code: 'RFT803',
      message:
        'QLoRA with DeepSpeed ZeRO-3: ZeRO-3 cannot partition 4-bit weights unless bnb_4bit_quant_storage matches the compute dtype, and zero3_init_flag breaks 4-bit loading. Use a ZeRO-2 config, or lora-bf16 with ZeRO-3.',
      fixes: useLoraBf16(s),
    },
  ];
}

/** The DeepSpeed config named by launcher.deepspeed, and the key that names it. */
function deepSpeedFile(s: RunSpecFacts): { ds: DocNode; node: DocNode } | undefined {
  const ds = s.loaded.get('launcher.deepspeed');
  const node = nodeAt(s.root, ['launcher', 'deepspeed']);
  return ds && node ? { ds, node } : undefined;
}

/** RFT803 QLoRA under the DeepSpeed file's ZeRO-3. */
export function deepSpeedFileZero3Qlora(s: RunSpecFacts): ConfigDiagnostic[] {
  const f = deepSpeedFile(s);
  if (!f || deepSpeedStage(f.ds) !== 3 || s.method !== 'qlora') return [];
  return [
    {
      ...nodeRange(f.node),
      severity: 'error',
      code: 'RFT803',
      message:
        'QLoRA with DeepSpeed ZeRO-3: ZeRO-3 cannot partition 4-bit weights unless bnb_4bit_quant_storage matches the compute dtype. Use ZeRO-2, or lora-bf16 with ZeRO-3.',
      fixes: useLoraBf16(s),
    },
  ];
}

/** RFT806 the DeepSpeed file's train_batch_size against the spec's batch × accumulation × GPUs. */
export function deepSpeedFileBatch(s: RunSpecFacts): ConfigDiagnostic[] {
  const f = deepSpeedFile(s);
  if (!f) return [];
  const refDiags = checkDeepSpeedBatch({ text: '', syntax: 'json', root: f.ds, gpu: undefined }, s.world);
  const micro = finiteNumber(scalarAt(s.root, ['trainer', 'per_device_batch_size']));
  const accum = finiteNumber(scalarAt(s.root, ['trainer', 'gradient_accumulation']));
  const tbs = finiteNumber(scalarAt(f.ds, ['train_batch_size']));
  const mismatch = tbs !== undefined && micro !== undefined && accum !== undefined && tbs !== micro * accum * s.world;
  if (refDiags.length === 0 && !mismatch) return [];
  const want = (micro ?? 1) * (accum ?? 1) * s.world;
  return [
    {
      ...nodeRange(f.node),
      severity: 'error',
      code: 'RFT806',
      message: `The DeepSpeed config's train_batch_size (${tbs ?? '?'}) does not equal per_device_batch_size × gradient_accumulation × ${plural(s.world, 'GPU')} = ${want}; set it to ${want} or "auto".`,
    },
  ];
}

/** The RFT803 fix: keep ZeRO-3 and load the base model in 16-bit instead of 4-bit. */
function useLoraBf16(s: RunSpecFacts): Fix[] {
  const m = nodeAt(s.root, ['method']);
  if (m?.kind !== 'scalar') return [];
  const edits = [replaceNode(m, 'lora-bf16', s.syntax)];
  const l4 = nodeAt(s.root, ['quantization', 'load_in_4bit']);
  if (l4?.kind === 'scalar') edits.push(replaceNode(l4, false, s.syntax));
  return [{ title: 'Use lora-bf16 (16-bit base) with ZeRO-3', edits, preferred: true }];
}
