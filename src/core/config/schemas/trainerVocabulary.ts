// Every other key a trainer YAML legitimately holds: the rest of transformers' TrainingArguments
// (4.x and 5.x), TRL's trainer configs, ModelConfig and ScriptArguments, and the script arguments of
// the recipe repositories whose YAML files look exactly like these (alignment-handbook, open-r1).
// HfArgumentParser/TrlParser reject keys that no dataclass declares, so an unknown key is worth a
// warning; these are known, and their values are left to the library that reads them (the typed
// fields with ranges live in hfFields.ts). Lists are taken from the sources named on each group.
import { z } from 'zod';

interface KeyGroup {
  readonly source: string;
  readonly keys: readonly string[];
}

export const TRAINER_KEY_GROUPS: readonly KeyGroup[] = [
  {
    // transformers/training_args.py (TrainingArguments, Seq2SeqTrainingArguments), 4.x and 5.x.
    source: 'transformers TrainingArguments',
    keys: [
      'per_gpu_train_batch_size', 'per_gpu_eval_batch_size', 'torch_empty_cache_steps', 'log_level_replica', 'log_on_each_node',
      'logging_nan_inf_filter', 'restore_callback_states_from_checkpoint', 'no_cuda', 'use_mps_device', 'jit_mode_eval', 'use_ipex',
      'fp16_opt_level', 'tpu_num_cores', 'tpu_metrics_debug', 'debug', 'dataloader_prefetch_factor', 'past_index',
      'fsdp_min_num_params', 'fsdp_transformer_layer_cls_to_wrap', 'tp_size', 'accelerator_config', 'parallelism_config', 'optim_target_modules',
      'adafactor', 'ddp_bucket_cap_mb', 'ddp_broadcast_buffers', 'skip_memory_metrics', 'use_legacy_prediction_loop', 'hub_always_push',
      'hub_revision', 'include_inputs_for_metrics', 'include_for_metrics', 'eval_do_concat_batches', 'fp16_backend', 'push_to_hub_model_id',
      'push_to_hub_organization', 'push_to_hub_token', 'mp_parameters', 'full_determinism', 'torchdynamo', 'ray_scope',
      'torch_compile_backend', 'torch_compile_mode', 'dispatch_batches', 'split_batches', 'include_tokens_per_second', 'batch_eval_metrics',
      'eval_on_start', 'liger_kernel_config', 'eval_use_gather_object', 'project', 'trackio_space_id', 'enable_jit_checkpoint',
      'train_sampling_strategy', 'use_cache', 'sortish_sampler', 'predict_with_generate', 'generation_max_length', 'generation_num_beams',
      'generation_config',
    ],
  },
  {
    // trl/trainer/*_config.py and trl/experimental/*/*_config.py, current and earlier releases.
    source: 'TRL trainer config (SFT, DPO, KTO, ORPO, CPO, GRPO, RLOO, PPO, reward, distillation, …)',
    keys: [
      'activation_offloading', 'alpha', 'batch_size', 'beta', 'beta1', 'beta2', 'cache_implementation', 'cast_lm_head_to_fp32',
      'center_rewards_coefficient', 'chat_template_kwargs', 'chat_template_path', 'chars_per_token', 'cliprange', 'cliprange_value',
      'cpo_alpha', 'dataset_batch_size', 'delta', 'desirable_weight', 'disable_dropout', 'discopop_tau', 'ds3_gather_for_generation',
      'entropy_coef', 'eos_token', 'epsilon', 'epsilon_high', 'eval_packing', 'f_alpha_divergence_coef', 'f_divergence_type',
      'force_use_ref_model', 'gamma', 'generate_during_eval', 'generation_batch_size', 'generation_kwargs', 'importance_sampling_level',
      'is_encoder_decoder', 'kl_coef', 'kl_estimator', 'label_pad_token_id', 'label_smoothing', 'lam', 'ld_alpha', 'lmbda',
      'local_rollout_forward_batch_size', 'log_completions', 'log_completions_hub_repo', 'loss_type', 'loss_weights',
      'mask_truncated_completions', 'max_completion_length', 'max_density_ratio', 'max_new_tokens', 'max_prompt_length',
      'max_target_length', 'micro_batch_size', 'min_density_ratio', 'min_p', 'mini_batch_size', 'missing_eos_penalty', 'mixture_coef',
      'model_adapter_name', 'model_init_kwargs', 'num_generations', 'num_iterations', 'num_mini_batches', 'num_of_sequences',
      'num_ppo_epochs', 'num_sample_generations', 'off_policy_mask_threshold', 'packing_strategy', 'pad_to_multiple_of', 'pad_token',
      'padding_free', 'padding_value', 'precompute_ref_batch_size', 'precompute_ref_log_probs', 'prompt_sample_size', 'ref_adapter_name',
      'ref_model_init_kwargs', 'ref_model_mixup_alpha', 'ref_model_sync_steps', 'reference_free', 'repetition_penalty', 'response_length',
      'reward_clip_range', 'reward_model_path', 'reward_weights', 'rpo_alpha', 'scale_rewards', 'seq_kd', 'sft_model_path',
      'shuffle_dataset', 'simpo_gamma', 'steps_per_generation', 'stop_token', 'stop_token_id', 'sync_ref_model', 'teacher_model_init_kwargs',
      'teacher_model_name_or_path', 'teacher_model_revision', 'temperature', 'tools', 'top_entropy_quantile', 'top_k', 'top_p',
      'total_episodes', 'truncation_mode', 'undesirable_weight', 'use_liger', 'use_liger_loss', 'use_logits_to_keep',
      'use_num_logits_to_keep', 'use_transformers_paged', 'use_vllm', 'use_weighting', 'vf_coef', 'vllm_enable_sleep_mode',
      'vllm_gpu_memory_utilization', 'vllm_guided_decoding_regex', 'vllm_importance_sampling_cap', 'vllm_importance_sampling_correction',
      'vllm_mode', 'vllm_model_impl', 'vllm_server_base_url', 'vllm_server_host', 'vllm_server_port', 'vllm_server_timeout',
      'vllm_tensor_parallel_size', 'wandb_log_unique_prompts', 'whiten_rewards', 'world_size', 'log_unique_prompts', 'num_completions_to_print',
      'num_generations_eval', 'multi_objective_aggregation', 'log_multimodal', 'use_bias_correction_kl', 'vllm_max_model_length',
      'vllm_structured_outputs_regex', 'vllm_sync_frequency', 'vllm_group_port', 'sapo_temperature_neg', 'sapo_temperature_pos',
      'vllm_device', 'vllm_dtype', 'vllm_max_model_len', 'vllm_enable_prefix_caching', 'step_separator', 'train_on_last_step_only', 'normalize_advantages', 'rkl_advantage', 'kd_temperature', 'length_normalization',
      'single_step_decomposition', 'replay_buffer_size', 'tpo_alpha', 'tpo_l_gamma', 'filter_empty',
    ],
  },
  {
    // trl/trainer/model_config.py (ModelConfig) and trl/scripts/utils.py (ScriptArguments).
    source: 'TRL ModelConfig / ScriptArguments',
    keys: [
      'dtype', 'lora_modules_to_save', 'lora_target_parameters', 'dataset_config', 'dataset_train_split', 'dataset_test_split',
      'dataset_streaming', 'dataset_mixture', 'gradient_checkpointing_use_reentrant', 'ignore_bias_buffers',
    ],
  },
  {
    // alignment-handbook src/alignment/configs.py (current and the 2024 ModelArguments/DataArguments).
    source: 'alignment-handbook script arguments',
    keys: [
      'chat_template', 'dataset_mixer', 'dataset_splits', 'dataset_configs', 'text_column', 'preprocessing_num_workers', 'truncation_side',
      'auto_insert_empty_system_msg', 'base_model_revision', 'model_code_revision', 'tokenizer_name_or_path', 'use_flash_attention_2',
      'hub_model_revision',
    ],
  },
  {
    // open-r1 src/open_r1/configs.py (GRPOScriptArguments, SFTConfig/GRPOConfig additions).
    source: 'open-r1 script arguments',
    keys: [
      'benchmarks', 'callbacks', 'system_prompt', 'reward_funcs', 'dataset_prompt_column', 'code_language', 'code_provider',
      'code_eval_test_batch_size', 'code_eval_scoring_mode', 'cosine_max_len', 'cosine_max_value_correct', 'cosine_max_value_wrong',
      'cosine_min_value_correct', 'cosine_min_value_wrong', 'e2b_router_url', 'morph_router_url', 'ioi_provider', 'max_completion_len',
      'overwrite_hub_revision', 'parallel_code_exec_per_proc', 'push_to_hub_revision', 'repetition_max_penalty', 'repetition_n_grams',
      'soft_punish_cache', 'wandb_entity', 'wandb_project', 'wandb_run_group',
    ],
  },
];

/** The known keys not in `typed`, each accepted as is and described by where it comes from. */
export function knownKeyFields(typed: Readonly<Record<string, unknown>>): Record<string, z.ZodOptional<z.ZodUnknown>> {
  const out: Record<string, z.ZodOptional<z.ZodUnknown>> = {};
  for (const g of TRAINER_KEY_GROUPS) {
    for (const k of g.keys) {
      if (k in typed || k in out) continue;
      out[k] = z.unknown().optional().describe(`${g.source} option; its value is checked by the library that reads it.`);
    }
  }
  return out;
}
