// Issue 32.2: the run-spec estimate reads the launcher's DeepSpeed/FSDP settings. A real run spec beside a real
// ds_config.json / accelerate YAML, through validateText (the Problems panel's and the CLI's path); the model states
// are held to DeepSpeed's own estimators (test/support/deepSpeedOracle.ts), the activations are ours.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateText } from '../../../src/core/config/validate';
import { localFiles } from '../../../src/core/config/nodeFiles';
import type { RunSpecEstimate } from '../../../src/core/config/runSpecEstimate';
import { estimateLabel } from '../../../src/core/config/runSpecEstimate';
import { lookupModel } from '../../../src/core/gpu/models';
import { CUDA_CONTEXT_PART } from '../../../src/core/gpu/estimate';
import { runDeepSpeed } from '../../support/deepSpeedOracle';

const GIB = 2 ** 30;

const made: string[] = [];
after(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

/** The spec and the files beside it in a fresh folder, checked as the editor checks a finetune.yaml. */
function check(specText: string, files: Record<string, string>): { estimate: RunSpecEstimate; diagnostics: ReturnType<typeof validateText>['diagnostics'] } {
  const dir = mkdtempSync(join(tmpdir(), 'rft-shard-'));
  made.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const r = validateText(specText, { fileName: join(dir, 'finetune.yaml'), files: localFiles([dir]) });
  assert.ok(r.estimate, `no estimate: ${JSON.stringify(r.diagnostics)}`);
  return { estimate: r.estimate, diagnostics: r.diagnostics };
}

function spec(launcher: string, { method = 'full', gpu = 'A100-80GB', gpus = 8, extra = '' } = {}): string {
  return `version: 1
name: llama13b-full
model:
  id: meta-llama/Llama-2-13b-hf
method: ${method}
data:
  train: data/train.jsonl
  max_seq_length: 2048
trainer:
  per_device_batch_size: 1
  gradient_accumulation: 8
  gradient_checkpointing: true
  precision: bf16
  optimizer: adamw_torch
${extra}launcher:
${launcher}
target:
  provider: ssh
  host: gpu-box
  gpu: ${gpu}
  gpu_count: ${gpus}
`;
}

// A ZeRO-3 config as the HF docs write it: every batch and precision value left to the trainer.
const ZERO3 = JSON.stringify({
  bf16: { enabled: 'auto' },
  zero_optimization: { stage: 3, overlap_comm: true, contiguous_gradients: true, stage3_gather_16bit_weights_on_model_save: true },
  gradient_accumulation_steps: 'auto',
  gradient_clipping: 'auto',
  train_batch_size: 'auto',
  train_micro_batch_size_per_gpu: 'auto',
});

/**
 * Our activation terms: the activations, the loss's logits and the CUDA context. The allocator's share is left out
 * (part of it is 5% of the model states), so it is what the 15% allows for.
 */
function activationGib(e: RunSpecEstimate): number {
  return e.estimate.parts.filter((p) => /^activations|^logits/.test(p.name) || p.name === CUDA_CONTEXT_PART).reduce((s, p) => s + p.gib, 0);
}

const llama13 = lookupModel('meta-llama/Llama-2-13b-hf')!;
// DeepSpeed's model_to_params: the module with the most parameters of its own, for Llama-2-13B the embedding (and
// the untied head), 32000 × 5120; its largest Linear (the MLP's, 5120 × 13824) is smaller.
const LARGEST_13B = Math.max(llama13.vocab * llama13.hidden, llama13.hidden * llama13.intermediate);

test("ZeRO-3 full fine-tune of a 13B model on 8× A100-80GB: fits, within 15% of DeepSpeed's estimator plus our activations", () => {
  const { estimate: e, diagnostics } = check(spec('  type: accelerate\n  num_processes: 8\n  deepspeed: ds_config.json'), { 'ds_config.json': ZERO3 });
  const errors = diagnostics.filter((d) => d.severity === 'error');
  assert.deepEqual(errors, [], 'no error: the sharded run fits');
  assert.equal(e.fits, true, estimateLabel(e));
  assert.doesNotMatch(estimateLabel(e), /does not fit/);
  assert.equal(e.input.sharding?.stage, 3);
  assert.equal(e.input.sharding?.gpusPerNode, 8);

  const { results } = runDeepSpeed([{ params: llama13.params, largest_layer: LARGEST_13B, gpus_per_node: 8, nodes: 1 }]);
  const row = results[0]!.exact.find((x) => x.stage === 3 && !x.offload_optimizer && !x.offload_param && x.zero_init)!;
  const reference = row.gpu / GIB + activationGib(e);
  const rel = Math.abs(e.estimate.totalGib - reference) / reference;
  console.log(
    `13B ZeRO-3 on 8× A100-80GB per GPU: ours ${e.estimate.totalGib.toFixed(2)} GiB; DeepSpeed ${(row.gpu / GIB).toFixed(2)} GiB + our activations ${activationGib(e).toFixed(2)} GiB = ${reference.toFixed(2)} GiB (${(rel * 100).toFixed(1)}%)`,
  );
  assert.ok(rel <= 0.15, `ours ${e.estimate.totalGib} GiB vs ${reference} GiB`);
  // A quarter or less of the unsharded figure the old estimate reported.
  assert.ok(e.estimate.totalGib < 40, `${e.estimate.totalGib}`);
});

test('"auto" values come from the trainer settings; numbers in the DeepSpeed JSON are used when the spec leaves them out', () => {
  const withBatch = spec('  type: accelerate\n  num_processes: 8\n  deepspeed: ds_config.json').replace(
    '  per_device_batch_size: 1\n',
    '  per_device_batch_size: 4\n',
  );
  const auto = check(withBatch, { 'ds_config.json': ZERO3 }).estimate;
  assert.equal(auto.input.batch, 4, 'train_micro_batch_size_per_gpu "auto" is the trainer\'s per_device_batch_size');
  const fixed = JSON.stringify({ ...JSON.parse(ZERO3), train_micro_batch_size_per_gpu: 2, gradient_accumulation_steps: 16, train_batch_size: 256 });
  const noBatch = spec('  type: accelerate\n  num_processes: 8\n  deepspeed: ds_config.json')
    .replace('  per_device_batch_size: 1\n', '')
    .replace('  gradient_accumulation: 8\n', '');
  const own = check(noBatch, { 'ds_config.json': fixed }).estimate;
  assert.equal(own.input.batch, 2);
  assert.equal(own.accumulation, 16);
});

test('accelerate configs: DEEPSPEED inline and by file, FSDP full/hybrid shard with offload, MULTI_GPU, and the shipped profiles', () => {
  const acc = (
    yaml: string,
    more: Record<string, string> = {},
    launcher = '  type: accelerate\n  num_processes: 8\n  config_file: accelerate.yaml',
  ): RunSpecEstimate => check(spec(launcher), { 'accelerate.yaml': yaml, ...more }).estimate;
  const inline = acc(
    'distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 3\n  offload_optimizer_device: cpu\n  offload_param_device: none\n  zero3_init_flag: true\nnum_processes: 8\n',
  );
  assert.deepEqual(pick(inline), { engine: 'deepspeed', stage: 3, offloadOptimizer: true, offloadParams: false, gpusPerNode: 8, nodes: 1, withinNode: false });
  assert.ok(inline.estimate.cpuGib! > 0, 'offload needs host memory, and the estimate says how much');
  const byFile = acc('distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: ds_config.json\n', {
    'ds_config.json': JSON.stringify({
      zero_optimization: { stage: 2, offload_optimizer: { device: 'nvme', nvme_path: '/nvme' } },
      train_micro_batch_size_per_gpu: 'auto',
    }),
  });
  assert.deepEqual(pick(byFile), { engine: 'deepspeed', stage: 2, offloadOptimizer: true, offloadParams: false, gpusPerNode: 8, nodes: 1, withinNode: false });
  const fsdp = acc('distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: FULL_SHARD\n  fsdp_offload_params: true\n');
  assert.deepEqual(pick(fsdp), { engine: 'fsdp', stage: 3, offloadOptimizer: true, offloadParams: true, gpusPerNode: 8, nodes: 1, withinNode: false });
  const hybrid = acc(
    'distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: 4\n',
    {},
    '  type: accelerate\n  num_processes: 16\n  num_machines: 2\n  config_file: accelerate.yaml',
  );
  assert.deepEqual(pick(hybrid), { engine: 'fsdp', stage: 3, offloadOptimizer: false, offloadParams: false, gpusPerNode: 8, nodes: 2, withinNode: true });
  const fsdpFull2 = acc(
    'distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: FULL_SHARD\n',
    {},
    '  type: accelerate\n  num_processes: 16\n  num_machines: 2\n  config_file: accelerate.yaml',
  );
  // HYBRID_SHARD shards inside a node only: each GPU holds twice the share of FULL_SHARD over both nodes.
  assert.ok(hybrid.estimate.totalGib > fsdpFull2.estimate.totalGib);
  const ddp = acc('distributed_type: MULTI_GPU\nnum_processes: 8\n');
  assert.deepEqual(pick(ddp), { engine: 'ddp', stage: 0, offloadOptimizer: false, offloadParams: false, gpusPerNode: 8, nodes: 1, withinNode: false });
  const profile = check(spec('  type: accelerate\n  num_processes: 8\n  config_file: deepspeed_zero3'), {}).estimate;
  assert.deepEqual(pick(profile), {
    engine: 'deepspeed',
    stage: 3,
    offloadOptimizer: false,
    offloadParams: false,
    gpusPerNode: 8,
    nodes: 1,
    withinNode: false,
  });
  // Two nodes of 8 under ZeRO-3 shard over 16 GPUs: less per GPU than one node of 8.
  const twoNodes = check(spec('  type: accelerate\n  num_processes: 16\n  num_machines: 2\n  deepspeed: ds_config.json', { extra: '' }), {
    'ds_config.json': ZERO3,
  }).estimate;
  const oneNode = check(spec('  type: accelerate\n  num_processes: 8\n  deepspeed: ds_config.json'), { 'ds_config.json': ZERO3 }).estimate;
  assert.ok(twoNodes.estimate.totalGib < oneNode.estimate.totalGib);
});

test('fit advice: a 13B full fine-tune under DDP on 8 GPUs is told to use ZeRO-3 on those GPUs first; on one GPU, offload', () => {
  const ddp = check(spec('  type: accelerate\n  num_processes: 8\n  config_file: accelerate.yaml'), {
    'accelerate.yaml': 'distributed_type: MULTI_GPU\nnum_processes: 8\n',
  });
  assert.equal(ddp.estimate.fits, false);
  const rft901 = ddp.diagnostics.find((d) => d.code === 'RFT901')!;
  assert.ok(rft901, 'does not fit unsharded');
  const kinds = ddp.estimate.advice.map((a) => a.change);
  assert.equal(kinds[0], 'sharding', JSON.stringify(ddp.estimate.advice.map((a) => a.title)));
  assert.match(ddp.estimate.advice[0]!.title, /^ZeRO-3 across the 8 GPUs$/);
  assert.ok(ddp.estimate.advice[0]!.totalGib <= 80);
  assert.match(rft901.message, /Cheapest fixes: ZeRO-3 across the 8 GPUs → ≈ \d+(\.\d)? GB/);
  // Paid options come last, the cheaper per hour first.
  const paid = ddp.estimate.advice.filter((a) => a.change === 'gpus' || a.change === 'gpu');
  assert.deepEqual(ddp.estimate.advice.slice(-paid.length), paid);

  // One A100-80GB under ZeRO-2: no GPUs to shard over, so the cheapest fit is offloading the optimizer to the CPU.
  const one = check(spec('  type: accelerate\n  num_processes: 1\n  deepspeed: ds_config.json', { gpus: 1 }), {
    'ds_config.json': JSON.stringify({ zero_optimization: { stage: 2 }, train_micro_batch_size_per_gpu: 'auto' }),
  }).estimate;
  assert.equal(one.fits, false);
  const first = one.advice.find((a) => a.change !== 'gradient_checkpointing' && a.change !== 'batch')!;
  assert.equal(first.change, 'sharding', JSON.stringify(one.advice.map((a) => a.title)));
  assert.match(first.title, /^ZeRO-3 with the optimizer offloaded to the CPU \(slower\); needs ≈ \d+ GB of CPU memory per node$/);
  // Its figure: DeepSpeed's ZeRO-3 row with the optimizer offloaded, plus our activations.
  const { results } = runDeepSpeed([{ params: llama13.params, largest_layer: LARGEST_13B, gpus_per_node: 1, nodes: 1 }]);
  const row = results[0]!.exact.find((x) => x.stage === 3 && x.offload_optimizer && !x.offload_param && x.zero_init)!;
  const reference = row.gpu / GIB + activationGib(one);
  const rel = Math.abs(first.totalGib - reference) / reference;
  console.log(
    `13B on 1× A100-80GB, ZeRO-3 with the optimizer offloaded: ours ${first.totalGib.toFixed(2)} GiB; DeepSpeed ${(row.gpu / GIB).toFixed(2)} GiB + our activations = ${reference.toFixed(2)} GiB (${(rel * 100).toFixed(1)}%)`,
  );
  assert.ok(rel <= 0.15, `${first.totalGib} vs ${reference}`);
  assert.ok(Math.abs(first.cpuGib! - row.cpu / GIB) < 1e-6, 'the host memory it needs is DeepSpeed\'s "per CPU" figure');
});

function pick(e: RunSpecEstimate): Record<string, unknown> {
  const { engine, stage, offloadOptimizer, offloadParams, gpusPerNode, nodes, withinNode } = e.input.sharding!;
  return { engine, stage, offloadOptimizer, offloadParams, gpusPerNode, nodes, withinNode };
}
