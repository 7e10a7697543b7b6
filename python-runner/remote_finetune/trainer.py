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
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import tracking
from . import data_formats
from . import speed
from . import trainer_plan as plan
from .callback import StopFlag, events_callback
from .events import EventWriter
from .memory_report import write_memory_report
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
        from peft import prepare_model_for_kbit_training
        # Checkpointing is switched on by the Trainer from the arguments (activation_checkpointing where transformers
        # has it): peft would call gradient_checkpointing_enable, which transformers 5 deprecates for removal in 6.
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
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


def _load_local(loader: str, path: str) -> Any:
    from datasets import load_dataset
    if os.path.isdir(path):
        return load_dataset(loader, data_dir=path, split="train")
    return load_dataset(loader, data_files=path, split="train")


class Source:
    """One dataset as read, with the name errors give it (the spec's path) and its weight in the mix."""

    def __init__(self, label: str, dataset: Any, weight: float = 1.0) -> None:
        self.label, self.dataset, self.weight = label, dataset, weight


def _read(src: Dict[str, Any], token: Optional[str]) -> Any:
    from datasets import DatasetDict, load_dataset, load_from_disk
    if src["kind"] == "local" and src["loader"] == "disk":
        ds = load_from_disk(src["path"])
        if isinstance(ds, DatasetDict):
            split = src["split"] if src["split"] in ds else (next(iter(ds)) if len(ds) == 1 else None)
            if split is None:
                raise RuntimeError("%s holds the splits %s and none is named %r (data.split)" % (src["path"], sorted(ds), src["split"]))
            ds = ds[split]
        return ds
    if src["kind"] == "local":
        return _load_local(src["loader"], src["path"])
    args = (src["id"], src["config"]) if src.get("config") else (src["id"],)
    return load_dataset(*args, split=src["split"], token=token)


def _numbered(ds: Any) -> Any:
    # The row of the file each example came from (1-based), so an error still names it after splits and mixing.
    return ds.add_column(ROW_COLUMN, list(range(1, len(ds) + 1))) if ROW_COLUMN not in ds.column_names else ds


ROW_COLUMN = "_rft_row"


def load_raw_datasets(spec: Dict[str, Any], workdir: str, run_dir: Optional[str] = None) -> Tuple[List[Source], Optional[List[Source]]]:
    """The training sources (data.train: one reference or several with weights) and the eval sources (data.eval,
    or data.eval_ratio of each training source, carved with trainer.seed), rows numbered as in their files."""
    from .staging import is_remote, read_staged

    token = hub_token(dict(os.environ))
    staged = read_staged(run_dir) if run_dir else {}
    refs = data_formats.train_sources(RunSpec(spec).data.train)
    evalref = RunSpec(spec).data.eval
    for ref in [r["path"] for r in refs] + ([str(evalref)] if evalref else []):
        if is_remote(ref) and ref not in staged:
            raise RuntimeError("data %s was not staged on the host (the bootstrap stages s3://, gs:// and hf:// data before training)" % ref)
    split, config = str(RunSpec(spec).data.split), RunSpec(spec).data.config
    train: List[Source] = []
    for r in refs:
        src = plan.source_of(r["path"], workdir, staged, str(r.get("split") or split), r.get("config") or config)
        train.append(Source(r["path"], _numbered(_read(src, token)), float(r["weight"])))
    evalset: Optional[List[Source]] = None
    if evalref:
        ev = str(evalref)
        first = plan.source_of(refs[0]["path"], workdir, staged, split, config)
        src = plan.source_of(ev, workdir, staged, "train")
        if src["kind"] == "hub" and first["kind"] == "hub" and "/" not in ev:
            src = dict(first, split=ev)  # "validation"/"test" name a split of the training dataset
        evalset = [Source(ev, _numbered(_read(src, token)))]
    elif float(RunSpec(spec).data.eval_ratio or 0) > 0:
        ratio, seed = float(RunSpec(spec).data.eval_ratio), int(RunSpec(spec).trainer.seed)
        evalset = []
        for s in train:
            parts = s.dataset.train_test_split(test_size=ratio, seed=seed)
            s.dataset = parts["train"]
            evalset.append(Source(s.label, parts["test"]))
    return train, evalset


def uses_template(spec: Dict[str, Any], tokenizer: Any, run: Run) -> bool:
    if not bool(RunSpec(spec).data.chat_template):
        return False
    if getattr(tokenizer, "chat_template", None):
        return True
    run.warn("data.chat_template is set but the tokenizer has no chat template; joining 'role: content' lines", "no-chat-template")
    return False


def _as_sources(ds: Any) -> List[Source]:
    return ds if isinstance(ds, list) else [Source("data", ds)]


def _converter(spec: Dict[str, Any], tokenizer: Any, source: Source, warn: Optional[Callable[[str, str], None]]) -> Callable[[Dict[str, Any]], Dict[str, Any]]:
    """Row -> TRL form. Chat rows always go through the tokenizer's template when it has one (as TRL renders
    them); Alpaca rows become messages only with data.chat_template. Without a template, chat rows are joined as
    'role: content' lines and trained on as text."""
    text_field = str(RunSpec(spec).data.text_field)
    roles = data_formats.role_map(RunSpec(spec).data.roles)
    has_template = bool(getattr(tokenizer, "chat_template", None))
    chat = has_template and bool(RunSpec(spec).data.chat_template)
    ds = source.dataset
    first = ds[0] if len(ds) else {}
    layout = data_formats.detect(first, text_field)
    if not layout:
        raise data_formats.DataError(source.label, 1, None, data_formats.describe_columns(
            {k: v for k, v in first.items() if k != ROW_COLUMN}, text_field))
    if layout == "preference":
        # chosen/rejected pairs teach a preference, not a text: SFT on them would train on both answers alike.
        raise data_formats.DataError(source.label, 1, None, "holds preference rows (chosen and rejected); train them with "
                                     "method dpo or orpo, or give prompt/completion or chat rows for %s" % spec["method"])
    if layout == "chat" and not has_template and warn is not None:
        warn("%s holds conversations and the tokenizer has no chat template; joining 'role: content' lines" % source.label, "no-chat-template")

    column = data_formats.column_of(first, layout, text_field)

    def convert(row: Dict[str, Any]) -> Dict[str, Any]:
        index = int(row.get(ROW_COLUMN, 0))
        if data_formats.detect(row, text_field) != layout:
            raise data_formats.DataError(source.label, index, column, "missing or empty here, while the first row has it (%s rows); %s" % (
                layout, data_formats.describe_columns({k: v for k, v in row.items() if k != ROW_COLUMN}, text_field)))
        ex = data_formats.to_trl(row, layout, chat=chat, roles=roles, text_field=text_field, source=source.label, index=index)
        if not has_template and "messages" in ex:
            ex = {"text": "\n".join("%s: %s" % (m["role"], m["content"]) for m in ex["messages"])}
        if not has_template and isinstance(ex.get("prompt"), list):
            raise data_formats.DataError(source.label, index, "prompt", "conversational prompt/completion rows need a tokenizer with a chat template")
        return ex

    convert.layout = layout  # type: ignore[attr-defined]
    return convert


def to_texts(ds: Any, spec: Dict[str, Any], tokenizer: Any, template: bool) -> Any:
    """One `text` column: each row converted (data_formats) and rendered whole, as the trainer sees it."""
    from datasets import Dataset
    texts: List[str] = []
    for source in _as_sources(ds):
        convert = _converter(spec, tokenizer, source, None)
        texts.extend(data_formats.render_text(tokenizer, convert(row)) for row in source.dataset)
    return Dataset.from_dict({"text": [t for t in texts if t]})


def tokenize(sources: Any, spec: Dict[str, Any], tokenizer: Any, run: Optional[Run], *, check: bool = True) -> Any:
    """input_ids, attention_mask and labels of every row of every source, the loss on the assistant turns of chat
    rows, on the completion of prompt/completion (and Alpaca) rows and on all of text (data.train_on_prompt:
    true takes it on every token). Before anything trains, data that would teach nothing raises DataError naming
    the file, row and column: a row that fails to convert or render, renders to special tokens only, or a source
    whose rows nearly all render the same. Sources are weighted (data.train entries' `weight`) and concatenated."""
    from datasets import concatenate_datasets

    max_len = int(RunSpec(spec).data.max_seq_length)
    on_prompt = bool(RunSpec(spec).data.train_on_prompt)
    special = list(getattr(tokenizer, "all_special_ids", []) or [])
    seed = int(RunSpec(spec).trainer.seed)
    parts = []
    for source in _as_sources(sources):
        convert = _converter(spec, tokenizer, source, run.warn if run is not None else None)
        text_field = str(RunSpec(spec).data.text_field)

        def encode(row: Dict[str, Any], source: Source = source, convert: Any = convert) -> Dict[str, Any]:
            ex = convert(row)
            index = int(row.get(ROW_COLUMN, 0))
            column = data_formats.column_of(row, convert.layout, text_field)
            try:
                ids, labels = data_formats.encode(tokenizer, ex, train_on_prompt=on_prompt)
            except data_formats.DataError:
                raise
            except Exception as e:  # jinja's TemplateError and raise_exception(): a role or order the template refuses
                raise data_formats.DataError(source.label, index, column, "the chat template cannot render it: %s: %s" % (
                    type(e).__name__, str(e)[:300])) from e
            if check and data_formats.teaches_nothing(labels, special):
                raise data_formats.DataError(source.label, index, column, "nothing to learn: it renders to %r, and the loss would "
                                             "be taken on %s" % (tokenizer.decode(ids)[:200], "special tokens only" if any(
                                                 t != -100 for t in labels) else "no token"))
            key = hash(tuple(ids))
            ids, labels = ids[:max_len], labels[:max_len]
            return {"input_ids": ids, "attention_mask": [1] * len(ids), "labels": labels, ROW_COLUMN: index, "_rft_key": key}

        ds = source.dataset
        out = ds.map(encode, remove_columns=ds.column_names)
        if check:
            same = data_formats.identical_rows(list(out["_rft_key"]))
            if same is not None:
                top, n, positions = same
                rows = [int(out[p - 1][ROW_COLUMN]) for p in positions]
                raise data_formats.DataError(source.label, rows[0], None, "%d of its %d rows (rows %s, ...) render to the same tokens: %r" % (
                    top, n, ", ".join(str(r) for r in rows), tokenizer.decode(out[positions[0] - 1]["input_ids"])[:200]))
        kept = out.filter(lambda e: any(t != -100 for t in e["labels"]))
        if len(kept) < len(out) and run is not None:
            run.warn("%s: %d rows have nothing left to learn after truncation to data.max_seq_length %d (the prompt fills it); "
                     "skipped" % (source.label, len(out) - len(kept), max_len), "truncated-rows")
        if source.weight != 1.0:
            kept = kept.select(data_formats.weighted_indices(len(kept), source.weight, seed))
        parts.append(kept.remove_columns(["_rft_key"]))
    ds = parts[0] if len(parts) == 1 else concatenate_datasets(parts)
    return ds.remove_columns([ROW_COLUMN])


def prepare_datasets(spec: Dict[str, Any], tokenizer: Any, train: List[Source], evalset: Optional[List[Source]], run: Run) -> Tuple[Any, Optional[Any]]:
    """Tokenized train and eval sets with their labels, ready for either trainer; raises DataError first."""
    train_t = tokenize(train, spec, tokenizer, run)
    if len(train_t) == 0:
        raise data_formats.DataError(", ".join(s.label for s in train), None, None, "no rows to train on")
    eval_t = tokenize(evalset, spec, tokenizer, run) if evalset else None
    labelled = sum(sum(1 for t in row if t != -100) for row in train_t["labels"])
    total = sum(len(row) for row in train_t["input_ids"])
    print("[remote-finetune] data: %d rows, %d tokens, %d of them in the loss" % (len(train_t), total, labelled), flush=True)
    return train_t, eval_t


class CausalCollator:
    """Pads a batch. Labels come from the dataset (the loss mask of data_formats), padded with -100; without
    them every real token is labelled, EOS included, by the attention mask: transformers'
    DataCollatorForLanguageModeling labels by `input_ids != pad_token_id`, which drops EOS whenever the
    tokenizer pads with EOS (most base models), and the fine-tuned model then never stops."""

    def __init__(self, tokenizer: Any, pad_to_multiple_of: Optional[int] = None) -> None:
        self.tokenizer = tokenizer
        self.pad_to_multiple_of = pad_to_multiple_of

    def __call__(self, features: List[Dict[str, Any]]) -> Dict[str, Any]:
        feats = [{"input_ids": f["input_ids"], "attention_mask": f.get("attention_mask") or [1] * len(f["input_ids"])} for f in features]
        batch = self.tokenizer.pad(feats, return_tensors="pt", pad_to_multiple_of=self.pad_to_multiple_of)
        labels = batch["input_ids"].clone()
        labels[batch["attention_mask"] == 0] = -100
        if all("labels" in f for f in features):
            right = self.tokenizer.padding_side != "left"
            width = labels.shape[1]
            for i, f in enumerate(features):
                row = list(f["labels"])
                pad = [-100] * (width - len(row))
                labels[i] = labels.new_tensor(row + pad if right else pad + row)
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


def speed_host(spec: Dict[str, Any], capability: Optional[Tuple[int, int]]) -> speed.Host:
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
                      int(os.environ.get("WORLD_SIZE", "1")), (version[0], version[1]))


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


def speed_plan(spec: Dict[str, Any], capability: Optional[Tuple[int, int]], run: Run) -> Dict[str, Any]:
    """The spec with speed.py's choices written in; what was chosen and why goes to the log and, as one of the run's
    first events, to events.jsonl (a `warning` with code speed-plan and the choices in `speed`). Raises SpecRefused."""
    chosen = speed.plan(spec, speed_host(spec, capability))
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
    spec, errs = load_spec(os.path.join(run.run_dir, "spec.json"))
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
    capability = _capability()
    spec = plan.resolved_spec(spec, capability, run.warn)
    try:
        spec = speed_plan(spec, capability, run)
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
        with open(os.path.join(run.run_dir, "training_args.json"), "w", encoding="utf-8") as f:
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
