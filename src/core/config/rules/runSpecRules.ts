// Run-spec rules that look past the file: referenced accelerate/DeepSpeed/env files, the target's
// GPU count, and whether the model fits the GPU at all.
import { preferenceBase } from '../preferenceMethod';
import type { DocNode, PathSegment } from '../ast';
import { nodeAt, scalarAt } from '../ast';
import type { ConfigDiagnostic, FileAccess, Fix, TextEdit } from '../types';
import { textOf } from '../types';
import { firstRowProblem, plainOf } from './dataRows';
import type { RuleContext } from './crossChecks';
import { setValue } from './crossChecks';
import { replaceNode } from '../edits';
import { parseConfigText } from '../parse';
import { anchorFor } from '../schemaCheck';
import { checkDeepSpeedBatch, deepSpeedStage } from './kindRules';
import { dirName, join } from '../../pathText';
import { estimateRunSpec, formatGb } from '../runSpecEstimate';
import type { RunSpecEstimate } from '../runSpecEstimate';
import { vramBandText } from '../../gpu/vramAccuracy';
import { plural } from '../plainText';
import { checkAttention, checkScheduler } from './runnerSupportRules';
import { isRunnerProfile } from '../launcherSharding';
import type { GpuId } from '../../gpu/catalog';
import { instanceTypeEditsFor, specProvider } from './instanceFit';

const range = (n: { start: number; end: number }): { start: number; end: number } => ({ start: n.start, end: Math.max(n.end, n.start + 1) });

export interface RunSpecRuleInput extends RuleContext {
  readonly fileName: string;
  readonly files: FileAccess | undefined;
}

export function checkRunSpec(inp: RunSpecRuleInput): { diagnostics: ConfigDiagnostic[]; estimate: RunSpecEstimate | undefined } {
  const out: ConfigDiagnostic[] = [];
  const root = inp.root;
  const hasCommand = nodeAt(root, ['command']) !== undefined;
  if (!hasCommand) {
    for (const k of ['model', 'method', 'data'] as const) {
      if (nodeAt(root, [k]) === undefined) {
        out.push({
          ...range(anchorFor(root, [k])),
          severity: 'error',
          code: 'RFT101',
          message: `Missing required key '${k}' in the top level: the built-in trainer needs ${k === 'model' ? 'model.id' : k === 'method' ? 'method (qlora, lora-bf16, full, dpo or orpo)' : 'data.train'}. Add it, or set command to run your own script.`,
        });
      }
    }
  }
  // dpo/orpo load their base as preference.base_method says: the 4-bit rules below are that method's.
  const method = preferenceBase(scalarAt(root, ['method']), scalarAt(root, ['preference', 'base_method'])) ?? scalarAt(root, ['method']);
  const quant = nodeAt(root, ['quantization']);
  const l4 = scalarAt(root, ['quantization', 'load_in_4bit']);
  if (quant && method !== undefined && method !== 'qlora' && l4 === true) {
    const mNode = nodeAt(root, ['method'])!;
    out.push({
      ...range(mNode),
      severity: 'warning',
      code: 'RFT812',
      ...(preferenceBase(scalarAt(root, ['method']), undefined)
        ? {
            // A dpo/orpo run keeps its method: its base is what loads in 4 bits.
            message: `quantization.load_in_4bit is true but preference.base_method is ${String(method)}; a 4-bit base is qlora. Set preference.base_method to qlora or remove the quantization section.`,
            fixes: [
              {
                title: 'Set preference.base_method to qlora',
                edits: [setValue(inp, ['preference', 'base_method'], 'qlora')].filter((e) => e !== undefined),
                preferred: true,
              },
            ],
          }
        : {
            message: `quantization.load_in_4bit is true but method is ${String(method)}; 4-bit loading is QLoRA. Set method to qlora or remove the quantization section.`,
            fixes: [{ title: 'Set method to qlora', edits: [replaceNode(mNode, 'qlora', inp.syntax)], preferred: true }],
          }),
    });
  }
  if (method === 'qlora' && l4 === false) {
    const n = nodeAt(root, ['quantization', 'load_in_4bit'])!;
    out.push({
      ...range(n),
      severity: 'warning',
      code: 'RFT812',
      message: 'method is qlora but load_in_4bit is false; QLoRA loads the base model in 4-bit.',
      fixes: [{ title: 'Set load_in_4bit to true', edits: [replaceNode(n, true, inp.syntax)], preferred: true }],
    });
  }

  out.push(...checkScheduler(inp), ...checkAttention(inp));

  const gpuCount = num(scalarAt(root, ['target', 'gpu_count'])) ?? 1;
  const machines = num(scalarAt(root, ['launcher', 'num_machines'])) ?? 1;
  const world = gpuCount * machines;
  const ltype = scalarAt(root, ['launcher', 'type']) ?? 'python';
  const npNode = nodeAt(root, ['launcher', 'num_processes']);
  if (npNode?.kind === 'scalar' && typeof npNode.value === 'number' && npNode.value !== world) {
    // The python launcher starts one process whatever num_processes says (python-runner/launchers.py).
    const ignored = ltype === 'python';
    out.push({
      ...range(npNode),
      severity: ignored ? 'warning' : 'error',
      code: 'RFT805',
      message: ignored
        ? `launcher.num_processes is ${npNode.value}, but launcher.type python starts one process and ignores it; the target has ${plural(gpuCount, 'GPU')}${machines > 1 ? ` × ${plural(machines, 'machine')} = ${world}` : ''}. Set it to ${world}, or use accelerate or torchrun to start one process per GPU.`
        : `launcher.num_processes is ${npNode.value} but the target has ${plural(gpuCount, 'GPU')}${machines > 1 ? ` × ${plural(machines, 'machine')} = ${world}` : ''}: use one process per GPU.`,
      fixes: [{ title: `Set num_processes to ${world}`, edits: [replaceNode(npNode, world, inp.syntax)], preferred: true }],
    });
  }
  // Multi-node (README "Multi-node"): one SSH host per machine rank in target.hosts, or N on-demand instances of
  // a cloud (ec2, gcp, lambda) launched for the run and terminated with it; started by torchrun/accelerate.
  const machinesNode = nodeAt(root, ['launcher', 'num_machines']);
  if (machines > 1 && machinesNode) {
    const hostsNode = nodeAt(root, ['target', 'hosts']);
    const provider = scalarAt(root, ['target', 'provider']) ?? 'ssh';
    const cloud = provider === 'ec2' || provider === 'gcp' || provider === 'lambda';
    const spotNode = nodeAt(root, ['target', 'spot']);
    const policyNode = nodeAt(root, ['teardown', 'policy']);
    const volumeNode = nodeAt(root, ['target', 'volume']);
    const policy = scalarAt(root, ['teardown', 'policy']) ?? 'terminate';
    const cloudProblem = (): { node: DocNode; message: string } | undefined =>
      spotNode?.kind === 'scalar' && spotNode.value === true
        ? {
            node: spotNode,
            message: `launcher.num_machines is ${machines}: multi-node cloud runs launch on-demand instances; a reclaimed spot node is not recovered. Set target.spot: false.`,
          }
        : policyNode && policy !== 'terminate'
          ? {
              node: policyNode,
              message: `launcher.num_machines is ${machines}: a multi-node cloud run's instances are terminated when it ends; teardown.policy ${String(policy)} is not supported for it.`,
            }
          : volumeNode
            ? {
                node: volumeNode,
                message: `launcher.num_machines is ${machines}: target.volume attaches to one instance; a multi-node cloud run launches ${machines}.`,
              }
            : undefined;
    const onCloud = cloud && (ltype === 'torchrun' || ltype === 'accelerate') ? cloudProblem() : undefined;
    if (onCloud) out.push({ ...range(onCloud.node), severity: 'error', code: 'RFT830', message: onCloud.message });
    const problem =
      ltype !== 'torchrun' && ltype !== 'accelerate'
        ? `launcher.num_machines is ${machines}: launcher.type must be torchrun or accelerate to start ranks on several machines.`
        : cloud
          ? undefined
          : provider !== 'ssh'
            ? `launcher.num_machines is ${machines}: multi-node runs go to your SSH hosts (provider ssh with target.hosts) or to instances of ec2, gcp or lambda; ${String(provider)} does not launch several machines.`
            : hostsNode?.kind !== 'seq'
              ? `launcher.num_machines is ${machines}: list ${machines} SSH hosts in target.hosts, rank 0 first.`
              : hostsNode.items.length !== machines
                ? `target.hosts lists ${plural(hostsNode.items.length, 'host')} but launcher.num_machines is ${machines}: one host per machine rank.`
                : undefined;
    if (problem) out.push({ ...range(hostsNode?.kind === 'seq' ? hostsNode : machinesNode), severity: 'error', code: 'RFT830', message: problem });
  }
  if (ltype === 'python' && gpuCount > 1 && !hasCommand) {
    const n = nodeAt(root, ['target', 'gpu_count'])!;
    out.push({
      ...range(n),
      severity: 'warning',
      code: 'RFT815',
      message: `The target has ${gpuCount} GPUs but launcher.type is python (one process, one GPU). Use accelerate or torchrun to train on all of them.`,
      fixes: [
        {
          title: 'Launch with accelerate',
          edits: [setValue(inp, ['launcher', 'type'], 'accelerate')].filter((e): e is NonNullable<typeof e> => e !== undefined),
        },
      ].filter((f) => f.edits.length > 0),
    });
  }

  // Referenced files.
  const refs: Array<[string[], 'yaml' | 'json' | 'text', 'error' | 'warning']> = [
    [['launcher', 'config_file'], 'yaml', 'error'],
    [['launcher', 'deepspeed'], 'json', 'error'],
    [['env_file'], 'text', 'warning'],
    [['model', 'config_path'], 'json', 'error'],
  ];
  const loaded = new Map<string, DocNode | undefined>();
  for (const [path, syntax, sev] of refs) {
    const n = nodeAt(root, path);
    if (n?.kind !== 'scalar' || typeof n.value !== 'string' || !inp.files) continue;
    if (path[1] === 'config_file' && isRunnerProfile(n.value)) continue; // the runner's own accelerate profile, not a file here
    // Read once, bounded: the path is the workspace's choice and may lead to a device, a FIFO or outside it.
    const got = inp.files.read(join(dirName(inp.fileName), n.value));
    if ('missing' in got) {
      out.push({
        ...range(n),
        severity: sev,
        code: 'RFT813',
        message: `${path.join('.')} points to ${n.value}, which does not exist (paths are relative to this file). Fix the path or create the file.`,
      });
      continue;
    }
    if ('refused' in got) {
      out.push({
        ...range(n),
        severity: 'error',
        code: 'RFT814',
        message: `${path.join('.')} points to ${n.value}, which is not read: ${got.refused}. Point it at the config file inside the workspace.`,
      });
      continue;
    }
    if (syntax !== 'text') loaded.set(path.join('.'), got.text.length > 1_000_000 ? undefined : parseConfigText(got.text, syntax).root);
  }
  const dataNode = nodeAt(root, ['data', 'train']);
  if (
    dataNode?.kind === 'scalar' &&
    typeof dataNode.value === 'string' &&
    inp.files &&
    /\.(jsonl|json|csv|parquet|arrow|txt)$/i.test(dataNode.value) &&
    !/^[a-z][a-z0-9+.-]*:\/\//i.test(dataNode.value)
  ) {
    if (!inp.files.exists(join(dirName(inp.fileName), dataNode.value))) {
      out.push({
        ...range(dataNode),
        severity: 'warning',
        code: 'RFT813',
        message: `data.train points to ${dataNode.value}, which is not in the workspace; it is synced from here, so the run will not find it unless it already exists on the host.`,
      });
    } else if (/\.jsonl?$/i.test(dataNode.value)) {
      // Bounded read (4 MiB; a larger file is left to the runner's own check at start), first rows only.
      const text = textOf(inp.files.read(join(dirName(inp.fileName), dataNode.value)));
      const rolesNode = nodeAt(root, ['data', 'roles']);
      const problem =
        text === undefined
          ? undefined
          : firstRowProblem(text, {
              json: /\.json$/i.test(dataNode.value),
              textField: String(scalarAt(root, ['data', 'text_field']) ?? 'text'),
              roles: rolesNode ? plainOf(rolesNode) : undefined,
              method: scalarAt(root, ['method']),
            });
      if (problem) {
        out.push({
          ...range(dataNode),
          severity: 'error',
          code: 'RFT850',
          message: `${dataNode.value} row ${problem.row}${problem.column ? `, column '${problem.column}'` : ''} ${problem.message}. The run would stop at start.`,
        });
      }
    }
  }

  // A persistent volume is an EBS volume today: elsewhere the start would refuse it, so say so while editing.
  const volNode = nodeAt(root, ['target', 'volume']);
  const provider = scalarAt(root, ['target', 'provider']);
  if (volNode && typeof provider === 'string' && provider !== 'ec2') {
    out.push({
      ...range(volNode),
      severity: 'error',
      code: 'RFT820',
      message: `target.volume: persistent volumes are made on EC2 only (EBS), not on ${provider}. Remove it, or keep data in a bucket (data.train: s3://…, gs://…, hf://…) that the host fetches.`,
    });
  }

  // The accelerate config this spec launches with.
  const acc = loaded.get('launcher.config_file');
  const accNode = nodeAt(root, ['launcher', 'config_file']);
  if (acc && accNode) {
    const accNp = num(scalarAt(acc, ['num_processes']));
    // The runner passes --num_processes (launcher.num_processes, default 1) to accelerate launch, and a
    // flag wins over the config file: the file's value is never used, so this is a warning.
    if (accNp !== undefined && accNp !== world) {
      const passed = num(npNode?.kind === 'scalar' ? npNode.value : undefined) ?? 1;
      out.push({
        ...range(accNode),
        severity: 'warning',
        code: 'RFT805',
        message: `${String(scalarAt(root, ['launcher', 'config_file']))} sets num_processes: ${accNp}, but the target has ${plural(world, 'GPU')}. The run passes --num_processes ${passed} to accelerate launch, which overrides the file's value; make them agree to avoid confusion.`,
      });
    }
    const mp = scalarAt(acc, ['mixed_precision']);
    const prec = nodeAt(root, ['trainer', 'precision']);
    if (typeof mp === 'string' && prec?.kind === 'scalar' && typeof prec.value === 'string') {
      const same = (mp === 'no' && prec.value === 'fp32') || mp === prec.value;
      if (!same) {
        const want = mp === 'no' ? 'fp32' : mp;
        const fixes: Fix[] =
          want === 'bf16' || want === 'fp16' || want === 'fp32'
            ? [{ title: `Set trainer.precision to ${want}`, edits: [replaceNode(prec, want, inp.syntax)], preferred: true }]
            : [];
        out.push({
          ...range(prec),
          severity: 'error',
          code: 'RFT809',
          message: `trainer.precision is ${prec.value} but the accelerate config's mixed_precision is ${mp}; the trainer and accelerate must agree or the launch fails with a mixed-precision mismatch.`,
          fixes,
        });
      }
    }
    const stage = num(scalarAt(acc, ['deepspeed_config', 'zero_stage']));
    if (stage === 3 && method === 'qlora') {
      out.push({
        ...range(accNode),
        severity: 'error',
        code: 'RFT803',
        message:
          'QLoRA with DeepSpeed ZeRO-3: ZeRO-3 cannot partition 4-bit weights unless bnb_4bit_quant_storage matches the compute dtype, and zero3_init_flag breaks 4-bit loading. Use a ZeRO-2 config, or lora-bf16 with ZeRO-3.',
        fixes: useLoraBf16(inp),
      });
    }
  }
  const ds = loaded.get('launcher.deepspeed');
  const dsNode = nodeAt(root, ['launcher', 'deepspeed']);
  if (ds && dsNode) {
    if (deepSpeedStage(ds) === 3 && method === 'qlora') {
      out.push({
        ...range(dsNode),
        severity: 'error',
        code: 'RFT803',
        message:
          'QLoRA with DeepSpeed ZeRO-3: ZeRO-3 cannot partition 4-bit weights unless bnb_4bit_quant_storage matches the compute dtype. Use ZeRO-2, or lora-bf16 with ZeRO-3.',
        fixes: useLoraBf16(inp),
      });
    }
    const refDiags = checkDeepSpeedBatch({ text: '', syntax: 'json', root: ds, gpu: undefined }, world);
    const micro = num(scalarAt(root, ['trainer', 'per_device_batch_size']));
    const accum = num(scalarAt(root, ['trainer', 'gradient_accumulation']));
    const tbs = num(scalarAt(ds, ['train_batch_size']));
    if (refDiags.length > 0 || (tbs !== undefined && micro !== undefined && accum !== undefined && tbs !== micro * accum * world)) {
      const want = (micro ?? 1) * (accum ?? 1) * world;
      out.push({
        ...range(dsNode),
        severity: 'error',
        code: 'RFT806',
        message: `The DeepSpeed config's train_batch_size (${tbs ?? '?'}) does not equal per_device_batch_size × gradient_accumulation × ${plural(world, 'GPU')} = ${want}; set it to ${want} or "auto".`,
      });
    }
  }

  const estimate = estimateRunSpec(root, inp.fileName, inp.files);
  if (estimate) out.push(...vramDiagnostics(estimate, inp));
  return { diagnostics: out, estimate };
}

/** The built-in trainer hands a trainer key the schema lacks to TrainingArguments/SFTConfig when the installed
 *  class has a field of that name (trainer_plan.training_args_kwargs), so "ignored" would be false there. */
export function runSpecUnknownKeyFate(path: readonly PathSegment[]): string | undefined {
  if (path.length !== 1 || path[0] !== 'trainer') return undefined;
  return 'It is not checked here: the built-in trainer passes it to TrainingArguments (SFTConfig with TRL) unchanged when the installed version has a field of that name, and says so in the run log; otherwise it drops it with a warning.';
}

/** RFT901 does not fit (with the cheapest fixes), RFT903 fits with under 10% to spare. */
export function vramDiagnostics(e: RunSpecEstimate, inp: RunSpecRuleInput): ConfigDiagnostic[] {
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
        ...range(at),
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
        ...range(at),
        severity: 'warning',
        code: 'RFT903',
        message: `Estimated peak memory ≈ ${formatGb(total)} GB (${vramBandText()}) leaves under 10% of the ${e.gpu.vramGb} GB on ${e.gpu.id}; longer sequences or a larger batch may run out of memory. Consider gradient checkpointing or a smaller batch.`,
      },
    ];
  }
  return [];
}

/** A fix that changes the GPU keeps target.instance_type a machine that holds it. */
function instanceEdits(inp: RunSpecRuleInput, gpu: GpuId): TextEdit[] {
  const p = specProvider(inp);
  return p ? instanceTypeEditsFor(inp, p, gpu) : [];
}

/** The RFT803 fix: keep ZeRO-3 and load the base model in 16-bit instead of 4-bit. */
function useLoraBf16(inp: RunSpecRuleInput): Fix[] {
  const m = nodeAt(inp.root, ['method']);
  if (m?.kind !== 'scalar') return [];
  const edits = [replaceNode(m, 'lora-bf16', inp.syntax)];
  const l4 = nodeAt(inp.root, ['quantization', 'load_in_4bit']);
  if (l4?.kind === 'scalar') edits.push(replaceNode(l4, false, inp.syntax));
  return [{ title: 'Use lora-bf16 (16-bit base) with ZeRO-3', edits, preferred: true }];
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}
