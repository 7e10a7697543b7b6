// Forms real configs use that the checks once mistook for mistakes (found by running the validator
// over configs published in public repositories; wildConfigs.test.ts keeps hand-written configs in
// those shapes), each next to the genuinely wrong variant that must still be reported, so loosening
// a rule for the first cannot silence the second.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateText } from '../../../src/core/config/validate';
import { findGpu } from '../../../src/core/gpu/catalog';
import { parseConfigText, toValue } from '../../../src/core/config/parse';

const codes = (text: string, fileName: string, gpu?: string): string[] =>
  validateText(text, { fileName, ...(gpu ? { gpu: findGpu(gpu)! } : {}) }).diagnostics.map((d) => d.code);
const kindOf = (text: string, fileName: string): string | undefined => validateText(text, { fileName }).kind;

test('null values mean "default" in accelerate, trainer, Axolotl and LLaMA-Factory files; a wrong type is still an error', () => {
  assert.deepEqual(
    codes("compute_environment: LOCAL_MACHINE\ndistributed_type: 'NO'\nmain_process_ip: null\nmain_process_port: null\n", 'accelerate.yaml'),
    [],
  );
  assert.deepEqual(codes('base_model: m\nadapter:\nlora_r:\nfp16:\ndatasets:\n  - path: d\n    type: alpaca\n', 'axolotl.yml'), []);
  assert.deepEqual(codes('model_name_or_path: m\nstage: sft\nresume_from_checkpoint: null\n', 'lf.yaml'), []);
  assert.deepEqual(codes('model_name_or_path: m\ntorch_dtype: null\nlearning_rate: 1.0e-5\nsave_total_limit: null\n', 'config.yaml'), []);
  assert.ok(codes('base_model: m\nadapter: qlora\nlora_r: sixteen\n', 'axolotl.yml').includes('RFT702'));
  assert.ok(codes("compute_environment: LOCAL_MACHINE\ndistributed_type: 'NO'\nmain_process_port: none\n", 'accelerate.yaml').includes('RFT202'));
});

test('PyYAML readings: 500_000 is a number; ${VAR} is filled in later; a quoted "500_000" is still a string', () => {
  assert.deepEqual(codes('base_model: m\nsequence_len: 500_000\nmicro_batch_size: 1\n', 'axolotl.yml'), []);
  assert.ok(codes('base_model: m\nsequence_len: "500_000"\nmicro_batch_size: 1\n', 'axolotl.yml').includes('RFT702'));
  assert.deepEqual(codes('base_model: ${BASE_MODEL}\nadapter: ${ADAPTER}\nlora_r: ${LORA_R}\nmicro_batch_size: 2\n', 'axolotl.yml'), []);
  assert.ok(codes('base_model: m\nadapter: qlorra\nmicro_batch_size: 2\n', 'axolotl.yml').includes('RFT704'));
});

test('a file named finetune.yml that is plainly an Axolotl config is checked as one; a half-written run spec stays a run spec', () => {
  assert.equal(kindOf('base_model: m\ndatasets:\n  - path: d\n    type: alpaca\nmicro_batch_size: 2\n', 'examples/orpheus/finetune.yml'), 'axolotl');
  assert.equal(kindOf('model:\n  id: m\n', 'finetune.yaml'), 'runspec');
  assert.equal(kindOf('base_model: m\ndatasets: []\nversion: 1\n', 'finetune.yaml'), 'runspec');
});

test('LLaMA-Factory v1 configs (model + model_class/train_dataset) are LLaMA-Factory, not trainer YAML', () => {
  const v1 =
    'model: Qwen/Qwen3-4B\nmodel_class: llm\npeft_config:\n  name: lora\n  r: 16\n  lora_alpha: 32\nflash_attn: flash_attention_2\ntrain_dataset: data/v1_sft_demo.yaml\nmicro_batch_size: 1\nlearning_rate: 1.0e-4\n';
  assert.equal(kindOf(v1, 'train_lora_sft.yaml'), 'llamafactory');
  assert.deepEqual(codes(v1, 'train_lora_sft.yaml'), []);
  assert.ok(codes(v1.replace('flash_attention_2', 'flash_attention_9'), 'train_lora_sft.yaml').includes('RFT754'));
});

test('DeepSpeed: field-name aliases, sub_group_size 0, newer sections and "_comment" are valid; misspelt ZeRO keys are not', () => {
  const ds =
    '{"_comment": "see docs", "zero_optimization": {"stage": 3, "sub_group_size": 0, "max_live_parameters": 1e9, "gather_16bit_weights_on_model_save": true}, "compile": {"disable": false}, "tensor_parallel": {"autotp_size": 2}, "seq_parallel_communication_data_type": "bf16"}';
  assert.deepEqual(codes(ds, 'ds_config.json'), []);
  assert.ok(codes('{"zero_optimization": {"stage": 3, "max_live_parameter": 1e9}}', 'ds_config.json').includes('RFT300'));
  assert.ok(
    codes('{"zero_optimization": {"stage": 3, "_comment": "x"}}', 'ds_config.json').includes('RFT300'),
    'DeepSpeed forbids extra keys inside zero_optimization',
  );
});

test('W&B sweeps: grid over int_uniform/q_uniform, Launch sweeps and controller/scheduler keys are valid; grid over uniform is not', () => {
  const grid =
    'program: train.py\nmethod: grid\nparameters:\n  epochs:\n    distribution: int_uniform\n    min: 10\n    max: 20\n  lr:\n    distribution: q_uniform\n    min: 0\n    max: 1\n    q: 0.25\n';
  assert.deepEqual(codes(grid, 'sweep.yaml'), []);
  assert.ok(codes(grid.replace('q_uniform', 'uniform'), 'sweep.yaml').includes('RFT514'));
  // No distribution: integer bounds make wandb infer int_uniform (grid-able); 1.0 is a float to Python.
  assert.deepEqual(codes('program: t.py\nmethod: grid\nparameters:\n  layers:\n    min: 1\n    max: 4\n', 'sweep.yaml'), []);
  assert.ok(codes('program: t.py\nmethod: grid\nparameters:\n  layers:\n    min: 1.0\n    max: 4\n', 'sweep.yaml').includes('RFT514'));
  const launch =
    'job: wandb/sweep-jobs/job-train:latest\nmetric:\n  name: val_loss\n  goal: minimize\nscheduler:\n  job: wandb/sweep-jobs/job-optuna-sweep-scheduler:latest\n  num_workers: 2\nparameters:\n  lr:\n    min: 0.0001\n    max: 1.0\n';
  assert.equal(kindOf(launch, 'optuna_config_basic.yaml'), 'sweep');
  assert.deepEqual(codes(launch, 'optuna_config_basic.yaml'), []);
  assert.ok(codes(launch.replace(/scheduler:\n( {2}.*\n)+/, ''), 'optuna_config_basic.yaml').includes('RFT501'), 'without a scheduler the method is required');
  assert.deepEqual(
    codes(
      'program: t.py\nmethod: grid\ncontroller:\n  type: local\ncommand:\n  - ${env}\n  - ${interpreter}\n  - ${program}\n  - ${args}\nparameters:\n  a:\n    values: [1, 2]\n',
      'sweep.yaml',
    ),
    [],
  );
});

test('4-bit + FlashAttention-2: compute dtype implied by bf16 (Axolotl), by bf16/fp16 or inference (LLaMA-Factory) and by torch_dtype (TRL) counts', () => {
  const ax = 'base_model: m\nadapter: qlora\nload_in_4bit: true\nflash_attention: true\nmicro_batch_size: 1\n';
  assert.ok(!codes(`${ax}bf16: auto\n`, 'axolotl.yml').includes('RFT802'));
  assert.ok(!codes(`${ax}bf16: true\n`, 'axolotl.yml').includes('RFT802'));
  const noDtype = validateText(ax, { fileName: 'axolotl.yml' }).diagnostics.find((d) => d.code === 'RFT802');
  assert.ok(noDtype, 'no bf16/fp16 at all: Axolotl builds the 4-bit layers in float32, which FlashAttention-2 rejects');
  assert.match(noDtype.fixes?.[0]?.title ?? '', /bf16 to true/);
  assert.ok(!codes('model_name_or_path: m\nstage: sft\nquantization_bit: 4\nflash_attn: fa2\n', 'lf.yaml').includes('RFT802'));
  const trl = 'model_name_or_path: m\nload_in_4bit: true\nattn_implementation: flash_attention_2\nlearning_rate: 0.0002\n';
  assert.ok(!codes(`${trl}torch_dtype: bfloat16\n`, 'config_qlora.yaml').includes('RFT802'));
  assert.ok(codes(trl, 'config_qlora.yaml').includes('RFT802'));
});

test('a commit id under a revision key is no W&B key; the same 40 hex digits elsewhere still are', () => {
  const sha = '8cca527612d856d7d32bd94f8103728d614eb852';
  assert.deepEqual(codes(`model_name_or_path: m\nmodel_revision: ${sha}\nlearning_rate: 0.0001\n`, 'config.yaml'), []);
  assert.deepEqual(codes(`base_model: m\nrevision_of_model: ${sha}\nmicro_batch_size: 1\n`, 'axolotl.yml'), []);
  assert.ok(codes(`model_name_or_path: m\nreport_to: wandb\nwandb_key: ${sha}\nlearning_rate: 0.0001\n`, 'config.yaml').includes('RFT810'));
});

test('.env: a key left blank in a template overrides nothing; a bad number is still an error', () => {
  assert.deepEqual(codes('NPROC_PER_NODE=\nLEARNING_RATE=\nMASTER_PORT=\n', '.env.local'), []);
  assert.deepEqual(codes('NPROC_PER_NODE=0\nLEARNING_RATE=fast\n', '.env.local'), ['RFT603', 'RFT603']);
});

test('.env: export, quotes, inline comments, spaces around = and names without a value are all valid; prose is not', () => {
  const env =
    'export WANDB_PROJECT="sft"   # project\nWANDB_ENTITY=\'team\'\nEMPTY=\nQUOTED_EMPTY=""\nURL=http://host/#frag\nexport  SPACED = value\nCUDA_VISIBLE_DEVICES="0,1"\nPYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,max_split_size_mb:128\nHF_HOME\nexport WANDB_MODE\nBATCH_SIZE="8"\n';
  assert.deepEqual(codes(env, '.env'), []);
  assert.deepEqual(codes('HF_TOKEN hf_abc\n', '.env'), ['RFT600']);
});

test('trainer YAML: TRL, alignment-handbook and open-r1 keys are known; a typo of a TrainingArguments key is still reported', () => {
  const trl =
    'model_name_or_path: m\ndataset_mixture:\n  datasets: []\nbeta: 0.1\nmax_prompt_length: 512\nuse_vllm: true\nreward_funcs: [accuracy]\nhub_model_revision: main\nlearning_rate: 5.0e-7\ninclude_num_input_tokens_seen: non_padding\nattn_implementation: kernels-community/vllm-flash-attn3\n';
  assert.deepEqual(codes(trl, 'config_full.yaml'), []);
  assert.ok(codes(`${trl}gradient_accumulaton_steps: 4\n`, 'config_full.yaml').includes('RFT400'));
  // Hub kernel ids are accepted, so a near miss of a built-in name fails the pattern, still with the suggestion.
  const typo = validateText('model_name_or_path: m\nlearning_rate: 0.0001\nattn_implementation: flash_attention2\n', {
    fileName: 'config_full.yaml',
  }).diagnostics;
  assert.deepEqual(
    typo.map((d) => [d.code, d.fixes?.[0]?.title]),
    [['RFT405', "Change to 'flash_attention_2'"]],
  );
});

test('YAML merge keys: "<<: *defaults" joins the named keys (written keys win, the first source wins) and is no unknown key; a merged bad value is still reported; "<<" on a scalar is an error', () => {
  // A W&B sweep is strict (unknown keys are errors), so a "<<" taken for a key would be reported.
  const sweep =
    'program: train.py\nmethod: bayes\nmetric:\n  name: loss\n  goal: minimize\nlr_defaults: &lr\n  distribution: log_uniform_values\n  min: 1e-5\n  max: 1e-3\nparameters:\n  learning_rate:\n    <<: *lr\n  warmup:\n    <<: *lr\n    max: 1e-2\n';
  const r = validateText(sweep, { fileName: 'wandb_sweep.yaml' });
  assert.deepEqual(
    r.diagnostics
      .filter((d) => d.code !== 'RFT310')
      .map((d) => `${d.code} ${d.message}`)
      .filter((m) => m.includes('<<')),
    [],
  );
  const root = parseConfigText(sweep, 'yaml').root;
  const params = toValue(root) as { parameters: Record<string, Record<string, unknown>> };
  assert.deepEqual(params.parameters.learning_rate, { distribution: 'log_uniform_values', min: 1e-5, max: 1e-3 });
  assert.equal(params.parameters.warmup!.max, 1e-2, 'a key written beside the merge wins');
  const two = toValue(parseConfigText('a: &a {x: 1, y: 1}\nb: &b {y: 2, z: 2}\nc:\n  <<: [*a, *b]\n', 'yaml').root) as { c: unknown };
  assert.deepEqual(two.c, { x: 1, y: 1, z: 2 }, 'of two merged mappings the first wins');
  // A wrong value inside the merged mapping is reported (at the anchor, where it is written).
  const bad = sweep.replace('distribution: log_uniform_values', 'distribution: log_uniformish');
  const hit = validateText(bad, { fileName: 'wandb_sweep.yaml' }).diagnostics.find((d) => bad.slice(d.start, d.end).includes('log_uniformish'));
  assert.ok(hit, 'the bad merged value is reported where it is written');
  const scalar = validateText('program: t.py\nmethod: grid\nparameters:\n  lr:\n    <<: 3\n    values: [1]\n', { fileName: 'wandb_sweep.yaml' });
  assert.ok(
    scalar.diagnostics.some((d) => d.code === 'RFT001' && d.message.includes('merge key')),
    JSON.stringify(scalar.diagnostics),
  );
});
