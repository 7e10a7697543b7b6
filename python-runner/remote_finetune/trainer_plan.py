"""What the built-in trainer will do, decided from the spec with the stdlib only (so it is tested
without torch): attention implementation, dtypes, 4-bit settings, LoRA settings, training
arguments, dataset source, resume checkpoint. trainer.py turns these into library objects.
"""

import json
import os
import re
from typing import Any, Callable, Dict, List, Optional, Tuple

from .spec import get, RunSpec

DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
# Our short names -> transformers' `optim` names. Any other name transformers knows (adamw_torch_fused,
# adamw_bnb_8bit, sgd, lion_8bit, ...) passes through unchanged; only an unknown one is replaced, with a warning.
OPTIMIZER_ALIASES = {"adamw_8bit": "adamw_bnb_8bit"}

Warn = Callable[[str, str], None]


def needs_bitsandbytes(optim: str) -> bool:
    # transformers' bitsandbytes optimizers: adamw_bnb_8bit, *_8bit, paged_* (all implemented by bitsandbytes).
    return "bnb" in optim or optim.endswith("_8bit") or optim.startswith("paged_")


def bf16_capable(capability: Optional[Tuple[int, int]]) -> Optional[bool]:
    """bf16 in hardware needs compute capability >= 8.0 (Ampere). torch.cuda.is_bf16_supported() says True on
    T4 (7.5) and V100 (7.0) too, where bf16 is emulated and many times slower. None: no GPU (CPU runs keep bf16)."""
    if capability is None:
        return None
    return capability[0] >= 8


def effective_precision(spec: Dict[str, Any], capability: Optional[Tuple[int, int]], warn: Warn) -> str:
    """The spec's precision, with bf16 turned into fp16 on GPUs without bf16 hardware."""
    precision = str(RunSpec(spec).trainer.precision)
    if precision == "bf16" and bf16_capable(capability) is False:
        warn("bf16 needs compute capability 8.0 or newer and this GPU has %d.%d; training in fp16 instead "
             "(set trainer.precision: fp16 to silence this)" % tuple(capability or (0, 0)), "bf16-fallback")
        return "fp16"
    return precision


def resolved_spec(spec: Dict[str, Any], capability: Optional[Tuple[int, int]], warn: Warn) -> Dict[str, Any]:
    """The spec with the precision decided for this GPU; model and compute dtypes follow it (a T4 gets fp16
    weights and a float16 QLoRA compute dtype, not bf16 ones it would emulate)."""
    precision = effective_precision(spec, capability, warn)
    if precision == str(RunSpec(spec).trainer.precision):
        return spec
    out = dict(spec, trainer=dict(spec.get("trainer") or {}, precision=precision))
    if RunSpec(spec).quantization.compute_dtype == "bfloat16":
        out["quantization"] = dict(spec.get("quantization") or {}, compute_dtype="float16")
    return out

# Spec trainer keys that are ours or renamed; any other key naming a TrainingArguments field passes through.
RENAMED = {
    "epochs": "num_train_epochs", "per_device_batch_size": "per_device_train_batch_size",
    "gradient_accumulation": "gradient_accumulation_steps", "lr_scheduler": "lr_scheduler_type",
}
# resume_from_checkpoint is ours too: resume_checkpoint decides it and trainer.train takes it (TrainingArguments ignores it).
# liger, compile and backend are the speed plan's (speed.py): liger and compile become use_liger_kernel and torch_compile.
OWN_KEYS = {"precision", "optimizer", "use_sft_trainer", "gradient_checkpointing", "eval_strategy", "report_to", "resume_from_checkpoint",
            "liger", "compile", "backend"}
# Every trainer.* key of the run-spec schema (src/core/config/schemas/runSpec.ts; tests/test_spec_fields.py holds
# the two equal). Any other key is not checked by the validator, so passing it on is said out loud.
SPEC_TRAINER_KEYS = set(RENAMED) | OWN_KEYS | {
    "max_steps", "learning_rate", "lr_scheduler_kwargs", "warmup_ratio", "warmup_steps", "weight_decay", "max_grad_norm",
    "logging_steps", "eval_steps", "save_strategy", "save_steps", "save_total_limit", "load_best_model_at_end",
    "metric_for_best_model", "seed",
}
# Pass-through keys that make TrainingArguments import a package: without it the run would end at start-up.
KEY_PACKAGES = {"use_liger_kernel": "liger_kernel"}
# Schedulers whose transformers factory has required arguments the type alone cannot give
# (get_cosine_with_min_lr_schedule_with_warmup: min_lr or min_lr_rate; get_wsd_schedule: num_decay_steps).
SCHEDULER_NEEDS = {"cosine_with_min_lr": (("min_lr", "min_lr_rate"),), "warmup_stable_decay": (("num_decay_steps",),)}


# Preference methods train a LoRA adapter on a base chosen by preference.base_method: lora-bf16 (16-bit base, the
# default) or qlora (4-bit base). The reference model is that base with the adapter switched off, so no second copy
# of the weights is loaded.
PREFERENCE_METHODS = ("dpo", "orpo")


def base_method(spec: Dict[str, Any]) -> str:
    """The method that decides weights and adapter: the spec's own, or a preference run's preference.base_method."""
    method = str(spec.get("method", "qlora"))
    if method in PREFERENCE_METHODS:
        return str(RunSpec(spec).preference.base_method)
    return method


def base_spec(spec: Dict[str, Any]) -> Dict[str, Any]:
    """The spec as the model loader, LoRA and quantisation helpers read it (method = base_method)."""
    base = base_method(spec)
    return spec if base == spec.get("method") else dict(spec, method=base)


def preference_kwargs(spec: Dict[str, Any], fields: List[str]) -> Dict[str, Any]:
    """DPOConfig / ORPOConfig arguments beyond TrainingArguments', only the names this trl has. beta is TRL's
    (DPO: KL strength, default 0.1; ORPO: odds-ratio weight, default 0.1); data.max_seq_length bounds prompt plus
    answer as it bounds an SFT row."""
    kw: Dict[str, Any] = {"max_length": int(RunSpec(spec).data.max_seq_length)}
    beta = RunSpec(spec).preference.beta
    if beta is not None:
        kw["beta"] = float(beta)
    return {k: v for k, v in kw.items() if k in fields}


class SpecRefused(ValueError):
    """A spec the runner will not start: the message names the field and the fix."""


def scheduler_problem(spec: Dict[str, Any], has_eval: bool) -> Optional[str]:
    """Why the spec's scheduler cannot run, or None (the validator says the same before anything is billed)."""
    t = spec.get("trainer") or {}
    name = str(t.get("lr_scheduler", "linear"))
    kwargs = t.get("lr_scheduler_kwargs") or {}
    for alternatives in SCHEDULER_NEEDS.get(name, ()):
        if not any(k in kwargs for k in alternatives):
            return ("trainer.lr_scheduler %s needs trainer.lr_scheduler_kwargs.%s" % (name, " or ".join(alternatives)))
    if name == "reduce_lr_on_plateau" and (not has_eval or str(t.get("eval_strategy", "no")) == "no"):
        return ("trainer.lr_scheduler reduce_lr_on_plateau steps on the eval loss: set data.eval and "
                "trainer.eval_strategy (steps or epoch), or pick another scheduler")
    return None


def uses_sft(spec: Dict[str, Any], trl_installed: bool) -> bool:
    """TRL's SFTTrainer when asked for, and for data.packing (packing is TRL's: padding-free, with position ids)."""
    if bool(RunSpec(spec).data.packing):
        if not trl_installed:
            raise SpecRefused("data.packing needs TRL (its SFTTrainer packs), which is not installed in the run's venv")
        return True
    return bool(RunSpec(spec).trainer.use_sft_trainer) and trl_installed


def sft_kwargs(spec: Dict[str, Any], fields: List[str]) -> Dict[str, Any]:
    """SFTConfig arguments beyond TrainingArguments'. trl 0.x named the length max_seq_length, trl >= 0.20
    max_length; only names this version has are passed. Packing is best-fit-decreasing into padding-free rows
    with position ids that restart at each example, so no example attends to another."""
    max_len = int(RunSpec(spec).data.max_seq_length)
    packing = bool(RunSpec(spec).data.packing)
    kw: Dict[str, Any] = {"dataset_text_field": "text", "max_seq_length": max_len, "max_length": max_len, "packing": packing}
    if packing:
        kw.update(packing_strategy="bfd", padding_free=True)
    return {k: v for k, v in kw.items() if k in fields}


def model_dtype(spec: Dict[str, Any]) -> str:
    """Weights dtype for 16-bit methods; QLoRA's non-quantised parts follow the compute dtype. A full fine-tune
    in fp16 keeps fp32 master weights: the fp16 grad scaler refuses to unscale fp16 gradients, and pure fp16
    weights lose small updates. (bf16 has fp32's range, so bf16 weights are what bf16 training uses.)"""
    if spec["method"] == "qlora":
        return str(RunSpec(spec).quantization.compute_dtype)
    precision = str(RunSpec(spec).trainer.precision)
    if spec["method"] == "full" and precision == "fp16":
        return "float32"
    return DTYPES.get(precision, "bfloat16")


def choose_attention(spec: Dict[str, Any], fa2_installed: bool, capability: Optional[Tuple[int, int]], warn: Warn,
                     supports: Optional[Dict[str, bool]] = None) -> str:
    """`auto` (and an explicit flash_attention_2): flash_attention_2 when flash-attn is installed, the GPU is Ampere+,
    the weights are 16-bit and the model class supports it; else sdpa where the class supports it; else eager.
    `supports` ({"flash_attention_2": bool, "sdpa": bool}) is read from the model class (attention_support in
    trainer.py); None when it could not be read, and then both are assumed. Gemma-2 and gpt-oss refuse sdpa at
    load time, so asking them for it would end the run after the GPU is billed. Never FlashAttention-2 with 4-bit
    weights (their uint8 storage is what broke the seed's A100 run)."""
    asked = str(RunSpec(spec).model.attn_implementation)
    has = dict({"flash_attention_2": True, "sdpa": True}, **(supports or {}))
    sixteen_bit = model_dtype(spec) in ("bfloat16", "float16")
    ampere = capability is not None and capability[0] >= 8
    fallback = "sdpa" if has["sdpa"] else "eager"
    if asked == "eager":
        return asked
    if asked == "sdpa":
        if not has["sdpa"]:
            warn("this model class does not support sdpa attention; using eager (set model.attn_implementation: auto "
                 "or eager to silence this)", "sdpa-unsupported")
        return fallback
    if quantization_kwargs(spec) is not None:
        if asked == "flash_attention_2":
            warn("FlashAttention-2 is not used with bitsandbytes (4-bit QLoRA or 8-bit) weights; using %s. Use method "
                 "lora-bf16 to keep FlashAttention-2." % fallback, "fa2-qlora")
        return fallback
    if fa2_installed and ampere and sixteen_bit and has["flash_attention_2"]:
        return "flash_attention_2"
    if asked == "flash_attention_2":
        why = ("flash-attn is not installed" if not fa2_installed else "this GPU is older than Ampere" if not ampere
               else "the weights are not 16-bit" if not sixteen_bit else "this model class does not support it")
        warn("FlashAttention-2 was asked for but %s; using %s" % (why, fallback), "fa2-unavailable")
    return fallback


def quantization_kwargs(spec: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """BitsAndBytesConfig arguments (compute dtype by name), or None for a 16-bit base. qlora loads in 4-bit unless
    quantization.load_in_4bit is false (then the base stays 16-bit: plain LoRA, as the validator's RFT812 says);
    quantization.load_in_8bit loads an 8-bit base (LLM.int8()) under LoRA. (spec.py's defaults set load_in_4bit
    true for every method, so under lora-bf16 it says nothing; the validator's RFT812 flags an explicit one.)"""
    q = spec.get("quantization") or {}
    if spec["method"] == "full":
        return None
    if q.get("load_in_8bit") is True:
        return {"load_in_8bit": True}
    four = q.get("load_in_4bit")
    if four is False or spec["method"] != "qlora":
        return None
    return {
        "load_in_4bit": True,
        "bnb_4bit_quant_type": str(RunSpec(spec).quantization.quant_type),
        "bnb_4bit_use_double_quant": bool(RunSpec(spec).quantization.double_quant),
        "bnb_4bit_compute_dtype": str(RunSpec(spec).quantization.compute_dtype),
    }


def device_map(cuda: bool, deepspeed: bool, quantized: bool, local_rank: int) -> Optional[Dict[str, Any]]:
    """from_pretrained's device_map. Each rank loads onto its own GPU; under DeepSpeed the engine places full
    and LoRA weights itself (None), but 4-bit weights are placed at load time, so QLoRA keeps the per-rank map
    under DeepSpeed too (without it every rank would quantise onto GPU 0). 4-bit on CPU loads on the CPU."""
    if cuda and (not deepspeed or quantized):
        return {"": local_rank}
    if not cuda and quantized:
        return {"": "cpu"}
    return None


def lora_kwargs(spec: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    if spec["method"] == "full":
        return None
    targets = RunSpec(spec).lora.target_modules
    return {
        "r": int(RunSpec(spec).lora.r),
        "lora_alpha": _number(RunSpec(spec).lora.alpha),  # 12.5 stays 12.5: the scale is alpha / r
        "lora_dropout": float(RunSpec(spec).lora.dropout),
        "target_modules": targets if isinstance(targets, str) else list(targets),
        "bias": str(RunSpec(spec).lora.bias),
        "task_type": "CAUSAL_LM",
        **({"modules_to_save": list(RunSpec(spec).lora.modules_to_save)} if RunSpec(spec).lora.modules_to_save else {}),
    }


def _number(value: Any) -> Any:
    f = float(value)
    return int(f) if f.is_integer() else f


def training_args_kwargs(spec: Dict[str, Any], output_dir: str, fields: List[str], *, has_eval: bool, report_to: List[str],
                         bnb_installed: bool, warn: Warn, optimizers: Optional[List[str]] = None,
                         deepspeed: Optional[str] = None, pretokenized: bool = True,
                         installed: Optional[Callable[[str], bool]] = None, args_class: str = "TrainingArguments") -> Dict[str, Any]:
    """TrainingArguments keyword arguments, only with names this transformers version has (`fields`).

    `spec` is already resolved for the GPU (resolved_spec); `optimizers` are the `optim` names this
    transformers knows; `pretokenized`: our own tokenized columns (input_ids, attention_mask) only, where
    remove_unused_columns must stay off. On the SFT path trl prepares the columns and its default applies.
    `installed`: whether a package can be imported (pass-through keys that need one); `args_class` names the
    arguments class in the pass-through diagnostic. Raises SpecRefused for a scheduler that cannot run."""
    t = dict(spec.get("trainer") or {})
    problem = scheduler_problem(spec, has_eval)
    if problem:
        raise SpecRefused(problem)
    kw: Dict[str, Any] = {"output_dir": output_dir, "report_to": report_to, "logging_first_step": True,
                          "save_safetensors": True}
    if pretokenized:
        kw["remove_unused_columns"] = False
    if deepspeed:
        kw["deepspeed"] = deepspeed
    if spec.get("name"):
        kw["run_name"] = str(RunSpec(spec).wandb.run_name or spec["name"])
    for key, value in t.items():
        if key in OWN_KEYS:
            continue
        name = RENAMED.get(key, key)
        if name in fields:
            kw[name] = value
        elif key == "warmup_ratio" and "warmup_steps" in fields:
            # transformers 5 dropped warmup_ratio: warmup_steps takes a float in [0, 1) as the ratio instead.
            # An explicit warmup_steps wins, as it did over the ratio in transformers 4.
            if not t.get("warmup_steps"):
                ratio = float(value)
                if 0 <= ratio < 1:
                    kw["warmup_steps"] = ratio
                else:
                    warn("trainer.warmup_ratio %s is outside [0, 1); ignored" % value, "bad-warmup-ratio")
        elif key not in RENAMED:
            warn("trainer.%s is not a TrainingArguments field in this transformers version; ignored" % key, "unknown-trainer-key")
        if key not in SPEC_TRAINER_KEYS and name in kw:
            package = KEY_PACKAGES.get(key)
            if package and value and installed is not None and not installed(package):
                warn("trainer.%s needs %s, which is not installed in the run's venv; not passed on" % (key, package), "trainer-key-package-missing")
                del kw[name]
            else:
                warn("trainer.%s is not a run-spec field: passed to %s as %s=%r unchecked" % (key, args_class, name, value), "trainer-key-passed-through")
    if "per_device_train_batch_size" in kw:
        kw["per_device_eval_batch_size"] = kw["per_device_train_batch_size"]
    precision = str(t.get("precision", "bf16"))
    kw["bf16"] = precision == "bf16"
    kw["fp16"] = precision == "fp16"
    asked = str(t.get("optimizer", "adamw_torch"))
    optim = OPTIMIZER_ALIASES.get(asked, asked)
    if optimizers is not None and optim not in optimizers:
        warn("optimizer %s is not one this transformers version knows; using adamw_torch" % asked, "unknown-optimizer")
        optim = "adamw_torch"
    if needs_bitsandbytes(optim) and not bnb_installed:
        warn("optimizer %s needs bitsandbytes, which is not installed; using adamw_torch" % asked, "bnb-missing")
        optim = "adamw_torch"
    kw["optim"] = optim
    if t.get("liger"):
        kw["use_liger_kernel"] = True  # the Trainer patches the model (its PEFT base model too) with Liger's kernels
    if t.get("compile"):
        kw["torch_compile"] = True
    if t.get("gradient_checkpointing", True) and t.get("backend") == "unsloth":
        # Unsloth's own checkpointing (unsloth_backend.load) is on; the Trainer's on top would checkpoint twice.
        for name in ("activation_checkpointing", "gradient_checkpointing"):
            kw[name] = False
    elif t.get("gradient_checkpointing", True):
        # transformers 5 renamed gradient_checkpointing* to activation_checkpointing* (the old names are deprecated
        # aliases, to be removed in 6); the name this version has is used. Non-reentrant checkpointing works with
        # frozen base weights (LoRA) without extra hooks.
        name = "activation_checkpointing" if "activation_checkpointing" in fields else "gradient_checkpointing"
        kw[name] = True
        kw[name + "_kwargs"] = {"use_reentrant": False}
    else:
        # Off under every name this version has: TRL's SFTConfig (and DPO/ORPO's) default it to True, so leaving the
        # field out trained the SFT path with checkpointing on, recomputing every layer's activations in the backward
        # pass (the TRL path against a plain TRL script in bench/trainer-overhead).
        for name in ("activation_checkpointing", "gradient_checkpointing"):
            kw[name] = False
    strategy = str(t.get("eval_strategy", "no"))
    if strategy != "no" and not has_eval:
        warn("trainer.eval_strategy is %s but data.eval is not set; not evaluating" % strategy, "no-eval-set")
        strategy = "no"
        kw.pop("load_best_model_at_end", None)
    kw["eval_strategy" if "eval_strategy" in fields else "evaluation_strategy"] = strategy
    if "include_num_input_tokens_seen" in fields:
        kw["include_num_input_tokens_seen"] = True  # tokens/s in the metrics events
    if kw.get("max_steps") is None:
        kw.pop("max_steps", None)
    return {k: v for k, v in kw.items() if k in fields}


_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
_SAFE_ID = re.compile(r"[^A-Za-z0-9._-]")


def checkpoint_dir(output_dir: str, run_id: str) -> str:
    """Checkpoints of one run: <outputs.dir>/checkpoints/<run id>. Several runs share a workspace's outputs
    folder; resuming must never pick up another run's checkpoint-N."""
    return os.path.join(output_dir, "checkpoints", _SAFE_ID.sub("_", run_id) or "run")


# Names inside <outputs.dir> that are not a run's own folder.
_SHARED_NAMES = {"checkpoints", "adapter", "model", "merged"}


def run_outputs_dir(output_dir: str, run_id: str) -> str:
    """What one run keeps for itself (its adapter or model, its merged model): <outputs.dir>/<run id>. A workspace's
    runs share outputs.dir; a later run, stopped or not, must never write over an earlier run's adapter."""
    name = _SAFE_ID.sub("_", run_id) or "run"
    return os.path.join(output_dir, "run-" + name if name in _SHARED_NAMES or name.startswith(".") else name)


def final_model_dir(output_dir: str, run_id: str, method: str) -> str:
    """LoRA methods save the adapter, a full fine-tune the model, each in the run's own folder."""
    return os.path.join(run_outputs_dir(output_dir, run_id), "adapter" if method != "full" else "model")


def find_resume_checkpoint(output_dir: str) -> Optional[str]:
    """The newest complete checkpoint-N (one with trainer_state.json), or None."""
    try:
        names = os.listdir(output_dir)
    except OSError:
        return None
    best: Optional[Tuple[int, str]] = None
    for n in names:
        m = _CHECKPOINT.match(n)
        path = os.path.join(output_dir, n)
        if m and os.path.isfile(os.path.join(path, "trainer_state.json")):
            step = int(m.group(1))
            if best is None or step > best[0]:
                best = (step, path)
    return best[1] if best else None


def _newest_of_any_run(checkpoints_root: str) -> Optional[str]:
    """The most recently written complete checkpoint under <outputs.dir>/checkpoints/*/."""
    best: Optional[Tuple[float, str]] = None
    try:
        runs = os.listdir(checkpoints_root)
    except OSError:
        return None
    for r in runs:
        ckpt = find_resume_checkpoint(os.path.join(checkpoints_root, r))
        if ckpt is None:
            continue
        mtime = os.stat(os.path.join(ckpt, "trainer_state.json")).st_mtime
        if best is None or mtime > best[0]:
            best = (mtime, ckpt)
    return best[1] if best else None


def resume_checkpoint(spec: Dict[str, Any], output_dir: str, run_id: str, workdir: str) -> Tuple[Optional[str], str]:
    """Where training starts: (checkpoint folder or None, why in words).

    This run's own newest checkpoint always wins: it is the furthest this run got (a Resume, a relaunch after a
    reclaim), including after an earlier start from a named checkpoint. Without one, trainer.resume_from_checkpoint
    decides: `latest` (or true) takes the newest complete checkpoint any run left under <outputs.dir>/checkpoints;
    a path (relative to the workspace, or absolute) names a checkpoint-N folder, which must be complete. A path
    that is not one fails the run before the model loads rather than training from step 0 unasked."""
    own = find_resume_checkpoint(checkpoint_dir(output_dir, run_id))
    if own:
        return own, "this run's newest checkpoint"
    asked = RunSpec(spec).trainer.resume_from_checkpoint
    if asked is None or asked is False or asked == "":
        return None, "no checkpoint of this run"
    if asked is True or (isinstance(asked, str) and asked.strip().lower() == "latest"):
        newest = _newest_of_any_run(os.path.join(output_dir, "checkpoints"))
        return newest, "the newest checkpoint under %s" % os.path.join(output_dir, "checkpoints") if newest else \
            "trainer.resume_from_checkpoint is latest but no run has left a complete checkpoint yet"
    if not isinstance(asked, str):
        raise ValueError("trainer.resume_from_checkpoint must be a checkpoint folder or `latest`, not %r" % (asked,))
    path = os.path.expanduser(asked if os.path.isabs(asked) else os.path.join(workdir, asked))
    if not os.path.isfile(os.path.join(path, "trainer_state.json")):
        raise ValueError("trainer.resume_from_checkpoint: %s is not a complete checkpoint (no trainer_state.json there)" % asked)
    return os.path.normpath(path), "trainer.resume_from_checkpoint"


# datasets' packaged loaders by file extension (a folder of files takes its files' loader).
LOADERS = {".json": "json", ".jsonl": "json", ".csv": "csv", ".tsv": "csv", ".parquet": "parquet", ".pq": "parquet",
           ".arrow": "arrow", ".txt": "text"}


def loader_for(path: str) -> str:
    name = path.lower()
    for suffix in (".gz", ".bz2", ".xz", ".zst"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    if os.path.isdir(path):
        exts = sorted({os.path.splitext(f.lower())[1] for f in os.listdir(path)} & set(LOADERS))
        return LOADERS[exts[0]] if exts else "json"
    return LOADERS.get(os.path.splitext(name)[1], "json")


def is_saved_dataset(path: str) -> bool:
    """A folder written by datasets' save_to_disk (a Dataset, or a DatasetDict of splits)."""
    return os.path.isdir(path) and any(os.path.isfile(os.path.join(path, f)) for f in ("state.json", "dataset_dict.json"))


def source_of(ref: str, workdir: str, staged: Dict[str, str], split: str, config: Optional[str] = None) -> Dict[str, Any]:
    """Where one data reference is read from: {'kind': 'local', 'loader', 'path'} (a file, a folder of files, or a
    save_to_disk folder, loader 'disk'), else {'kind': 'hub', 'id', 'split', 'config'} (a Hub dataset repo copied
    whole from hf:// is read from its local copy as the repo would be, with its README's configs)."""
    if ref.startswith("hf://") and ref in staged:
        return {"kind": "hub", "id": staged[ref], "split": split, "config": config}
    ref = staged.get(ref, ref)
    p = os.path.expanduser(ref if os.path.isabs(ref) else os.path.join(workdir, ref))
    if os.path.exists(p):
        return {"kind": "local", "loader": "disk" if is_saved_dataset(p) else loader_for(p), "path": p, "split": split}
    return {"kind": "hub", "id": ref, "split": split, "config": config}


def dataset_source(spec: Dict[str, Any], workdir: str, staged: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """Local files: {'kind': 'local', 'train': (loader, path), 'eval': (loader, path) | None, 'eval_hub'};
    otherwise {'kind': 'hub', 'id', 'split', 'eval'}. Each local file is read by its own format's loader.
    `staged`: URI → path on the host for data staged from s3://, gs:// or hf:// (staging.py)."""
    staged = staged or {}
    train = str(get(spec, "data.train", ""))
    evalref = RunSpec(spec).data.eval
    if train.startswith("hf://") and train in staged:
        # A Hub dataset repo copied whole: datasets reads the local copy as it would the repo (its README's configs).
        ev = staged.get(str(evalref), evalref) if evalref is not None else None
        return {"kind": "hub", "id": staged[train], "split": str(RunSpec(spec).data.split), "eval": ev}
    train = staged.get(train, train)
    if evalref is not None:
        evalref = staged.get(str(evalref), evalref)

    def local(ref: str) -> Optional[str]:
        p = os.path.expanduser(ref if os.path.isabs(ref) else os.path.join(workdir, ref))
        return p if os.path.exists(p) else None

    lt = local(train) if train else None
    if lt:
        le = local(str(evalref)) if evalref else None
        return {"kind": "local", "train": (loader_for(lt), lt), "eval": (loader_for(le), le) if le else None,
                "eval_hub": None if le or not evalref else str(evalref)}
    return {"kind": "hub", "id": train, "split": str(RunSpec(spec).data.split), "eval": evalref}


def format_text(example: Dict[str, Any], text_field: str, chat_template: bool,
                apply_template: Optional[Callable[[List[Dict[str, str]]], str]]) -> Optional[str]:
    """The text one example trains on: its chat rendered by the tokenizer's template, or a field."""
    if chat_template:
        messages = example.get("messages") or example.get("conversations")
        if isinstance(messages, list) and messages:
            if apply_template is not None:
                return apply_template(messages)
            return "\n".join("%s: %s" % (m.get("role", "user"), m.get("content", "")) for m in messages if isinstance(m, dict))
    value = example.get(text_field)
    if isinstance(value, str):
        return value
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return None
