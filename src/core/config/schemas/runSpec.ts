// The run spec (finetune.yaml): what to train and where. The extension uploads the parsed spec as
// spec.json (same snake_case keys) and python-runner reads it, so the shared fixtures in
// test/fixtures/runspec are checked by this schema and by the Python tests alike.
// Every field carries a description: hovers and the generated JSON Schema come from it.
import { z } from 'zod';
import { GPU_IDS } from '../../gpu/catalog';

export const RUN_SPEC_VERSION = 1;

const nonEmpty = z.string().min(1);
const relPath = (what: string): z.ZodString => nonEmpty.describe(what);

export const runSpecModel = z.strictObject({
  id: nonEmpty.describe('Hugging Face Hub model id (org/name) or a local path on the GPU host. Required unless `command` runs your own script.'),
  revision: nonEmpty.optional().describe('Branch, tag or commit of the Hub model; default main.'),
  trust_remote_code: z.boolean().optional().describe('Allow the model repository to run its own Python code when loading (transformers trust_remote_code). Only for repositories you trust.'),
  attn_implementation: z.enum(['auto', 'flash_attention_2', 'sdpa', 'eager']).optional()
    .describe('Attention kernel. auto (default) asks the model class: flash_attention_2 when flash-attn is installed, the GPU is Ampere or newer and the weights are bf16/fp16 (never with 4-bit or 8-bit weights), else sdpa where the class supports it, else eager (Gemma-2 under transformers 5 and gpt-oss refuse sdpa). An explicit sdpa on such a class falls back to eager with a warning.'),
  config_path: relPath('Local path of the model\'s config.json (relative to this file); the VRAM estimate reads hidden size, layers and parameter count from it.').optional(),
  params_b: z.number().positive().max(2000).optional().describe('Parameter count in billions, when neither the model table nor config_path knows it (used only by the VRAM estimate).'),
});

export const runSpecQuantization = z.strictObject({
  load_in_4bit: z.boolean().optional().describe('Load the base model in 4-bit with bitsandbytes (QLoRA). Stores weights as uint8, which FlashAttention-2 cannot take directly.'),
  load_in_8bit: z.boolean().optional().describe('Load the base model in 8-bit with bitsandbytes (LLM.int8()).'),
  quant_type: z.enum(['nf4', 'fp4']).optional().describe('4-bit data type: nf4 (NormalFloat, recommended by the QLoRA paper) or fp4.'),
  compute_dtype: z.enum(['bfloat16', 'float16', 'float32']).optional().describe('dtype the 4-bit layers compute in (bnb_4bit_compute_dtype). bfloat16 needs an Ampere or newer GPU; use float16 on T4/V100.'),
  double_quant: z.boolean().optional().describe('Quantize the quantization constants too (bnb_4bit_use_double_quant); saves about 0.4 bit per parameter.'),
});

export const targetModules = z.union([
  z.literal('all-linear').describe('Every linear layer except the output head (peft "all-linear").'),
  nonEmpty.describe('A regular expression over module names.'),
  z.array(nonEmpty).min(1).describe('Module names, e.g. [q_proj, k_proj, v_proj, o_proj].'),
]).describe('Modules that get LoRA adapters: "all-linear", a list of module names (q_proj, v_proj, …) or a regular expression.');

export const runSpecLora = z.strictObject({
  r: z.number().int().min(1).max(1024).optional().describe('LoRA rank: 8–128 is usual. Adapter size and memory grow linearly with r.'),
  alpha: z.number().positive().max(4096).optional().describe('LoRA scaling (lora_alpha); the update is scaled by alpha / r. About 2 × r is the common choice.'),
  dropout: z.number().min(0).max(0.9).optional().describe('Dropout on the LoRA input (lora_dropout), 0 to 0.9; 0.05–0.1 is usual.'),
  target_modules: targetModules.optional(),
  bias: z.enum(['none', 'all', 'lora_only']).optional().describe('Which biases are trained: none (usual), all, or lora_only.'),
  modules_to_save: z.array(nonEmpty).optional().describe('Modules trained fully and saved with the adapter, e.g. [lm_head, audio_projector].'),
});

// Dataset layouts and the loss mask (issue 31): python-runner/remote_finetune/data_formats.py reads these.
const dataRef = nonEmpty.describe(
  'A local JSONL/JSON/CSV/Parquet file or a folder written by datasets\' save_to_disk (relative to this file), a Hub dataset id, or s3://bucket/key, gs://bucket/key or hf://datasets/org/name (a file or a folder), copied by the host itself before training.',
);
const dataSource = z.strictObject({
  path: dataRef,
  weight: z.number().positive().max(1000).optional().describe('How many times each row counts in the mix: 2 repeats every row, 0.5 keeps a seeded half; default 1.'),
  config: nonEmpty.optional().describe('Configuration (subset) name of a Hub dataset; default data.config.'),
  split: nonEmpty.optional().describe('Split of a Hub dataset or a save_to_disk folder; default data.split.'),
});
const dataFormatFields = {
  config: nonEmpty.optional().describe('Configuration (subset) name of a Hub dataset, as in load_dataset(id, config).'),
  roles: z.record(z.string(), z.union([nonEmpty, z.array(nonEmpty)])).optional().describe(
    'Role names of your conversations mapped to system, user, assistant or tool, e.g. {bot: assistant, patient: user}, or Axolotl\'s form {assistant: [bot, gpt]}. ShareGPT\'s human/gpt/model/system/tool/function_call/observation are known already; a role neither known nor mapped stops the run at start.',
  ),
  train_on_prompt: z.boolean().optional().describe(
    'Take the loss on every token. Default false: chat rows train on the assistant turns only, prompt/completion and Alpaca rows on the completion only (as TRL, Axolotl and LLaMA-Factory do); plain text always trains on all tokens.',
  ),
  eval_ratio: z.number().gt(0).lt(1).optional().describe('Share of each training source held out for evaluation (seeded by trainer.seed) when data.eval is not given, e.g. 0.05.'),
};

export const runSpecData = z.strictObject({
  train: z.union([dataRef, z.array(z.union([dataRef, dataSource])).min(1)]).describe(
    'Training data: one source, or a list of sources mixed together (each a path, or {path, weight, config, split}). A source is a local JSONL/JSON/CSV/Parquet file or save_to_disk folder (relative to this file), a Hub dataset id, or s3://bucket/key, gs://bucket/key or hf://datasets/org/name, copied by the host itself before training. Rows are read as chat (messages or conversations, OpenAI role/content or ShareGPT from/value), prompt + completion, Alpaca (instruction, input, output) or text (text_field).',
  ),
  ...dataFormatFields,
  eval: nonEmpty.optional().describe('Evaluation data: one source, same forms as train; or a split name (validation, test) of a Hub training dataset.'),
  split: nonEmpty.optional().describe('Split to take from a Hub dataset; default train.'),
  text_field: nonEmpty.optional().describe('Column holding the text to train on; default text.'),
  chat_template: z.boolean().optional().describe('Render rows with the tokenizer\'s chat template: chat rows always are when the tokenizer has one; with this set, Alpaca rows become a user and an assistant turn too.'),
  max_seq_length: z.number().int().min(16).max(1048576).optional().describe('Tokens per example after truncation/packing (16 to 1,048,576). Activation memory grows with it.'),
  packing: z.boolean().optional().describe('Pack several short examples into one sequence: the run uses TRL\'s SFTTrainer (best-fit packing, padding-free rows whose position ids restart at each example, so no example attends to another).'),
});

export const precisionEnum = z.enum(['bf16', 'fp16', 'fp32']);
export const optimizerEnum = z.enum(['adamw_torch', 'adamw_torch_fused', 'adamw_8bit', 'adamw_bnb_8bit', 'paged_adamw_8bit', 'paged_adamw_32bit', 'adafactor', 'sgd']);
export const strategyEnum = z.enum(['no', 'steps', 'epoch']);
export const schedulerEnum = z.enum(['linear', 'cosine', 'cosine_with_restarts', 'cosine_with_min_lr', 'polynomial', 'constant', 'constant_with_warmup', 'inverse_sqrt', 'reduce_lr_on_plateau', 'warmup_stable_decay']);

export const runSpecTrainer = z.strictObject({
  epochs: z.number().positive().max(10000).optional().describe('Passes over the training data (num_train_epochs); ignored when max_steps > 0.'),
  max_steps: z.number().int().min(-1).optional().describe('Stop after this many optimizer steps; -1 (default) trains for `epochs`.'),
  per_device_batch_size: z.number().int().min(1).max(4096).optional().describe('Examples per GPU per forward pass (per_device_train_batch_size). Lower it and raise gradient_accumulation when memory is short.'),
  gradient_accumulation: z.number().int().min(1).max(65536).optional().describe('Forward passes per optimizer step (gradient_accumulation_steps). Effective batch = batch × accumulation × GPUs.'),
  learning_rate: z.number().min(1e-8).max(1).optional().describe('Peak learning rate, 1e-8 to 1. 2e-4 is usual for LoRA/QLoRA, 1e-5–5e-5 for full fine-tuning.'),
  lr_scheduler: schedulerEnum.optional().describe('Learning-rate schedule (lr_scheduler_type). cosine_with_min_lr needs lr_scheduler_kwargs.min_lr or min_lr_rate, warmup_stable_decay needs lr_scheduler_kwargs.num_decay_steps, reduce_lr_on_plateau needs data.eval and an eval_strategy.'),
  lr_scheduler_kwargs: z.record(z.string(), z.union([z.number(), z.string(), z.boolean()])).optional()
    .describe('Extra arguments of the schedule, passed to transformers as lr_scheduler_kwargs, e.g. {min_lr_rate: 0.1} for cosine_with_min_lr or {num_decay_steps: 100} for warmup_stable_decay.'),
  warmup_ratio: z.number().min(0).max(1).optional().describe('Fraction of the steps spent warming up the learning rate, 0 to 1.'),
  warmup_steps: z.number().int().min(0).optional().describe('Warm-up steps; overrides warmup_ratio when > 0.'),
  weight_decay: z.number().min(0).max(1).optional().describe('AdamW weight decay, 0 to 1.'),
  max_grad_norm: z.number().min(0).optional().describe('Gradient clipping norm; 0 turns clipping off.'),
  precision: precisionEnum.optional().describe('Training precision: bf16 (Ampere or newer: A10G, L4, RTX 3090/4090, A100, H100, H200), fp16 (any CUDA GPU, needed on T4/V100) or fp32.'),
  gradient_checkpointing: z.boolean().optional().describe('Recompute activations in the backward pass: cuts activation memory to about one layer\'s worth for roughly 30% more compute.'),
  optimizer: optimizerEnum.optional().describe('Optimizer (optim): adamw_torch keeps 8 bytes of state per trainable parameter, the 8-bit variants 2 bytes; paged variants spill to CPU memory on spikes.'),
  logging_steps: z.number().int().min(1).optional().describe('Log loss and learning rate every N steps.'),
  eval_strategy: strategyEnum.optional().describe('When to evaluate: no, steps (every eval_steps) or epoch.'),
  eval_steps: z.number().int().min(1).optional().describe('Evaluate every N steps when eval_strategy is steps.'),
  save_strategy: z.enum(['no', 'steps', 'epoch', 'best']).optional().describe('When to save a checkpoint: no, steps (every save_steps), epoch or best.'),
  save_steps: z.number().int().min(1).optional().describe('Save every N steps when save_strategy is steps. With load_best_model_at_end it must be a multiple of eval_steps.'),
  save_total_limit: z.number().int().min(1).optional().describe('Keep at most N checkpoints on disk.'),
  resume_from_checkpoint: z
    .union([z.literal('latest'), nonEmpty])
    .optional()
    .describe(
      "Start this run from a checkpoint another run left: a checkpoint-N folder on the host (relative to the synced folder, e.g. outputs/checkpoints/<run id>/checkpoint-500), or latest (the newest complete one under <outputs.dir>/checkpoints). The run's own newest checkpoint still comes first on a Resume; a folder that is not a complete checkpoint fails the run before the model loads.",
    ),
  load_best_model_at_end: z.boolean().optional().describe('Reload the best checkpoint (by metric_for_best_model) when training ends. Needs eval and save strategies that match.'),
  metric_for_best_model: nonEmpty.optional().describe('Metric that picks the best checkpoint, e.g. eval_loss.'),
  seed: z.number().int().min(0).max(4294967295).optional().describe('Random seed, 0 to 2^32-1.'),
  use_sft_trainer: z.boolean().optional().describe('Use TRL\'s SFTTrainer when TRL is installed on the host.'),
  report_to: z.array(z.enum(['wandb', 'tensorboard', 'mlflow', 'none'])).optional().describe('Where the trainer reports metrics; wandb is added when wandb.enabled is true.'),
  liger: z.boolean().optional().describe("Liger's Triton kernels (RMSNorm, RoPE, SwiGLU, fused linear cross-entropy) through transformers' use_liger_kernel: less memory, more tokens/s. CUDA GPUs and the families liger-kernel patches only; refused before the model loads elsewhere. speed: auto turns it on where it can run."),
  compile: z.boolean().optional().describe('torch.compile the model (torch_compile): faster steps after minutes of compilation at the first step and at each new sequence length. Never chosen by speed: auto.'),
  backend: z.enum(['builtin', 'unsloth']).optional().describe("builtin (transformers/peft/trl) or unsloth (Unsloth's FastLanguageModel for qlora/lora-bf16 on one CUDA GPU, families Unsloth supports); unsloth is refused with the reason elsewhere."),
});

export const runSpecLauncher = z.strictObject({
  type: z.enum(['python', 'accelerate', 'torchrun']).describe('How the training process starts: python (one process), accelerate launch, or torchrun.'),
  config_file: relPath('accelerate config YAML (relative to this file); accelerate only. Its num_processes must match the target\'s GPUs.').optional(),
  deepspeed: relPath('DeepSpeed JSON config (relative to this file) passed to the trainer.').optional(),
  num_processes: z.number().int().min(1).max(1024).optional().describe('Processes in total, normally one per GPU on every machine.'),
  num_machines: z.number().int().min(1).max(1024).optional().describe('Machines (nodes) taking part.'),
  machine_rank: z.number().int().min(0).max(1023).optional().describe('This machine\'s rank, 0 for the main one.'),
  main_process_ip: nonEmpty.optional().describe('Address of the rank-0 machine (multi-node only).'),
  main_process_port: z.number().int().min(1).max(65535).optional().describe('Port of the rank-0 machine, 1–65535 (multi-node only).'),
});

export const runSpecTarget = z.strictObject({
  provider: z.enum(['ssh', 'local', 'lambda', 'ec2', 'gcp']).describe('Where the run happens: an SSH host you already have, this machine, or a GPU instance provisioned on Lambda Cloud, AWS EC2 or GCP.'),
  host: nonEmpty.optional().describe('SSH host: an alias from ~/.ssh/config or user@host[:port] (provider ssh).'),
  hosts: z.array(nonEmpty).min(2).max(64).optional().describe('SSH hosts of a multi-node run (launcher.num_machines > 1, provider ssh), one per machine in machine-rank order: the first is rank 0 and its address is the rendezvous address unless launcher.main_process_ip says otherwise.'),
  gpu: z.enum(GPU_IDS).describe('GPU type from the catalog: T4, V100, A10G, L4, RTX3090, RTX4090, A100-40GB, A100-80GB, H100, H200. Drives the bf16/FlashAttention checks and the VRAM estimate.'),
  gpu_count: z.number().int().min(1).max(16).optional().describe('GPUs on the machine, 1 to 16; default 1.'),
  spot: z.boolean().optional().describe('Use a spot/preemptible instance (cheaper, may be reclaimed; checkpoints are uploaded so the run can resume).'),
  region: nonEmpty.optional().describe('Cloud region, e.g. us-east-1 or us-central1.'),
  zone: nonEmpty.optional().describe('Cloud zone, e.g. us-east-1a or us-central1-a. Named here, the launch stays in it; otherwise a capacity refusal in one zone tries the other zones that offer the type.'),
  regions: z
    .array(nonEmpty)
    .min(1)
    .max(8)
    .optional()
    .describe('GCP: regions whose zones a launch may try, in order, once the first region\'s zones have refused for capacity or quota, e.g. [us-central1, us-east1]. EC2 tries the zones of target.region only.'),
  iam_instance_profile: nonEmpty
    .optional()
    .describe('EC2: the IAM instance profile (name or ARN) the instance runs as. The host then reads and writes S3 (checkpoints, staged data, outputs) with the role\'s credentials, which do not expire inside a long run; preferred over shipping AWS keys.'),
  service_account: nonEmpty
    .optional()
    .describe('GCP: the service account email the VM runs as, with the Cloud Storage read/write scope. Default: the project\'s default compute service account. The host reads its token from the metadata server for gs:// checkpoints, staged data and outputs.'),
  instance_type: nonEmpty.optional().describe('Instance type override, e.g. g4dn.xlarge, p4d.24xlarge, gpu_1x_a100.'),
  volume: z
    .strictObject({
      name: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/).describe('Name of the volume: found again by later runs (letters, digits, . _ -).'),
      size_gb: z.number().int().min(1).max(16384).describe('Size in GB when the volume is made; an existing volume keeps its size.'),
    })
    .optional()
    .describe(
      'A persistent disk (EC2: an encrypted gp3 EBS volume) mounted at /mnt/rft-volume: staged data, the Hugging Face cache and the outputs folder survive the instance. It is never deleted by teardown and bills until you delete it. EC2 only for now.',
    ),
  disk_gb: z.number().int().min(30).max(65536).optional().describe('Boot disk of a provisioned instance in GB, 30 to 65536 (EC2 gp3 root volume, GCP boot disk); default 200. It must hold the image (about 100 GB for the GCP PyTorch image), the model cache and checkpoints.'),
  max_attempts: z.number().int().min(1).max(10).optional().describe('Spot only: instances the run may use in all, 1 to 10; default 3. After a reclaim the extension launches a replacement (same type and region, another zone when the spec names none and the zone has no capacity), which resumes from the newest checkpoint in outputs.checkpoints. 1 never relaunches.'),
  on_demand_after: z.number().int().min(0).max(10).optional().describe('Spot only: after this many reclaims or spot capacity refusals the replacement is an on-demand instance (billed at the on-demand price); 0 relaunches on-demand at once. Absent: replacements stay spot.'),
  spot_recovery: z
    .enum(['extension', 'cloud'])
    .optional()
    .describe(
      'Spot only: who brings a reclaimed run back. extension (default): the extension launches a replacement instance (every cloud; VS Code must be open). cloud (EC2 only): a persistent spot request that stops the instance on an interruption and has EC2 start the same instance, root disk intact, when capacity returns, with VS Code closed; the host then resumes the run from its checkpoint.',
    ),
  spot_hibernate: z
    .boolean()
    .optional()
    .describe('EC2 with spot_recovery: cloud: hibernate instead of stop on an interruption where EC2 can (no GPU family can today; those are stopped).'),
  ready_timeout_min: z.number().int().min(1).max(240).optional().describe('Provisioned instances: minutes to wait for SSH before the instance is terminated, 1 to 240. Default: 15 for one GPU, growing with the GPU count (8 GPUs: 45 on Lambda and EC2, 30 on GCP), since large instances commonly take 10–30 minutes to answer.'),
});

export const runSpecWandb = z.strictObject({
  enabled: z.boolean().describe('Report to Weights & Biases; needs WANDB_API_KEY in the env file or the secret store.'),
  project: nonEmpty.optional().describe('W&B project.'),
  entity: nonEmpty.optional().describe('W&B team or user.'),
  run_name: nonEmpty.optional().describe('W&B run name; default the spec\'s name.'),
  tags: z.array(nonEmpty).optional().describe('W&B run tags.'),
});

export const runSpecOutputs = z.strictObject({
  dir: nonEmpty.optional().describe('Output directory on the host, relative to the run directory; default outputs.'),
  download: z.array(z.enum(['adapter', 'checkpoints', 'logs'])).optional().describe('What to bring back when the run ends: adapter, checkpoints, logs.'),
  upload: z.string().regex(/^(s3|gs|hf):\/\/\S+$/, 'must start with s3://, gs:// or hf://').optional().describe('Also upload outputs to s3://bucket/prefix, gs://bucket/prefix or hf://user/repo.'),
  checkpoints: z.string().regex(/^(s3|gs):\/\/\S+$/, 'must start with s3:// or gs://').optional().describe('Copy each checkpoint to s3://bucket/prefix or gs://bucket/prefix while training (under <run id>/), so a spot reclaim or a lost disk costs only the steps since the last one; on a spot instance the reclaim notice saves and uploads one more.'),
});

export const runSpecTeardown = z.strictObject({
  policy: z
    .enum(['terminate', 'stop', 'keep'])
    .describe(
      'What happens to a provisioned instance when the run ends: terminate (the default: an instance nobody asked to keep is deleted, so nothing is billed by accident; its disk goes too, so bring outputs back with outputs.download or outputs.upload), stop (stopped where the cloud can stop it: its disk is kept and billed), or keep (left running; the on-host idle watchdog still shuts it down after idle_minutes without a run). Only instances the extension provisioned (lambda, ec2, gcp) are torn down, never an SSH host.',
    ),
  idle_minutes: z.number().int().min(1).max(1440).optional().describe('The on-host watchdog shuts an idle instance down after this many minutes, 1 to 1440.'),
});

export const runSpecWatchdog = z.strictObject({
  stall_minutes: z
    .number()
    .positive()
    .max(10_080)
    .optional()
    .describe(
      'The host calls the run stalled when no optimizer step is logged for this many minutes while the training process lives (fractions allowed). Default: 20 steps of the measured step time, at least 10 minutes.',
    ),
  on_stall: z
    .enum(['notify', 'stop'])
    .optional()
    .describe('What a stall does: notify (a stalled event and the host notification; the default) or stop (also saves what it can and ends the run as stalled, so the idle watchdog and teardown apply).'),
});

export const runSpecBudget = z.strictObject({
  max_usd: z.number().positive().max(1_000_000).optional().describe('Spend limit in US dollars for the whole run, provisioning wait included. The GPU host enforces it with VS Code closed: a warning and a notification at 80%, and at 100% it saves a checkpoint and stops training (the teardown policy then applies). Needs a price: a cloud offer\'s, or price_per_hour on your own SSH host.'),
  max_hours: z.number().positive().max(8760).optional().describe('Time limit in hours for the whole run, counted from the instance launch; enforced by the host like max_usd.'),
  price_per_hour: z.number().min(0).max(10_000).optional().describe('US dollars per hour of the host. On a cloud target the extension writes the offer\'s price here at start; give it for an SSH host so max_usd can be counted.'),
  billed_since: z.number().positive().optional().describe('Written by the extension at start (Unix seconds of the instance launch); leave it out.'),
});

// dpo/orpo train a LoRA adapter; its base is 16-bit or 4-bit as for the SFT methods. The reference model of DPO
// is that base with the adapter switched off (TRL's PEFT path), so no second copy of the weights is loaded.
export const runSpecPreference = z.strictObject({
  base_method: z.enum(['lora-bf16', 'qlora']).optional().describe('The adapter a dpo/orpo run trains: lora-bf16 (16-bit base, the default) or qlora (4-bit base, bitsandbytes settings from quantization).'),
  beta: z.number().positive().max(100).optional().describe("TRL's beta: for dpo the strength of the pull towards the reference model (TRL's default 0.1), for orpo the weight of the odds-ratio loss (TRL's default 0.1)."),
});

export const runSpecSchema = z.strictObject({
  version: z.literal(RUN_SPEC_VERSION).describe('Run spec format version; 1.'),
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'letters, digits, ".", "_" and "-", at most 64, starting with a letter or digit').optional()
    .describe('Run name (also the W&B run name unless wandb.run_name is set): letters, digits, ".", "_", "-".'),
  model: runSpecModel.optional().describe('The base model. Required unless `command` runs your own script.'),
  method: z.enum(['qlora', 'lora-bf16', 'full', 'dpo', 'orpo']).optional().describe('qlora (4-bit base + LoRA), lora-bf16 (16-bit base + LoRA), full fine-tuning, or preference tuning with TRL: dpo or orpo (a LoRA adapter on the base preference.base_method names; data rows with chosen and rejected). Required unless `command` is given.'),
  preference: runSpecPreference.optional().describe('Preference tuning settings (method dpo or orpo).'),
  quantization: runSpecQuantization.optional().describe('bitsandbytes settings for the base model (qlora).'),
  lora: runSpecLora.optional().describe('LoRA adapter settings (peft LoraConfig).'),
  data: runSpecData.optional().describe('Training and evaluation data. Required unless `command` is given.'),
  trainer: runSpecTrainer.optional().describe('Trainer hyperparameters (HF TrainingArguments names in short form).'),
  launcher: runSpecLauncher.optional().describe('How the process starts; default python with one process.'),
  command: nonEmpty.optional().describe('Your own training command, run instead of the built-in trainer, e.g. "python train_vqa.py --bf16 True".'),
  target: runSpecTarget.describe('Where to run: provider, host and GPU.'),
  env_file: relPath('A .env file (relative to this file) whose variables are written to the host as a 0600 file, never on a command line.').optional(),
  wandb: runSpecWandb.optional().describe('Weights & Biases reporting.'),
  outputs: runSpecOutputs.optional().describe('Where outputs go and what comes back.'),
  teardown: runSpecTeardown.optional().describe('Instance teardown when the run ends or idles.'),
  budget: runSpecBudget.optional().describe('A spend or time limit the GPU host enforces by itself (max_usd and/or max_hours).'),
  watchdog: runSpecWatchdog.optional().describe('Stall detection on training progress, enforced by the GPU host with VS Code closed.'),
  speed: z.enum(['auto', 'off']).optional().describe("auto (default): the fast paths known to train the same for this model family and GPU (FlashAttention-2, Liger kernels, fused AdamW); the run's first event says what was chosen and why. off: exactly what the spec says."),
});
