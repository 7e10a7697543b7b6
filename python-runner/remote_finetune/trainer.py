"""The built-in trainer: `python remote_finetune_entry.py train --run-dir D` (started by `run`, under
python, accelerate or torchrun). QLoRA, BF16 LoRA or full fine-tuning from spec.json; events via
callback.py; SIGTERM saves a checkpoint and stops cleanly; resumes from this run's newest checkpoint.

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
from . import trainer_plan as plan
from .callback import StopFlag, events_callback
from .events import EventWriter
from .memory_report import write_memory_report
from .spec import get, hub_token, load_spec

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
        self.events = EventWriter(os.path.join(self.run_dir, "events.jsonl"))

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

    tokenizer = AutoTokenizer.from_pretrained(str(get(spec, "model.id")), **_hub_kwargs(spec))
    pad = choose_pad_token(tokenizer)
    if pad is not None:
        tokenizer.pad_token = pad
    elif tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def _hub_kwargs(spec: Dict[str, Any]) -> Dict[str, Any]:
    kw: Dict[str, Any] = {"trust_remote_code": bool(get(spec, "model.trust_remote_code", False)), "token": hub_token(dict(os.environ))}
    if get(spec, "model.revision"):
        kw["revision"] = get(spec, "model.revision")
    return kw


def load_model(spec: Dict[str, Any], tokenizer: Any, run: Run, capability: Optional[Tuple[int, int]]) -> Tuple[Any, str]:
    """Loads after TrainingArguments exist (see train()): under ZeRO-3 the HfDeepSpeedConfig they create
    makes from_pretrained partition the weights as they load instead of materialising them on every rank."""
    import torch
    from transformers import AutoModelForCausalLM

    model_id = str(get(spec, "model.id"))
    fa2_ok, fa2_broken = flash_attn_usable()
    if fa2_broken:
        run.warn("flash-attn is installed but does not load (%s); using sdpa attention" % fa2_broken, "fa2-broken")
    attn = plan.choose_attention(spec, fa2_ok, capability, run.warn)
    kwargs: Dict[str, Any] = dict(_hub_kwargs(spec), attn_implementation=attn)
    kwargs[_dtype_kwarg(AutoModelForCausalLM.from_pretrained)] = getattr(torch, plan.model_dtype(spec))
    deepspeed = os.environ.get("ACCELERATE_USE_DEEPSPEED", "").lower() == "true" or bool(get(spec, "launcher.deepspeed"))
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
    gc = bool(get(spec, "trainer.gradient_checkpointing", True))
    if q is not None:
        from peft import prepare_model_for_kbit_training
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=gc, gradient_checkpointing_kwargs={"use_reentrant": False})
    lk = plan.lora_kwargs(spec)
    if lk is not None:
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(**lk))
    if gc:
        model.config.use_cache = False  # the KV cache is useless in training and conflicts with checkpointing
    return model, attn


def _load_local(loader: str, path: str) -> Any:
    from datasets import load_dataset
    if os.path.isdir(path):
        return load_dataset(loader, data_dir=path, split="train")
    return load_dataset(loader, data_files=path, split="train")


def load_raw_datasets(spec: Dict[str, Any], workdir: str, run_dir: Optional[str] = None) -> Tuple[Any, Optional[Any]]:
    from datasets import load_dataset

    from .staging import is_remote, read_staged

    token = hub_token(dict(os.environ))
    staged = read_staged(run_dir) if run_dir else {}
    for key in ("data.train", "data.eval"):
        ref = get(spec, key)
        if is_remote(ref) and ref not in staged:
            raise RuntimeError("%s %s was not staged on the host (the bootstrap stages s3://, gs:// and hf:// data before training)" % (key, ref))
    src = plan.dataset_source(spec, workdir, staged)
    if src["kind"] == "local":
        train = _load_local(*src["train"])
        evalset = _load_local(*src["eval"]) if src["eval"] else None
        if src.get("eval_hub"):
            evalset = load_dataset(src["eval_hub"], split="train", token=token)
        return train, evalset
    train = load_dataset(src["id"], split=src["split"], token=token)
    evalset = None
    if src.get("eval"):
        ev = str(src["eval"])
        # "validation"/"test" name a split of the same dataset; anything else is another dataset
        evalset = load_dataset(src["id"], split=ev, token=token) if "/" not in ev else load_dataset(ev, split="train", token=token)
    return train, evalset


def uses_template(spec: Dict[str, Any], tokenizer: Any, run: Run) -> bool:
    if not bool(get(spec, "data.chat_template", False)):
        return False
    if getattr(tokenizer, "chat_template", None):
        return True
    run.warn("data.chat_template is set but the tokenizer has no chat template; joining 'role: content' lines", "no-chat-template")
    return False


def to_texts(ds: Any, spec: Dict[str, Any], tokenizer: Any, template: bool) -> Any:
    """One `text` column. Chat examples are rendered by the tokenizer's template, which already holds BOS
    and the end-of-turn token; plain text gets EOS appended so the model learns where an example ends."""
    text_field = str(get(spec, "data.text_field", "text"))
    eos = tokenizer.eos_token or ""
    apply = (lambda messages: tokenizer.apply_chat_template(messages, tokenize=False)) if template else None

    def to_text(example: Dict[str, Any]) -> Dict[str, Any]:
        text = plan.format_text(example, text_field, bool(get(spec, "data.chat_template", False)), apply) or ""
        if eos and not template and text and not text.endswith(eos):
            text += eos
        return {"text": text}

    ds = ds.map(to_text, remove_columns=[c for c in ds.column_names if c != "text"])
    return ds.filter(lambda e: bool(e["text"]))


def tokenize(ds: Any, tokenizer: Any, max_len: int, templated: bool) -> Any:
    # A rendered chat template already starts with BOS: adding special tokens again would give two.
    return ds.map(lambda b: tokenizer(b["text"], truncation=True, max_length=max_len, add_special_tokens=not templated),
                  batched=True, remove_columns=["text"])


class CausalCollator:
    """Pads a batch and labels every real token, EOS included, by the attention mask: transformers'
    DataCollatorForLanguageModeling labels by `input_ids != pad_token_id`, which drops EOS whenever the
    tokenizer pads with EOS (most base models), and the fine-tuned model then never stops."""

    def __init__(self, tokenizer: Any, pad_to_multiple_of: Optional[int] = None) -> None:
        self.tokenizer = tokenizer
        self.pad_to_multiple_of = pad_to_multiple_of

    def __call__(self, features: List[Dict[str, Any]]) -> Dict[str, Any]:
        feats = [{k: f[k] for k in ("input_ids", "attention_mask") if k in f} for f in features]
        batch = self.tokenizer.pad(feats, return_tensors="pt", pad_to_multiple_of=self.pad_to_multiple_of)
        labels = batch["input_ids"].clone()
        labels[batch["attention_mask"] == 0] = -100
        batch["labels"] = labels
        return batch


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
    ds = get(spec, "launcher.deepspeed")
    if not ds:
        return None
    path = str(ds) if os.path.isabs(str(ds)) else os.path.join(workdir, str(ds))
    if not os.path.isfile(path):
        raise RuntimeError("launcher.deepspeed: %s does not exist on the host (excluded from sync?)" % ds)
    return path


def training_arguments(spec: Dict[str, Any], output_dir: str, *, has_eval: bool, sft: bool, run: Run) -> Any:
    """TrainingArguments (or trl's SFTConfig) for this library version, with the spec's names mapped."""
    if sft:
        from trl import SFTConfig as Args
    else:
        from transformers import TrainingArguments as Args
    try:
        from transformers.training_args import OptimizerNames
        optimizers: Optional[List[str]] = [o.value for o in OptimizerNames]
    except ImportError:
        optimizers = None
    fields = [f.name for f in dataclasses.fields(Args)]
    kw = plan.training_args_kwargs(spec, output_dir, fields, has_eval=has_eval, report_to=report_targets(spec, run),
                                   bnb_installed=_installed("bitsandbytes"), warn=run.warn, optimizers=optimizers,
                                   deepspeed=deepspeed_config(spec, run.workdir), pretokenized=not sft)
    if "tensorboard" in kw["report_to"] and "logging_dir" in fields:
        kw["logging_dir"] = os.environ.get("TENSORBOARD_LOGGING_DIR") or tracking.tensorboard_dir(run.run_dir)  # transformers 4.x
    import torch
    if not torch.cuda.is_available() and "use_cpu" in fields:
        kw["use_cpu"] = True  # transformers 5 refuses bf16 without a GPU unless told the run is meant for the CPU
    if sft:
        max_len = int(get(spec, "data.max_seq_length", 2048))
        # trl 0.x: max_seq_length; trl >= 0.20 and 1.x: max_length. Only the name this version has is passed.
        for name, value in (("dataset_text_field", "text"), ("max_seq_length", max_len), ("max_length", max_len), ("packing", False)):
            if name in fields:
                kw[name] = value
    return Args(**kw)


def build_trainer(spec: Dict[str, Any], args: Any, model: Any, tokenizer: Any, train: Any, evalset: Optional[Any],
                  callbacks: List[Any], run: Run, sft: bool) -> Any:
    template = uses_template(spec, tokenizer, run)
    max_len = int(get(spec, "data.max_seq_length", 2048))
    if sft:
        from trl import SFTTrainer
        params = inspect.signature(SFTTrainer.__init__).parameters
        tk = {"processing_class": tokenizer} if "processing_class" in params else {"tokenizer": tokenizer}
        if template and "messages" in train.column_names:
            # Conversational data goes to trl as messages: it applies the template itself, once, without a second BOS.
            keep = lambda ds: ds.remove_columns([c for c in ds.column_names if c != "messages"])  # noqa: E731
            train_ds, eval_ds = keep(train), keep(evalset) if evalset is not None else None
        else:
            train_ds = to_texts(train, spec, tokenizer, template)
            eval_ds = to_texts(evalset, spec, tokenizer, template) if evalset is not None else None
        return SFTTrainer(model=model, args=args, train_dataset=train_ds, eval_dataset=eval_ds, callbacks=callbacks, **tk)

    from transformers import Trainer
    train_t = tokenize(to_texts(train, spec, tokenizer, template), tokenizer, max_len, template)
    if len(train_t) == 0:
        raise RuntimeError("the training set has no usable examples (field %r%s)" % (
            str(get(spec, "data.text_field", "text")), " or messages" if template else ""))
    eval_t = tokenize(to_texts(evalset, spec, tokenizer, template), tokenizer, max_len, template) if evalset is not None else None
    params = inspect.signature(Trainer.__init__).parameters
    tk = {"processing_class": tokenizer} if "processing_class" in params else {"tokenizer": tokenizer}
    return Trainer(model=model, args=args, train_dataset=train_t, eval_dataset=eval_t,
                   data_collator=CausalCollator(tokenizer), callbacks=callbacks, **tk)


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
    spec, errs = load_spec(os.path.join(run.run_dir, "spec.json"))
    if spec is None:
        for e in errs:
            print("[remote-finetune] spec.json: " + e, file=sys.stderr, flush=True)
        return 2
    out = str(get(spec, "outputs.dir", "outputs"))
    output_dir = out if os.path.isabs(out) else os.path.join(workdir, out)
    ckpt_dir = plan.checkpoint_dir(output_dir, run.run_id)
    capability = _capability()
    spec = plan.resolved_spec(spec, capability, run.warn)
    sft = bool(get(spec, "trainer.use_sft_trainer", False))
    if sft and not _installed("trl"):
        run.warn("trainer.use_sft_trainer is set but trl is not installed; using transformers' Trainer", "trl-missing")
        sft = False
    trainset, evalset = load_raw_datasets(spec, workdir, run.run_dir)
    args = training_arguments(spec, ckpt_dir, has_eval=evalset is not None, sft=sft, run=run)
    tokenizer = load_tokenizer(spec)
    # Seeded before the adapter is made: LoRA's A matrices are drawn at random, and the Trainer seeds only after
    # the model exists. Without this, two runs of one spec start from different adapters, and on several
    # machines only DDP's broadcast from rank 0 would hide it.
    from transformers import set_seed
    set_seed(int(get(spec, "trainer.seed", 42)))
    model, _attn = load_model(spec, tokenizer, run, capability)
    if stop.set:
        print("[remote-finetune] stop signal during model load; nothing to save yet", flush=True)
        return 0
    cb = events_callback(run.run_dir, model=str(get(spec, "model.id")), method=spec["method"], stop=stop, relpath=run.rel)
    trainer = build_trainer(spec, args, model, tokenizer, trainset, evalset, [cb], run, sft)
    if trainer.is_world_process_zero():
        with open(os.path.join(run.run_dir, "training_args.json"), "w", encoding="utf-8") as f:
            f.write(trainer.args.to_json_string())  # the arguments as used, kept with the run's record
    resume = plan.find_resume_checkpoint(ckpt_dir)
    if resume:
        print("[remote-finetune] resuming from %s" % resume, flush=True)
        run.warn("resuming from %s" % run.rel(resume), "resumed")
    trainer.train(resume_from_checkpoint=resume)
    # LoRA: the adapter alone; full: the whole model. save_model gathers ZeRO-3 shards itself.
    final = os.path.join(output_dir, "adapter" if spec["method"] != "full" else "model")
    trainer.save_model(final)
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(final)
        check = os.environ.get("RFT_SELFCHECK_LOGITS")
        if check:
            write_selfcheck(check, trainer.model, tokenizer)
    if evalset is not None and not stop.set:
        final_perplexity(spec, trainer, tokenizer, evalset, run)
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
        loss, ppl, tokens = perplexity(trainer.model, tokenizer, texts, int(get(spec, "data.max_seq_length", 2048)), not templated,
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
