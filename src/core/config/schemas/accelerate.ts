// HF accelerate config YAML (what `accelerate config` writes), every field the seeds show and the
// rest of accelerate's ClusterConfig. Descriptions follow accelerate's own `accelerate config` prompts.
import { z } from 'zod';

const bool = z.boolean();
const auto = z.literal('auto');

export const accelerateDeepSpeed = z.strictObject({
  gradient_accumulation_steps: z.union([z.number().int().min(1), auto]).optional().describe('Micro-batches per optimizer step; "auto" takes the trainer\'s value.'),
  gradient_clipping: z.union([z.number().min(0), auto]).optional().describe('Gradient clipping norm; "auto" takes the trainer\'s max_grad_norm.'),
  offload_optimizer_device: z.enum(['none', 'cpu', 'nvme']).optional().describe('Where optimizer states live: none (GPU), cpu or nvme. Offloading saves GPU memory at the cost of speed.'),
  offload_param_device: z.enum(['none', 'cpu', 'nvme']).optional().describe('Where parameters live between uses (ZeRO-3 only): none, cpu or nvme.'),
  offload_optimizer_nvme_path: z.string().optional().describe('NVMe path for optimizer offload.'),
  offload_param_nvme_path: z.string().optional().describe('NVMe path for parameter offload.'),
  zero3_init_flag: bool.optional().describe('Build the model already partitioned (deepspeed.zero.Init); ZeRO-3 only.'),
  zero3_save_16bit_model: bool.optional().describe('Gather a 16-bit copy of the weights when saving (ZeRO-3).'),
  zero_stage: z.number().int().min(0).max(3).optional().describe('ZeRO stage 0–3: 1 shards optimizer states, 2 also gradients, 3 also parameters.'),
  deepspeed_config_file: z.string().min(1).optional().describe('A DeepSpeed JSON file to use instead of these fields.'),
  deepspeed_multinode_launcher: z.enum(['pdsh', 'standard', 'openmpi', 'mvapich', 'mpich', 'nossh']).optional().describe('How DeepSpeed starts processes on several machines.'),
  deepspeed_hostfile: z.string().optional().describe('Hostfile for multi-node DeepSpeed.'),
  bf16: z.strictObject({ enabled: z.union([bool, auto]).describe('Train in bf16 under DeepSpeed.') }).optional().describe('DeepSpeed bf16 section.'),
  fp16: z.strictObject({ enabled: z.union([bool, auto]).describe('Train in fp16 under DeepSpeed.') }).optional().describe('DeepSpeed fp16 section.'),
  deepspeed_moe_layer_cls_names: z.string().optional().describe('Comma-separated MoE layer class names.'),
  deepspeed_exclusion_filter: z.string().optional().describe('Hosts or GPUs to leave out with a multi-node launcher (DeepSpeed --exclude).'),
  deepspeed_inclusion_filter: z.string().optional().describe('Hosts or GPUs to use with a multi-node launcher (DeepSpeed --include).'),
});

export const accelerateFsdp = z.strictObject({
  fsdp_auto_wrap_policy: z.enum(['TRANSFORMER_BASED_WRAP', 'SIZE_BASED_WRAP', 'NO_WRAP']).optional().describe('How FSDP wraps modules into shards.'),
  fsdp_backward_prefetch: z.enum(['BACKWARD_PRE', 'BACKWARD_POST', 'NO_PREFETCH']).optional().describe('When to prefetch the next parameters in the backward pass.'),
  fsdp_backward_prefetch_policy: z.enum(['BACKWARD_PRE', 'BACKWARD_POST', 'NO_PREFETCH']).optional().describe('Older name of fsdp_backward_prefetch.'),
  fsdp_cpu_ram_efficient_loading: bool.optional().describe('Load weights on rank 0 only and broadcast them.'),
  fsdp_forward_prefetch: bool.optional().describe('Prefetch the next parameters in the forward pass.'),
  fsdp_offload_params: bool.optional().describe('Offload parameters and gradients to CPU.'),
  fsdp_sharding_strategy: z.union([z.enum(['FULL_SHARD', 'SHARD_GRAD_OP', 'NO_SHARD', 'HYBRID_SHARD', 'HYBRID_SHARD_ZERO2']), z.number().int().min(1).max(5)]).optional().describe('FULL_SHARD (like ZeRO-3), SHARD_GRAD_OP (like ZeRO-2), NO_SHARD, HYBRID_SHARD, HYBRID_SHARD_ZERO2.'),
  fsdp_state_dict_type: z.enum(['FULL_STATE_DICT', 'LOCAL_STATE_DICT', 'SHARDED_STATE_DICT']).optional().describe('How checkpoints are written.'),
  fsdp_sync_module_states: bool.optional().describe('Broadcast module states from rank 0 at start.'),
  fsdp_use_orig_params: bool.optional().describe('Keep the original parameters (needed for LoRA with FSDP1).'),
  fsdp_transformer_layer_cls_to_wrap: z.string().optional().describe('Decoder layer class names to wrap, e.g. LlamaDecoderLayer.'),
  fsdp_min_num_params: z.number().int().min(0).optional().describe('Minimum parameters per shard with SIZE_BASED_WRAP.'),
  fsdp_version: z.union([z.literal(1), z.literal(2)]).optional().describe('FSDP 1 or 2.'),
  fsdp_activation_checkpointing: bool.optional().describe('Activation checkpointing inside FSDP.'),
  fsdp_reshard_after_forward: z.union([bool, z.enum(['FULL_SHARD', 'SHARD_GRAD_OP', 'NO_SHARD', 'HYBRID_SHARD', 'HYBRID_SHARD_ZERO2'])]).optional().describe('Free gathered parameters after forward (FSDP2).'),
  fsdp_ignored_modules: z.union([z.string(), z.array(z.string())]).optional().describe('Modules FSDP leaves unsharded (a regular expression over module names).'),
});

// The last two are SageMaker's own (SageMakerDistributedType), valid with compute_environment AMAZON_SAGEMAKER.
export const DISTRIBUTED_TYPES = ['NO', 'MULTI_GPU', 'MULTI_CPU', 'MULTI_NPU', 'MULTI_XPU', 'MULTI_MLU', 'MULTI_SDAA', 'MULTI_MUSA', 'MULTI_HPU', 'MULTI_NEURON', 'DEEPSPEED', 'FSDP', 'TPU', 'XLA', 'MEGATRON_LM', 'DATA_PARALLEL', 'MODEL_PARALLEL'] as const;

export const accelerateSchema = z.strictObject({
  compute_environment: z.enum(['LOCAL_MACHINE', 'AMAZON_SAGEMAKER']).optional().describe('LOCAL_MACHINE for any SSH/cloud host; AMAZON_SAGEMAKER for SageMaker jobs.'),
  debug: bool.optional().describe('Extra distributed-operation checks (slower).'),
  distributed_type: z.enum(DISTRIBUTED_TYPES).optional().describe('NO (one process), MULTI_GPU (DDP), DEEPSPEED, FSDP, MULTI_CPU, TPU/XLA, … Write \'NO\' quoted: YAML 1.1 readers take a bare NO as false.'),
  // accelerate config writes 'no'/'yes'; ClusterConfig declares it a bool, so true/false load too.
  downcast_bf16: z.union([z.enum(['no', 'yes']), bool]).optional().describe('TPU only: downcast float32 to bf16. Write \'no\' quoted (or true/false).'),
  enable_cpu_affinity: bool.optional().describe('Pin processes to the CPUs nearest their GPU.'),
  gpu_ids: z.union([z.literal('all'), z.string().regex(/^\d+(,\s*\d+)*$/, 'must be "all" or comma-separated GPU indices like "0,1"'), z.number().int().min(0)]).optional().describe('GPUs to use: all, or comma-separated indices like 0,1.'),
  machine_rank: z.number().int().min(0).optional().describe('This machine\'s rank (0 on the main machine).'),
  main_process_ip: z.string().min(1).optional().describe('IP of the rank-0 machine (multi-machine).'),
  main_process_port: z.number().int().min(1).max(65535).optional().describe('Port of the rank-0 machine, 1–65535.'),
  main_training_function: z.string().min(1).optional().describe('Function accelerate calls in notebooks/TPU launches; main by default.'),
  mixed_precision: z.enum(['no', 'fp16', 'bf16', 'fp8']).optional().describe('no, fp16 (any CUDA GPU), bf16 (Ampere or newer: not T4/V100) or fp8 (Ada/Hopper: L4, RTX 4090, H100, H200).'),
  num_machines: z.number().int().min(1).optional().describe('Machines taking part.'),
  num_processes: z.number().int().min(1).optional().describe('Processes in total across all machines, normally the number of GPUs.'),
  rdzv_backend: z.enum(['static', 'c10d', 'etcd', 'etcd-v2']).optional().describe('Rendezvous backend for multi-machine runs: static or c10d.'),
  same_network: bool.optional().describe('Whether all machines are on the same local network.'),
  tpu_env: z.array(z.string()).optional().describe('Environment variables for TPU pods.'),
  tpu_name: z.string().optional().describe('TPU name.'),
  tpu_zone: z.string().optional().describe('TPU zone.'),
  tpu_use_cluster: bool.optional().describe('Run on a TPU pod.'),
  tpu_use_sudo: bool.optional().describe('Use sudo for TPU pod commands.'),
  tpu_vm: z.array(z.string()).optional().describe('TPU VM names.'),
  commands: z.union([z.string(), z.array(z.string())]).optional().describe('Commands to run on TPU pods.'),
  command_file: z.string().optional().describe('File of commands to run on TPU pods.'),
  use_cpu: bool.optional().describe('Train on CPU even when a GPU is present.'),
  deepspeed_config: accelerateDeepSpeed.optional().describe('DeepSpeed settings (distributed_type DEEPSPEED).'),
  fsdp_config: accelerateFsdp.optional().describe('FSDP settings (distributed_type FSDP).'),
  megatron_lm_config: z.record(z.string(), z.unknown()).optional().describe('Megatron-LM settings.'),
  dynamo_config: z.record(z.string(), z.unknown()).optional().describe('torch.compile settings (dynamo_backend, …).'),
  ipex_config: z.record(z.string(), z.unknown()).optional().describe('Intel extension settings.'),
  mpirun_config: z.record(z.string(), z.unknown()).optional().describe('mpirun settings for MULTI_CPU.'),
  fp8_config: z.record(z.string(), z.unknown()).optional().describe('FP8 recipe settings (mixed_precision fp8).'),
  parallelism_config: z.record(z.string(), z.unknown()).optional().describe('N-D parallelism sizes (parallelism_config_dp_replicate_size, _dp_shard_size, _tp_size, _cp_size, …); accelerate 1.10 and newer.'),
  // Read by accelerate's SageMakerConfig (compute_environment AMAZON_SAGEMAKER).
  ec2_instance_type: z.string().min(1).optional().describe('SageMaker: EC2 instance type of the training job, e.g. ml.p3.2xlarge.'),
  iam_role_name: z.string().min(1).optional().describe('SageMaker: IAM role the training job runs as.'),
  image_uri: z.string().optional().describe('SageMaker: training container image.'),
  profile: z.string().optional().describe('SageMaker: AWS profile to use.'),
  region: z.string().optional().describe('SageMaker: AWS region (us-east-1 by default).'),
  base_job_name: z.string().optional().describe('SageMaker: prefix of the training job name.'),
  pytorch_version: z.string().optional().describe('SageMaker: PyTorch version of the container.'),
  transformers_version: z.string().optional().describe('SageMaker: transformers version of the container.'),
  py_version: z.string().optional().describe('SageMaker: Python version of the container.'),
  sagemaker_inputs_file: z.string().optional().describe('SageMaker: TSV file of input channels.'),
  sagemaker_metrics_file: z.string().optional().describe('SageMaker: TSV file of metric definitions.'),
  additional_args: z.record(z.string(), z.unknown()).optional().describe('SageMaker: extra estimator arguments.'),
  // Older spellings that accelerate still converts on load (BaseConfig.process_config).
  fp16: bool.optional().describe('Old form of mixed_precision: fp16 (accelerate converts it when loading).'),
  dynamo_backend: z.string().optional().describe('Old form of dynamo_config.dynamo_backend (accelerate converts it when loading).'),
});
