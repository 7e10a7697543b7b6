// Issue 18.6: quick fixes propose values people train with, LoRA learning rates above 1e-2 warn,
// messages read as plain text, the per-provider GPU rule, and ignored values warn instead of failing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { validateText } from '../../../src/core/config/validate';
import { nodeFiles } from '../../../src/core/config/nodeFiles';
import { providerGpus } from '../../../src/core/config/rules/providerGpu';
import type { ConfigDiagnostic, FileAccess, Fix } from '../../../src/core/config/types';

function applyFix(text: string, fix: Fix): string {
  let out = text;
  for (const e of [...fix.edits].sort((a, b) => b.start - a.start)) out = out.slice(0, e.start) + e.newText + out.slice(e.end);
  return out;
}

const spec = (method: string, lr: string, extra = ''): string =>
  `version: 1\nmodel:\n  id: meta-llama/Llama-3.1-8B\nmethod: ${method}\ndata:\n  train: a/b\ntrainer:\n  learning_rate: ${lr}\n  precision: bf16\n  gradient_checkpointing: true\ntarget:\n  provider: ssh\n  gpu: A100-80GB\n${extra}`;
const diags = (text: string, fileName = 'finetune.yaml'): ConfigDiagnostic[] => validateText(text, { fileName }).diagnostics;

test('learning rate out of range: the preferred fix proposes 2e-4 for LoRA/QLoRA and 2e-5 for full, never the bound', () => {
  for (const [method, want] of [
    ['qlora', '2e-4'],
    ['lora-bf16', '2e-4'],
    ['full', '2e-5'],
  ] as const) {
    for (const lr of ['5', '0']) {
      const text = spec(method, lr);
      const d = diags(text).find((x) => x.code === 'RFT103');
      assert.ok(d, `${method} ${lr}`);
      const fix = d.fixes?.find((f) => f.preferred);
      assert.ok(fix, `${method} ${lr}: a preferred fix`);
      assert.match(fix.title, new RegExp(`^Set to ${want} \\(usual for`));
      const fixed = applyFix(text, fix);
      assert.match(fixed, new RegExp(`\\n {2}learning_rate: ${want}\\n`));
      assert.deepEqual(
        diags(fixed).filter((x) => x.code === 'RFT103' || x.code === 'RFT818'),
        [],
        `${method}: the fixed spec is clean`,
      );
      assert.ok(!d.fixes!.some((f) => /Set to (1|1e-8)$/.test(f.title)), 'no fix to the range bound');
    }
  }
});

test('learning rate: trainer YAML (read by PyYAML) gets 2.0e-4, which YAML 1.1 reads as a float (2e-4 would be a string there)', () => {
  const y = diags('learning_rate: 3\nlora_r: 16\nlora_alpha: 32\n', 'training_args.yaml').find((x) => x.code === 'RFT403')!;
  assert.equal(y.fixes![0]!.edits[0]!.newText, '2.0e-4');
  const a = diags('base_model: x/y\nadapter: qlora\nlearning_rate: 0.5\n', 'axolotl/qlora.yml').find((x) => x.code === 'RFT818')!;
  assert.equal(a.fixes![0]!.edits[0]!.newText, '2.0e-4');
});

test('RFT818: a LoRA/QLoRA learning rate above 1e-2 is a warning with a 2e-4 fix; full fine-tuning and 1e-2 itself are not flagged', () => {
  const d = diags(spec('qlora', '0.05')).filter((x) => x.code === 'RFT818');
  assert.equal(d.length, 1);
  assert.equal(d[0]!.severity, 'warning');
  assert.equal(applyFix(spec('qlora', '0.05'), d[0]!.fixes![0]!), spec('qlora', '2e-4'));
  assert.ok(!diags(spec('qlora', '0.01')).some((x) => x.code === 'RFT818'));
  assert.ok(!diags(spec('full', '0.05')).some((x) => x.code === 'RFT818'));
  assert.ok(!diags(spec('qlora', '5')).some((x) => x.code === 'RFT818'), 'out of range is the schema error alone');
  // Other kinds that train an adapter: LLaMA-Factory (lora by default), Axolotl, a trainer YAML with LoRA keys.
  assert.ok(
    diags('model_name_or_path: x/y\nstage: sft\nlearning_rate: 0.1\n', 'llama_factory/a_lora_sft.yaml').some(
      (x) => x.code === 'RFT818' && x.severity === 'warning',
    ),
  );
  assert.ok(
    !diags('model_name_or_path: x/y\nstage: sft\nfinetuning_type: full\nlearning_rate: 0.1\n', 'llama_factory/a_full_sft.yaml').some(
      (x) => x.code === 'RFT818',
    ),
  );
});

// Every message the checks produce over the fixtures, the examples and a set of broken configs.
const REPO = join(__dirname, '../../..');
function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : /\.(ya?ml|json)$|^\.env/.test(e.name) ? [join(dir, e.name)] : [],
  );
}
const BAD: ReadonlyArray<readonly [string, string]> = [
  ['finetune.yaml', spec('qlora', '5', '')],
  [
    'finetune.yaml',
    'version: 1\nname: -bad\nmodel:\n  id: x/y-7B\n  params_b: 0\nmethod: lora\nlora:\n  dropout: 2\n  alpah: 3\n  r: 1.5\ndata:\n  train: a/b\n  max_seq_length: 4\ntrainer:\n  seed: -1\n  per_device_batch_size: 0\n  warmup_ratio: 3\n  precision: bf16\n  fp16: yes\nlauncher:\n  type: python\n  num_processes: 3\ntarget:\n  provider: lambda\n  gpu: T4\n  gpu_count: 40\n  disk_gb: 2\noutputs:\n  upload: ftp://x\n',
  ],
  [
    'finetune.yaml',
    'version: 1\nmodel:\n  id: x/y-7B\nmethod: full\ndata:\n  train: a/b\nlauncher:\n  type: accelerate\n  num_processes: 1\ntarget:\n  provider: ssh\n  gpu: A100-80GB\n  gpu_count: 2\n',
  ],
  ['finetune.yaml', 'model:\n  id: x/y\ntarget:\n  provider: ssh\n'],
  ['finetune.yaml', ''],
  ['accelerate.yaml', "distributed_type: 'NO'\nnum_processes: 4\nmixed_precision: bf17\n"],
  ['accelerate.yaml', 'distributed_type: DEEPSPEED\nnum_processes: 1\nuse_cpu: true\nmixed_precision: fp16\n'],
  ['ds_config.json', '{"train_batch_size": 7, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2, "zero_optimization": {"stage": 9}}'],
  [
    'training_args.yaml',
    'learning_rate: 0.5\nlora_r: 16\nlora_alpha: 320\nbf16: true\nfp16: true\nload_best_model_at_end: true\nsave_steps: 7\neval_strategy: steps\neval_steps: 5\nnum_train_epochs: -1\n',
  ],
  ['sweep.yaml', 'parameters:\n  lr:\n    distribution: log_uniform_values\n    min: 0\n    max: 0\n  bs:\n    probabilities: [0.5]\n    values: []\n'],
  ['.env', 'LEARNING_RATE=5\nBATCH_SIZE=0\nBATCH_SIZE=1\nCUDA_VISIBLE_DEVICES=0, 1\n'],
];

function allMessages(): Array<{ where: string; d: ConfigDiagnostic }> {
  const out: Array<{ where: string; d: ConfigDiagnostic }> = [];
  const fixtureFiles = [...files(join(REPO, 'test/fixtures/config')), ...files(join(REPO, 'test/fixtures/runspec')), ...files(join(REPO, 'examples'))];
  for (const f of fixtureFiles) for (const d of validateText(readFileSync(f, 'utf8'), { fileName: f, files: nodeFiles }).diagnostics) out.push({ where: f, d });
  for (const [name, text] of BAD) for (const d of validateText(text, { fileName: name }).diagnostics) out.push({ where: `${name}: ${text.slice(0, 60)}`, d });
  return out;
}

test('messages are plain text: no backticks in any message or fix title (VS Code shows diagnostics as plain text)', () => {
  const all = allMessages();
  assert.ok(all.length > 60, `${all.length} diagnostics walked`);
  const codes = new Set(all.map((x) => x.d.code));
  for (const c of ['RFT100', 'RFT101', 'RFT103', 'RFT104', 'RFT204', 'RFT805', 'RFT806', 'RFT818', 'RFT819']) assert.ok(codes.has(c), `the walk reaches ${c}`);
  for (const { where, d } of all) {
    assert.ok(!d.message.includes('`'), `${where}: ${d.code} ${d.message}`);
    for (const f of d.fixes ?? []) assert.ok(!f.title.includes('`'), `${where}: ${d.code} fix ${f.title}`);
  }
});

test('messages: plurals agree with their number ("1 GPU", "2 GPUs"), and a range is stated once', () => {
  const nouns = 'GPUs|processes|machines|items|characters|steps|nodes|levels|lines|bytes';
  for (const { where, d } of allMessages()) {
    assert.doesNotMatch(d.message, new RegExp(`(^|[^\\d.])1 (${nouns})\\b`), `${where}: ${d.code} ${d.message}`);
    assert.doesNotMatch(d.message, /(^|[^\d.])([02-9]|\d\d+) (GPU|process|machine|item|character)\b(?!-)/, `${where}: ${d.code} ${d.message}`);
    // "from A to B" (or "A to B") at most once per message.
    const ranges = [...d.message.matchAll(/(-?[\d.e+-]+) to (-?[\d.e+-]+)/g)].map((m) => `${m[1]} to ${m[2]}`);
    assert.equal(new Set(ranges).size, ranges.length, `${where}: ${d.code} repeats its range: ${d.message}`);
  }
  const one = diags('{"train_batch_size": 7, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2}', 'ds_config.json');
  assert.ok(one.length > 0);
  const lr = diags(spec('qlora', '5')).find((x) => x.code === 'RFT103')!;
  assert.equal(lr.message.split('1e-8').length - 1, 1, lr.message);
  assert.equal(
    lr.message,
    'trainer.learning_rate is 5; it must be from 1e-8 to 1. Peak learning rate. 2e-4 is usual for LoRA/QLoRA, 1e-5–5e-5 for full fine-tuning.',
  );
});

test('messages: the world-size message with one GPU says "1 GPU" (it said "1 GPUs")', () => {
  const acc = validateText('{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2}', { fileName: 'ds_config.json' });
  assert.deepEqual(
    acc.diagnostics.map((d) => d.code),
    [],
  );
  const spec1 =
    'version: 1\nmodel:\n  id: x/y-7B\nmethod: qlora\ndata:\n  train: a/b\nlauncher:\n  type: accelerate\n  config_file: acc.yaml\ntarget:\n  provider: ssh\n  gpu: A100-80GB\n';
  const files = (acc: string): FileAccess => ({
    read: (p) => (p === '/w/acc.yaml' ? { text: acc } : { missing: true }),
    exists: (p) => p === '/w/acc.yaml',
  });
  assert.deepEqual(
    validateText(spec1, { fileName: '/w/finetune.yaml', files: files('distributed_type: MULTI_GPU\nnum_processes: 1\n') }).diagnostics.map((d) => d.code),
    [],
  );
  const m = validateText(spec1, { fileName: '/w/finetune.yaml', files: files('distributed_type: MULTI_GPU\nnum_processes: 2\n') }).diagnostics.find(
    (d) => d.code === 'RFT805',
  )!;
  assert.match(m.message, /sets num_processes: 2, but the target has 1 GPU\. /);
  const two = validateText(spec1.replace('gpu: A100-80GB', 'gpu: A100-80GB\n  gpu_count: 2'), {
    fileName: '/w/finetune.yaml',
    files: files('distributed_type: MULTI_GPU\nnum_processes: 1\n'),
  }).diagnostics.find((d) => d.code === 'RFT805')!;
  assert.match(two.message, /the target has 2 GPUs\. /);
});

test('sources: messages in src/core/config use plural() rather than ad-hoc "s" suffixes, and no escaped backtick outside hovers', () => {
  const sources = srcFiles(join(REPO, 'src/core/config'));
  assert.ok(sources.length > 30);
  for (const f of sources) {
    const text = readFileSync(f, 'utf8');
    assert.doesNotMatch(text, /\$\{[^}]*=== 1 \? '' : 's'\}/, `${f}: use plural()`);
    if (!f.endsWith('hover.ts') && !f.endsWith('estimateBreakdown.ts'))
      assert.doesNotMatch(text.replace(/^\s*(\/\/|\*).*$/gm, ''), /\\`/, `${f}: a backtick inside a message`);
  }
});

function srcFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? srcFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

test('RFT819 GPU count: EC2 sells A100-40GB only eight to a machine, so gpu_count 4 (or none, meaning 1) matches no offer; the fix is 8', () => {
  const p = (provider: string, gpu: string, count?: string): string =>
    `version: 1\nmodel:\n  id: meta-llama/Llama-3.1-8B\nmethod: qlora\ndata:\n  train: a/b\ntrainer:\n  precision: bf16\n  gradient_checkpointing: true\ntarget:\n  provider: ${provider}\n  gpu: ${gpu}\n${count ? `  gpu_count: ${count}\n` : ''}`;
  const four = p('ec2', 'A100-40GB', '4');
  const d = diags(four).filter((x) => x.code === 'RFT819');
  assert.equal(d.length, 1);
  assert.equal(d[0]!.severity, 'error');
  assert.equal(four.slice(d[0]!.start, d[0]!.end), '4');
  assert.equal(
    d[0]!.message,
    'EC2 sells A100-40GB only in machines of 8 GPUs; gpu_count 4 matches no offer. Use 8 (and launcher.num_processes to match), or pick another GPU.',
  );
  const fixed = applyFix(four, d[0]!.fixes![0]!);
  assert.match(fixed, /\n {2}gpu_count: 8\n/);
  assert.deepEqual(
    diags(fixed).filter((x) => x.code === 'RFT819'),
    [],
  );
  // No gpu_count means one GPU: said on the gpu line, with what to add.
  const none = p('ec2', 'A100-40GB');
  const d1 = diags(none).find((x) => x.code === 'RFT819')!;
  assert.equal(none.slice(d1.start, d1.end), 'A100-40GB');
  assert.match(d1.message, /only in machines of 8 GPUs, and target\.gpu_count is 1 when not given: no offer matches\. Add gpu_count: 8/);
  // Sizes that exist: EC2 T4 comes 1 or 4 to a machine (g4dn.xlarge, g4dn.12xlarge).
  assert.deepEqual(
    diags(p('ec2', 'T4', '4')).filter((x) => x.code === 'RFT819'),
    [],
  );
  // Lambda's sizes come from its live API, which the catalog here may lag: its counts are not judged.
  assert.deepEqual(
    diags(p('lambda', 'H100', '3')).filter((x) => x.code === 'RFT819'),
    [],
  );
  // GCP's catalog is as certain as EC2's: an A100-40GB (a2-highgpu) comes 1, 2, 4 or 8 to a machine, not 3.
  assert.match(
    diags(p('gcp', 'A100-40GB', '3')).find((x) => x.code === 'RFT819')?.message ?? '',
    /^GCP sells A100-40GB only in machines of [\d, ]+ GPUs; gpu_count 3 /,
  );
  // Not a whole number is the schema's to say.
  assert.deepEqual(
    diags(p('ec2', 'A100-40GB', '2.5')).filter((x) => x.code === 'RFT819'),
    [],
  );
});

test('RFT819 per provider: Lambda offers no T4 (warning, its list is live), EC2 no V100 and GCP no A10G (errors); the fix picks an offered GPU', () => {
  const p = (provider: string, gpu: string): string =>
    `version: 1\nmodel:\n  id: meta-llama/Llama-3.1-8B\nmethod: qlora\ndata:\n  train: a/b\ntrainer:\n  precision: fp16\n  gradient_checkpointing: true\ntarget:\n  provider: ${provider}\n  gpu: ${gpu}\n`;
  const lambda = diags(p('lambda', 'T4')).filter((d) => d.code === 'RFT819');
  assert.equal(lambda.length, 1);
  assert.equal(lambda[0]!.severity, 'warning');
  assert.equal(p('lambda', 'T4').slice(lambda[0]!.start, lambda[0]!.end), 'T4');
  assert.equal(lambda[0]!.message, 'Lambda offers no T4; its GPUs are V100, A100-40GB, A100-80GB, H100. Pick one of them, or use an SSH host that has one.');
  const fixed = applyFix(p('lambda', 'T4'), lambda[0]!.fixes![0]!);
  assert.match(fixed, /\n {2}gpu: A100-40GB\n/);
  assert.deepEqual(
    diags(fixed).filter((d) => d.code === 'RFT819'),
    [],
  );
  const ec2 = diags(p('ec2', 'V100')).find((d) => d.code === 'RFT819')!;
  assert.equal(ec2.severity, 'error');
  assert.match(ec2.message, /^EC2 offers no V100; its GPUs are T4, A10G, L4, A100-40GB, A100-80GB, H100\./);
  assert.match(diags(p('gcp', 'A10G')).find((d) => d.code === 'RFT819')!.message, /^GCP offers no A10G; its GPUs are T4, V100, L4, /);
  // Offered GPUs, SSH and local hosts: nothing to say.
  for (const [prov, gpu] of [
    ['lambda', 'H100'],
    ['lambda', 'A100-80GB'],
    ['ec2', 'T4'],
    ['gcp', 'V100'],
    ['ssh', 'RTX4090'],
    ['local', 'T4'],
  ]) {
    assert.deepEqual(
      diags(p(prov!, gpu!)).filter((d) => d.code === 'RFT819'),
      [],
      `${prov} ${gpu}`,
    );
  }
  // Lambda's A10 is not the catalog's A10G: not counted as offering it.
  assert.ok(!providerGpus('lambda').has('A10G'));
  assert.deepEqual([...providerGpus('ec2').keys()], ['T4', 'A10G', 'L4', 'A100-40GB', 'A100-80GB', 'H100']);
});

test('a value the tool only ignores is a warning, not an error (RFT805): accelerate with distributed_type NO, the python launcher, an accelerate file overridden by --num_processes', () => {
  const acc = diags("distributed_type: 'NO'\nnum_processes: 4\n", 'accelerate.yaml').find((d) => d.code === 'RFT805')!;
  assert.equal(acc.severity, 'warning');
  assert.match(acc.message, /^distributed_type is NO, so accelerate starts one process and ignores num_processes: 4\./);
  assert.equal(diags('distributed_type: MULTI_GPU\nnum_processes: 4\n', 'accelerate.yaml').filter((d) => d.code === 'RFT805').length, 0);
  // Run spec, launcher python: one process whatever num_processes says.
  const py = (type: string): ConfigDiagnostic | undefined =>
    diags(
      `version: 1\nmodel:\n  id: x/y-7B\nmethod: qlora\ndata:\n  train: a/b\nlauncher:\n  type: ${type}\n  num_processes: 2\ntarget:\n  provider: ssh\n  gpu: A100-80GB\n`,
    ).find((d) => d.code === 'RFT805');
  assert.equal(py('python')?.severity, 'warning');
  assert.match(py('python')!.message, /launcher\.type python starts one process and ignores it/);
  // accelerate and torchrun do start num_processes processes: a mismatch there stays an error.
  assert.equal(py('accelerate')?.severity, 'error');
  assert.equal(py('torchrun')?.severity, 'error');
  // The accelerate file named by the spec: the run's --num_processes flag overrides it.
  const spec1 =
    'version: 1\nmodel:\n  id: x/y-7B\nmethod: qlora\ndata:\n  train: a/b\nlauncher:\n  type: accelerate\n  config_file: acc.yaml\n  num_processes: 1\ntarget:\n  provider: ssh\n  gpu: A100-80GB\n';
  const r = validateText(spec1, {
    fileName: '/w/finetune.yaml',
    files: {
      read: (p) => (p === '/w/acc.yaml' ? { text: 'distributed_type: MULTI_GPU\nnum_processes: 8\n' } : { missing: true }),
      exists: (p) => p === '/w/acc.yaml',
    },
  });
  const f = r.diagnostics.find((d) => d.code === 'RFT805')!;
  assert.equal(f.severity, 'warning');
  assert.match(f.message, /passes --num_processes 1 to accelerate launch, which overrides/);
});
