"""The built-in trainer: `python remote_finetune_entry.py train --run-dir D` (started by `run`, under
python, accelerate or torchrun). QLoRA, BF16 LoRA or full fine-tuning from spec.json; events via
callback.py; SIGTERM saves a checkpoint and stops cleanly; resumes from this run's newest checkpoint, else from
trainer.resume_from_checkpoint (a checkpoint folder, or `latest`); the adapter goes to <outputs.dir>/<run id>/.

Every heavy import (torch, transformers, peft, bitsandbytes, trl, datasets, wandb) happens in
the functions below, never at module import. Where the supported library lines differ
(transformers 4.5x/5.x, trl 0.x/1.x) the code asks the library (signatures, dataclass fields)
instead of pinning one spelling.
"""

import dataclasses
import importlib.util
import inspect
import json
import os
import sys
from typing import Any, Dict, List, Optional, Tuple

from . import tracking
from . import data_formats
from . import speed
from . import trainer_plan as plan
from . import unsloth_backend
from .callback import StopFlag, events_callback
from .data_loading import ROW_COLUMN, load_raw_datasets
from .data_prep import CausalCollator, prepare_datasets
from .events import EventWriter
from .memory_report import write_memory_report
from .quantized_base import freeze_quantized_base
from .run_folder import EVENTS, SPEC, TRAINING_ARGS
from .spec import hub_token, load_spec, RunSpec

# Tokens that are free to serve as padding when a tokenizer has none (Llama 3 ships the first, Qwen the
# second as its pad). Padding with EOS instead would mask EOS out of the labels: the model never learns to stop.
PAD_CANDIDATES = ("<|finetune_right_pad_id|>", "<|reserved_special_token_0|>", "<|endoftext|>", "<pad>", "[PAD]")


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def flash_attn_usable() -> Tuple[bool, Optional[str]]:
    """(usable, why not). find_spec says only that a folder exists; a flash-attn built against another
    torch or CUDA fails on import (undefined symbol), and then the run must fall back, not crash."""
    if not _installed("flash_attn"):
        return False, None
    try:
        from flash_attn import flash_attn_func  # noqa: F401
    except Exception as e:  # ImportError, OSError (undefined symbol), RuntimeError from its CUDA checks
        return False, "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200] if str(e) else "")
    return True, None


def _local_rank() -> int:
    return int(os.environ.get("LOCAL_RANK", "0"))


def _is_main() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


class Run:
    def __init__(self, run_dir: str, workdir: str) -> None:
        self.run_dir = os.path.abspath(run_dir)
        self.workdir = workdir
        self.events = EventWriter(os.path.join(self.run_dir, EVENTS))

    @property
    def run_id(self) -> str:
        return os.path.basename(self.run_dir)

    def warn(self, message: str, code: str) -> None:
        print("[remote-finetune] warning: " + message, flush=True)
        if _is_main():
            self.events.emit("warning", message=message, code=code)

    def rel(self, path: str) -> str:
        try:
            r = os.path.relpath(path, self.workdir)
            return path if r.startswith("..") else r
        except ValueError:
            return path


def _dtype_kwarg(from_pretrained: Any) -> str:
    # transformers 5 renamed torch_dtype to dtype (4.56+ accept both; 5.x warns on the old name).
    try:
        import transformers
        major = int(transformers.__version__.split(".")[0])
    except (ImportError, ValueError):
        major = 4
    return "dtype" if major >= 5 else "torch_dtype"


def choose_pad_token(tokenizer: Any, rows: Optional[int] = None) -> Optional[str]:
    """A pad token distinct from EOS taken from the vocabulary (and, given `rows`, one the model's embedding
    has a row for), or None: then EOS pads, and labels come from the attention mask so EOS is still learned."""
    vocab = tokenizer.get_vocab()
    fits = lambda tok: tok in vocab and (rows is None or vocab[tok] < rows)  # noqa: E731
    if tokenizer.pad_token is not None and tokenizer.pad_token != tokenizer.eos_token and fits(tokenizer.pad_token):
        return None
    for cand in PAD_CANDIDATES + ((tokenizer.unk_token,) if tokenizer.unk_token else ()):
        if fits(cand) and cand != tokenizer.eos_token and cand != tokenizer.bos_token:
            return cand
    return None


def fit_pad_to_model(tokenizer: Any, rows: int) -> None:
    """Some tokenizer classes add a pad token past the checkpoint's vocabulary (a Qwen2 tokenizer class adds
    <|endoftext|> when the file has none): its id would index past the embedding. Pick one inside it."""
    if tokenizer.pad_token_id is not None and tokenizer.pad_token_id < rows:
        return
    tokenizer.pad_token = choose_pad_token(tokenizer, rows) or tokenizer.eos_token


def load_tokenizer(spec: Dict[str, Any]) -> Any:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(RunSpec(spec).model.id), **_hub_kwargs(spec))
    pad = choose_pad_token(tokenizer)
    if pad is not None:
        tokenizer.pad_token = pad
    elif tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def _hub_kwargs(spec: Dict[str, Any]) -> Dict[str, Any]:
    kw: Dict[str, Any] = {"trust_remote_code": bool(RunSpec(spec).model.trust_remote_code), "token": hub_token(dict(os.environ))}
    if RunSpec(spec).model.revision:
        kw["revision"] = RunSpec(spec).model.revision
    return kw


def load_model(spec: Dict[str, Any], tokenizer: Any, run: Run, capability: Optional[Tuple[int, int]]) -> Tuple[Any, str]:
    """Loads after TrainingArguments exist (see train()): under ZeRO-3 the HfDeepSpeedConfig they create
    makes from_pretrained partition the weights as they load instead of materialising them on every rank."""
    import torch
    from transformers import AutoModelForCausalLM

    model_id = str(RunSpec(spec).model.id)
    if unsloth_backend.wanted(spec):
        return unsloth_backend.load(spec, tokenizer, _hub_kwargs(spec)), "unsloth"
    fa2_ok, fa2_broken = flash_attn_usable()
    if fa2_broken:
        run.warn("flash-attn is installed but does not load (%s); not using FlashAttention-2" % fa2_broken, "fa2-broken")
    attn = plan.choose_attention(spec, fa2_ok, capability, run.warn, attention_support(spec))
    kwargs: Dict[str, Any] = dict(_hub_kwargs(spec), attn_implementation=attn)
    kwargs[_dtype_kwarg(AutoModelForCausalLM.from_pretrained)] = getattr(torch, plan.model_dtype(spec))
    deepspeed = os.environ.get("ACCELERATE_USE_DEEPSPEED", "").lower() == "true" or bool(RunSpec(spec).launcher.deepspeed)
    q = plan.quantization_kwargs(spec)
    dm = plan.device_map(torch.cuda.is_available(), deepspeed, q is not None, _local_rank())
    if dm is not None:
        kwargs["device_map"] = dm
    if q is not None:
        if not _installed("bitsandbytes"):
            raise RuntimeError("QLoRA needs bitsandbytes, which is not installed in this environment (run the bootstrap for method qlora)")
        from transformers import BitsAndBytesConfig
        q["bnb_4bit_compute_dtype"] = getattr(torch, q["bnb_4bit_compute_dtype"])
        kwargs["quantization_config"] = BitsAndBytesConfig(**q)
    print("[remote-finetune] loading %s (%s, attn_implementation=%s, dtype=%s)" % (model_id, spec["method"], attn, plan.model_dtype(spec)), flush=True)
    model = AutoModelForCausalLM.from_pretrained(model_id, **kwargs)
    fit_pad_to_model(tokenizer, model.get_input_embeddings().num_embeddings)
    if tokenizer.pad_token_id is not None:
        model.config.pad_token_id = tokenizer.pad_token_id
        if getattr(model, "generation_config", None) is not None:
            model.generation_config.pad_token_id = tokenizer.pad_token_id
    gc = bool(RunSpec(spec).trainer.gradient_checkpointing)
    if q is not None:
        # Not peft's prepare_model_for_kbit_training: it casts embeddings, head and norms to fp32 (quantized_base.py).
        # Checkpointing is switched on by the Trainer from the arguments (activation_checkpointing where transformers has it).
        model = freeze_quantized_base(model)
    lk = plan.lora_kwargs(spec)
    if lk is not None:
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(**lk))
    if gc or bool(RunSpec(spec).data.packing):
        # The KV cache is useless in training and conflicts with checkpointing; and transformers 4.x builds the
        # per-example mask of padding-free packed rows from their position ids only when no cache is made.
        model.config.use_cache = False
    return model, attn


def model_config(spec: Dict[str, Any]) -> Any:
    """The model's config (config.json alone), or None when it cannot be read this way (remote code, no files)."""
    try:
        from transformers import AutoConfig
        return AutoConfig.from_pretrained(str(RunSpec(spec).model.id), **_hub_kwargs(spec))
    except Exception:  # noqa: BLE001 - from_pretrained of the model reports it itself
        return None


def attention_support(spec: Dict[str, Any]) -> Optional[Dict[str, bool]]:
    """Which attention kernels the model's causal-LM class accepts, from the class itself (`_supports_sdpa`,
    `_supports_flash_attn` in transformers 5, `_supports_flash_attn_2` in 4.x), read from its config alone. None
    when the class cannot be found this way (remote code): the plan then assumes both."""
    try:
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING
        config = model_config(spec)
        cls = MODEL_FOR_CAUSAL_LM_MAPPING[type(config)]
    except Exception:  # noqa: BLE001 - unknown model type or remote code: from_pretrained reports it itself
        return None
    fa2 = getattr(cls, "_supports_flash_attn", None)
    if fa2 is None:
        fa2 = getattr(cls, "_supports_flash_attn_2", False)
    return {"flash_attention_2": bool(fa2), "sdpa": bool(getattr(cls, "_supports_sdpa", False))}


def report_targets(spec: Dict[str, Any], run: Run) -> List[str]:
    """W&B when its key is present and the spec leaves it on, plus what trainer.report_to names; a tracker
    whose package is missing is dropped with a warning rather than failing the run in TrainingArguments."""
    wandb_on = (spec.get("wandb") or {}).get("enabled") is not False and bool(os.environ.get("WANDB_API_KEY"))
    if wandb_on and not _installed("wandb"):
        run.warn("WANDB_API_KEY is set but wandb is not installed; not reporting to W&B", "wandb-missing")
        wandb_on = False
    report_to = ["wandb"] if wandb_on else []
    # run.py sets these for the child; filled here too when the trainer is started on its own (tests, a rerun by hand).
    os.environ.update(tracking.tracking_settings(spec, dict(os.environ), run.run_dir))
    for name in tracking.asked_trackers(spec):
        if _installed(tracking.TRACKERS[name]):
            report_to.append(name)
        else:
            run.warn("trainer.report_to names %s but it is not installed in the run's venv; not reporting to it" % name, "%s-missing" % name)
    os.environ["RFT_REPORT_TO"] = ",".join(report_to)
    return report_to


def deepspeed_config(spec: Dict[str, Any], workdir: str) -> Optional[str]:
    ds = RunSpec(spec).launcher.deepspeed
    if not ds:
        return None
    path = str(ds) if os.path.isabs(str(ds)) else os.path.join(workdir, str(ds))
    if not os.path.isfile(path):
        raise RuntimeError("launcher.deepspeed: %s does not exist on the host (excluded from sync?)" % ds)
    return path


def _args_kwargs(spec: Dict[str, Any], output_dir: str, fields: List[str], args_class: str, *, has_eval: bool, pretokenized: bool,
                 run: Run) -> Dict[str, Any]:
    """Keyword arguments for TrainingArguments or one of trl's configs (`fields`: that class's dataclass fields)."""
    try:
        from transformers.training_args import OptimizerNames
        optimizers: Optional[List[str]] = [o.value for o in OptimizerNames]
    except ImportError:
        optimizers = None
    kw = plan.training_args_kwargs(spec, output_dir, fields, has_eval=has_eval, report_to=report_targets(spec, run),
                                   bnb_installed=_installed("bitsandbytes"), warn=run.warn, optimizers=optimizers,
                                   deepspeed=deepspeed_config(spec, run.workdir), pretokenized=pretokenized,
                                   installed=_installed, args_class=args_class)
    if "tensorboard" in kw["report_to"] and "logging_dir" in fields:
        kw["logging_dir"] = os.environ.get("TENSORBOARD_LOGGING_DIR") or tracking.tensorboard_dir(run.run_dir)  # transformers 4.x
    import torch
    if not torch.cuda.is_available() and "use_cpu" in fields:
        kw["use_cpu"] = True  # transformers 5 refuses bf16 without a GPU unless told the run is meant for the CPU
    return kw


def training_arguments(spec: Dict[str, Any], output_dir: str, *, has_eval: bool, sft: bool, run: Run) -> Any:
    """TrainingArguments (or trl's SFTConfig, DPOConfig, ORPOConfig) for this library version, with the spec's names mapped."""
    if spec["method"] in plan.PREFERENCE_METHODS:
        from . import preference
        # trl prepares and tokenizes the preference columns itself, so its remove_unused_columns default stays.
        return preference.arguments(spec, lambda fields, name: _args_kwargs(spec, output_dir, fields, name, has_eval=has_eval,
                                                                            pretokenized=False, run=run))
    if sft:
        from trl import SFTConfig as Args
    else:
        from transformers import TrainingArguments as Args
    fields = [f.name for f in dataclasses.fields(Args)]
    kw = _args_kwargs(spec, output_dir, fields, Args.__name__, has_eval=has_eval, pretokenized=not sft, run=run)
    if sft:
        kw.update(plan.sft_kwargs(spec, fields))
    return Args(**kw)


def build_trainer(spec: Dict[str, Any], args: Any, model: Any, tokenizer: Any, train: Any, evalset: Optional[Any],
                  callbacks: List[Any], run: Run, sft: bool) -> Any:
    if spec["method"] in plan.PREFERENCE_METHODS:
        from . import preference
        return preference.build(spec, args, model, tokenizer, train, evalset, callbacks)
    if sft:
        from trl import SFTTrainer
        params = inspect.signature(SFTTrainer.__init__).parameters
        tk = {"processing_class": tokenizer} if "processing_class" in params else {"tokenizer": tokenizer}
        # `train` is tokenized with its labels (prepare_datasets): TRL takes input_ids and labels as they are.
        train_ds, eval_ds = train, evalset
        return SFTTrainer(model=model, args=args, train_dataset=train_ds, eval_dataset=eval_ds, callbacks=callbacks, **tk)

    from transformers import Trainer
    train_t, eval_t = train, evalset
    params = inspect.signature(Trainer.__init__).parameters
    tk = {"processing_class": tokenizer} if "processing_class" in params else {"tokenizer": tokenizer}
    return Trainer(model=model, args=args, train_dataset=train_t, eval_dataset=eval_t,
                   data_collator=CausalCollator(tokenizer), callbacks=callbacks, **tk)


def speed_host(spec: Dict[str, Any], capability: Optional[Tuple[int, int]], import_errors: Optional[Dict[str, str]] = None) -> speed.Host:
    """What the speed plan needs to know about this host and model (speed.Host)."""
    import torch
    installed = {m: _installed(m) for m in ("liger_kernel", "unsloth", "bitsandbytes")}
    liger_families = None
    if installed["liger_kernel"]:
        try:  # liger-kernel's own table of the families it patches; it imports triton, so a CPU host may fail here
            from liger_kernel.transformers.monkey_patch import MODEL_TYPE_TO_APPLY_LIGER_FN
            liger_families = frozenset(MODEL_TYPE_TO_APPLY_LIGER_FN)
        except Exception:  # noqa: BLE001
            installed["liger_kernel"] = False
    config = model_config(spec)
    family = getattr(config, "model_type", None)
    version = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
    return speed.Host(capability is not None, capability, str(family) if family else None, installed, liger_families,
                      int(os.environ.get("WORLD_SIZE", "1")), (version[0], version[1]), import_errors)


def pin_accelerate_env(spec: Dict[str, Any]) -> None:
    """Sets the accelerate variables TrainingArguments and the Accelerator start from to what the (speed-planned)
    spec says, whatever the process inherited.

    TrainingArguments start from ACCELERATE_MIXED_PRECISION and only raise it: one exported on the host, or left
    by a library (trl 0.x's SFTConfig writes bf16 there), would train an fp32 spec under bf16 autocast. Under
    `accelerate launch` the launcher sets the same value from --mixed_precision. Likewise torch.compile:
    TrainingArguments(torch_compile=True) writes ACCELERATE_DYNAMO_BACKEND into its process's environment
    (transformers 4.x), and accelerate compiles any model while it is set; exported on the host or inherited, it
    would compile a run whose speed plan left compile off (minutes of compilation, a stall on a slow CPU)."""
    os.environ["ACCELERATE_MIXED_PRECISION"] = {"bf16": "bf16", "fp16": "fp16"}.get(str(RunSpec(spec).trainer.precision), "no")
    if not (spec.get("trainer") or {}).get("compile"):
        os.environ["ACCELERATE_DYNAMO_BACKEND"] = "no"
        os.environ.pop("ACCELERATE_DYNAMO_MODE", None)


def speed_plan(spec: Dict[str, Any], capability: Optional[Tuple[int, int]], run: Run,
               import_errors: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """The spec with speed.py's choices written in; what was chosen and why goes to the log and, as one of the run's
    first events, to events.jsonl (a `warning` with code speed-plan and the choices in `speed`). Raises SpecRefused."""
    chosen = speed.plan(spec, speed_host(spec, capability, import_errors))
    out = speed.apply(spec, chosen)
    base = plan.base_spec(out)
    fa2_ok, _broken = flash_attn_usable()
    support = attention_support(base) or {}
    attn = plan.choose_attention(base, fa2_ok, capability, lambda message, code: None, support)
    why = speed.attention_reason(attn, fa2_ok, capability, plan.quantization_kwargs(base) is not None,
                                 plan.model_dtype(base) in ("bfloat16", "float16"), support.get("flash_attention_2", True))
    if str(RunSpec(spec).model.attn_implementation) != "auto":
        why = "model.attn_implementation is %s" % RunSpec(spec).model.attn_implementation
    line = speed.describe(chosen, attn, why)
    print("[remote-finetune] " + line, flush=True)
    if _is_main():
        run.events.emit("warning", message=line, code="speed-plan",
                        speed=dict({k: v for k, v in chosen.items() if k != "why"}, attention=attn))
    return out


def _capability() -> Optional[Tuple[int, int]]:
    import torch
    if not torch.cuda.is_available():
        return None
    major, minor = torch.cuda.get_device_capability(_local_rank())
    return int(major), int(minor)


def write_selfcheck(path: str, model: Any, tokenizer: Any) -> None:
    """RFT_SELFCHECK_LOGITS: the in-memory model's logits on a fixed probe, written after saving, so a test (or a
    wary user) can reload the saved adapter with PeftModel.from_pretrained and compare."""
    import torch
    ids = tokenizer("The quick brown fox", add_special_tokens=True, return_tensors="pt")["input_ids"]
    model.eval()
    with torch.no_grad():
        logits = model(input_ids=ids.to(model.device)).logits.float().cpu()
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"input_ids": ids.tolist(), "logits": logits.tolist()}, f)


def train(run_dir: str, workdir: Optional[str] = None) -> int:
    stop = StopFlag().install()  # before the long model load: a spot notice then still stops cleanly
    workdir = os.path.abspath(workdir or os.getcwd())
    run = Run(run_dir, workdir)
    spec, errs = load_spec(os.path.join(run.run_dir, SPEC))
    if spec is None:
        for e in errs:
            print("[remote-finetune] spec.json: " + e, file=sys.stderr, flush=True)
        return 2
    out = str(RunSpec(spec).outputs.dir)
    output_dir = out if os.path.isabs(out) else os.path.join(workdir, out)
    ckpt_dir = plan.checkpoint_dir(output_dir, run.run_id)
    try:
        resume, resume_why = plan.resume_checkpoint(spec, output_dir, run.run_id, workdir)
    except ValueError as e:
        print("[remote-finetune] " + str(e), file=sys.stderr, flush=True)
        if _is_main():
            run.events.emit("error", message=str(e))
        return 2
    unsloth_error = unsloth_backend.import_first(spec)  # before transformers loads the model code
    capability = _capability()
    spec = plan.resolved_spec(spec, capability, run.warn)
    try:
        spec = speed_plan(spec, capability, run, {"unsloth": unsloth_error} if unsloth_error else None)
    except plan.SpecRefused as e:
        print("[remote-finetune] SpecRefused: %s" % e, file=sys.stderr, flush=True)
        if _is_main():
            run.events.emit("error", message=str(e), signature="spec-refused")
        return 2
    pin_accelerate_env(spec)
    prefer = spec["method"] in plan.PREFERENCE_METHODS
    if prefer and not _installed("trl"):
        print("[remote-finetune] method %s needs trl, which is not installed in the run's venv" % spec["method"], file=sys.stderr, flush=True)
        return 2
    sft = not prefer and plan.uses_sft(spec, _installed("trl"))
    if bool(RunSpec(spec).trainer.use_sft_trainer) and not sft:
        run.warn("trainer.use_sft_trainer is set but trl is not installed; using transformers' Trainer", "trl-missing")
    trainset, evalset = load_raw_datasets(spec, workdir, run.run_dir)
    args = training_arguments(spec, ckpt_dir, has_eval=evalset is not None, sft=sft, run=run)
    tokenizer = load_tokenizer(spec)
    raw_eval = evalset
    try:
        if prefer:
            from . import preference
            trainset = preference.rows(spec, trainset, ROW_COLUMN)
            evalset = preference.rows(spec, evalset, ROW_COLUMN) if evalset else None
        else:
            trainset, evalset = prepare_datasets(spec, tokenizer, trainset, evalset, run)
    except data_formats.DataError as e:
        # Before the model loads: data that teaches nothing must not become a "completed" run with loss 0.
        print("[remote-finetune] data error: %s" % e, file=sys.stderr, flush=True)
        if _is_main():
            run.events.emit("error", message=str(e), hint="fix the row or the data section of the spec (data.roles, "
                            "data.text_field); `remote-finetune validate` checks local files before a run", **e.fields())
        return 2
    # Seeded before the adapter is made: LoRA's A matrices are drawn at random, and the Trainer seeds only after
    # the model exists. Without this, two runs of one spec start from different adapters, and on several
    # machines only DDP's broadcast from rank 0 would hide it.
    from transformers import set_seed
    set_seed(int(RunSpec(spec).trainer.seed))
    model, _attn = load_model(plan.base_spec(spec), tokenizer, run, capability)
    if stop.set:
        print("[remote-finetune] stop signal during model load; nothing to save yet", flush=True)
        return 0
    cb = events_callback(run.run_dir, model=str(RunSpec(spec).model.id), method=spec["method"], stop=stop, relpath=run.rel)
    trainer = build_trainer(spec, args, model, tokenizer, trainset, evalset, [cb], run, sft)
    if trainer.is_world_process_zero():
        with open(os.path.join(run.run_dir, TRAINING_ARGS), "w", encoding="utf-8") as f:
            f.write(trainer.args.to_json_string())  # the arguments as used, kept with the run's record
    if resume:
        print("[remote-finetune] resuming from %s (%s)" % (resume, resume_why), flush=True)
        run.warn("resuming from %s (%s)" % (run.rel(resume), resume_why), "resumed")
    elif RunSpec(spec).trainer.resume_from_checkpoint not in (None, False, ""):
        run.warn(resume_why + "; starting at step 0", "no-checkpoint")
    trainer.train(resume_from_checkpoint=resume)
    # LoRA: the adapter alone; full: the whole model, in this run's own folder. save_model gathers ZeRO-3 shards itself.
    final = plan.final_model_dir(output_dir, run.run_id, plan.base_method(spec))
    trainer.save_model(final)
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(final)
        check = os.environ.get("RFT_SELFCHECK_LOGITS")
        if check:
            write_selfcheck(check, trainer.model, tokenizer)
    if raw_eval is not None and not stop.set and not prefer:  # a preference run's eval is TRL's (rewards on data.eval)
        final_perplexity(spec, trainer, tokenizer, raw_eval, run)
    if stop.set:
        print("[remote-finetune] stopped by signal %d after saving a checkpoint at step %d" % (stop.signum, trainer.state.global_step), flush=True)
    _leave_process_group()
    return 0


def final_perplexity(spec: Dict[str, Any], trainer: Any, tokenizer: Any, evalset: Any, run: Run) -> None:
    """Perplexity of the trained model on data.eval, as one `eval` event (evaluate.py). One process only: under
    several processes (DDP, ZeRO-3 shards) a forward pass on rank 0 alone would wait for the others forever."""
    from .evaluate import emit_perplexity, eval_texts, perplexity
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        run.warn("final perplexity skipped on a multi-process run; `python -m remote_finetune evaluate` computes it", "no-final-eval")
        return
    try:
        texts, templated = eval_texts(spec, tokenizer, evalset, run.warn)
        loss, ppl, tokens = perplexity(trainer.model, tokenizer, texts, int(RunSpec(spec).data.max_seq_length), not templated,
                                       int(trainer.args.per_device_eval_batch_size))
    except Exception as e:  # the adapter is saved already; a failed evaluation must not fail the run
        run.warn("final perplexity failed: %s: %s" % (type(e).__name__, str(e)[:300]), "final-eval-failed")
        return
    print("[remote-finetune] eval split: loss %.4f, perplexity %.3f over %d tokens" % (loss, ppl, tokens), flush=True)
    emit_perplexity(run.events, int(trainer.state.global_step), trainer.state.epoch, loss, ppl, tokens)

def _leave_process_group() -> None:
    """Ends torch.distributed before the interpreter does: a process that exits with a gloo group still up may
    abort in its destructors ("terminate called without an active exception", SIGABRT), and on several machines
    that one exit code fails a run that trained to the end. The barrier first: rank 0 is still saving the
    adapter when the others get here."""
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            dist.barrier()
            dist.destroy_process_group()
    except Exception as e:  # noqa: BLE001 - a failed goodbye must not fail a finished run
        print("[remote-finetune] could not leave the process group: %s" % e, flush=True)



def main_train(run_dir: str) -> int:
    try:
        return train(run_dir)
    finally:
        # In `finally`: a run that ran out of memory reports how far it got (bench/gpu records it as "oom").
        write_memory_report(os.environ.get("RFT_MEMORY_REPORT"))
