// Every diagnostic code, in one table: the README's table is checked against it by a unit test, so
// a new rule cannot ship without its documentation. Codes are stable: never renumber.
import { KINDS } from './registry';
import type { ConfigKind, Severity } from './types';

export interface CodeInfo {
  readonly code: string;
  readonly severity: Severity;
  readonly title: string;
}

const fixed: CodeInfo[] = [
  { code: 'RFT001', severity: 'error', title: 'YAML syntax error' },
  { code: 'RFT002', severity: 'error', title: 'JSON syntax error' },
  { code: 'RFT003', severity: 'error', title: 'Binary file or invalid UTF-8' },
  { code: 'RFT004', severity: 'warning', title: 'File too large to check (over 1 MB; in the editor over 96 KB when it needs the full YAML parser)' },
  { code: 'RFT005', severity: 'error', title: 'Nesting deeper than 128 levels' },
  { code: 'RFT006', severity: 'error', title: 'Aliases expand to too many nodes (alias bomb)' },
  { code: 'RFT007', severity: 'error', title: 'Duplicate key' },
  { code: 'RFT008', severity: 'error', title: 'Empty document, or the top level is not a mapping' },
  { code: 'RFT009', severity: 'error', title: 'Internal error in a check (please report)' },
  { code: 'RFT510', severity: 'error', title: 'Sweep: max not greater than min' },
  { code: 'RFT511', severity: 'error', title: 'Sweep: log distribution bounds (min ≤ 0, or exponents vs values)' },
  { code: 'RFT512', severity: 'error', title: 'Sweep: int_uniform bounds not integers, or probabilities not summing to 1' },
  { code: 'RFT513', severity: 'error', title: 'Sweep: bayes without a metric' },
  { code: 'RFT514', severity: 'error', title: 'Sweep: parameter without values/distribution, or grid without discrete values' },
  {
    code: 'RFT600',
    severity: 'error',
    title: '.env: line is not KEY=value, bad name, unclosed quote, or text after a closing quote (quoted values may span lines)',
  },
  { code: 'RFT601', severity: 'warning', title: '.env: duplicate key' },
  {
    code: 'RFT602',
    severity: 'warning',
    title: '.env: token the configs need is empty or missing (HF_TOKEN, WANDB_API_KEY; an error when W&B reporting is on and WANDB_API_KEY is empty)',
  },
  { code: 'RFT603', severity: 'error', title: '.env: numeric override out of range (LEARNING_RATE 1e-6..1e-2, positive BATCH_SIZE/GRAD_ACCUM/MAX_STEPS)' },
  { code: 'RFT604', severity: 'error', title: '.env: path that must exist does not (ACCELERATE_CONFIG, dataset path)' },
  { code: 'RFT605', severity: 'error', title: '.env: CUDA_VISIBLE_DEVICES syntax' },
  { code: 'RFT606', severity: 'error', title: '.env: PYTORCH_CUDA_ALLOC_CONF syntax' },
  { code: 'RFT607', severity: 'warning', title: '.env with real-looking tokens is tracked by git' },
  {
    code: 'RFT611',
    severity: 'warning',
    title: ".env: token or key that is still an example's placeholder (hf_your_token_here, <your-key>, xxx, changeme, …)",
  },
  { code: 'RFT608', severity: 'warning', title: '.env: name with a dot, which a shell cannot export (left out of the run environment)' },
  {
    code: 'RFT609',
    severity: 'warning',
    title:
      '.env: variable that points credentials or data at another server (HF_ENDPOINT, WANDB_BASE_URL, MLFLOW_TRACKING_URI, AWS_ENDPOINT_URL*, *_PROXY, CA bundles, package indexes)',
  },
  {
    code: 'RFT610',
    severity: 'error',
    title:
      '.env: variable that controls the interpreter or the runner on the host (PYTHONHOME, PYTHONSTARTUP, PYTHONSAFEPATH, LD_PRELOAD, PATH, RFT_*, …): the run is refused',
  },
  { code: 'RFT801', severity: 'error', title: 'bf16 on a GPU without bf16 (T4, V100)' },
  { code: 'RFT802', severity: 'error', title: '4-bit loading with FlashAttention-2 without a 16-bit compute dtype (uint8 dtype failure)' },
  { code: 'RFT803', severity: 'error', title: 'QLoRA with DeepSpeed ZeRO-3' },
  { code: 'RFT804', severity: 'error', title: 'bf16 and fp16 both on' },
  {
    code: 'RFT805',
    severity: 'error',
    title:
      'num_processes does not match the GPUs (warning where the launcher ignores it: distributed_type NO, launcher python, a config file overridden by --num_processes)',
  },
  { code: 'RFT806', severity: 'error', title: 'DeepSpeed train_batch_size ≠ micro batch × accumulation × world size' },
  { code: 'RFT807', severity: 'error', title: 'load_best_model_at_end without matching eval/save strategies or step multiples' },
  { code: 'RFT808', severity: 'info', title: 'lora_alpha far from 2 × r' },
  { code: 'RFT809', severity: 'error', title: 'Mixed precision differs between accelerate config and trainer' },
  { code: 'RFT810', severity: 'error', title: 'Token written into a YAML/JSON config' },
  { code: 'RFT811', severity: 'error', title: 'FlashAttention-2 on a GPU that cannot run it (T4, V100)' },
  { code: 'RFT812', severity: 'warning', title: '4-bit quantization settings disagree with the method' },
  { code: 'RFT813', severity: 'error', title: 'Referenced file does not exist (accelerate/DeepSpeed config, config.json; env file and data: warning)' },
  { code: 'RFT814', severity: 'error', title: 'Referenced file refused: not a regular file, outside the workspace, or over the size cap' },
  { code: 'RFT815', severity: 'warning', title: 'Several GPUs but launcher python (one process)' },
  { code: 'RFT816', severity: 'error', title: 'fp8 on a GPU without fp8 (needs L4, RTX 4090, H100, H200)' },
  { code: 'RFT817', severity: 'warning', title: 'accelerate config: bare no/yes that YAML 1.1 (PyYAML) reads as a boolean' },
  { code: 'RFT818', severity: 'warning', title: 'Learning rate above 1e-2 with LoRA/QLoRA (2e-4 is usual)' },
  {
    code: 'RFT850',
    severity: 'error',
    title:
      'Local JSONL/JSON training data the trainer would stop on (first rows): no column it reads, a message without role/content, or a role no chat template renders',
  },
  {
    code: 'RFT819',
    severity: 'error',
    title: 'GPU, or number of GPUs to a machine, the provider does not offer (EC2, GCP; Lambda: warning for the GPU, its list is live)',
  },
  { code: 'RFT820', severity: 'error', title: 'target.volume on a provider without persistent volumes (EC2 only)' },
  {
    code: 'RFT821',
    severity: 'error',
    title: "target.region or target.zone is not a name of the provider's form (EC2 region/zone, GCP region/zone, Lambda region)",
  },
  {
    code: 'RFT822',
    severity: 'warning',
    title: 'The estimate (training, time to ready and setup) exceeds budget.max_usd or budget.max_hours: the host would stop the run early',
  },
  {
    code: 'RFT824',
    severity: 'error',
    title: 'target.instance_type cannot hold target.gpu (GCP N1 vs A2/A3/G2, EC2 families), or has another GPU count (Lambda: warning)',
  },
  { code: 'RFT825', severity: 'warning', title: 'DeepSpeed offload_param (accelerate: offload_param_device) below ZeRO stage 3, where DeepSpeed ignores it' },
  { code: 'RFT823', severity: 'warning', title: 'budget.max_usd on an own SSH host or this machine without budget.price_per_hour: the host cannot count it' },
  {
    code: 'RFT840',
    severity: 'error',
    title:
      'Learning-rate schedule that cannot run: cosine_with_min_lr or warmup_stable_decay without its lr_scheduler_kwargs, reduce_lr_on_plateau without evaluation',
  },
  { code: 'RFT841', severity: 'warning', title: 'Attention kernel the model family refuses at load time (gpt-oss, Gemma-2 under transformers 5 with sdpa)' },
  {
    code: 'RFT830',
    severity: 'error',
    title:
      'Multi-node spec without one SSH host per machine in target.hosts or an ec2/gcp/lambda target (on-demand, terminated at the end), or not torchrun/accelerate',
  },
  { code: 'RFT901', severity: 'error', title: 'Estimated peak GPU memory does not fit the target GPU (with the cheapest fixes)' },
  { code: 'RFT903', severity: 'warning', title: "Estimated peak GPU memory within 10% of the GPU's memory" },
];

const SCHEMA_CODES: ReadonlyArray<readonly [number, Severity, string]> = [
  [0, 'warning', 'unknown key (did you mean …)'],
  [1, 'error', 'missing required key'],
  [2, 'error', 'wrong type or form'],
  [3, 'error', 'value out of range'],
  [4, 'error', 'value not one of the allowed values'],
  [5, 'error', 'value in the wrong format'],
];

export function allCodes(): CodeInfo[] {
  const out = [...fixed];
  for (const k of Object.keys(KINDS) as ConfigKind[]) {
    const info = KINDS[k];
    if (!info.schema) continue;
    for (const [off, severity, what] of SCHEMA_CODES) {
      if (off === 0 && !info.reportUnknown) continue;
      out.push({ code: `RFT${String(info.codeBase + off).padStart(3, '0')}`, severity, title: `${info.title}: ${what}` });
    }
  }
  return out.sort((a, b) => a.code.localeCompare(b.code));
}
