"""From rows as read (data_loading) to what a trainer takes: each row converted to TRL's form (data_formats),
rendered through the chat template or as text, tokenized with its loss mask, checked for data that would teach
nothing, weighted, and padded in batches (CausalCollator). `evaluate` renders its texts the same way.
"""

from typing import Any, Callable, Dict, List, Optional, Protocol, Tuple

from . import data_formats
from .data_loading import ROW_COLUMN, Source
from .spec import RunSpec

Warn = Callable[[str, str], None]


class Warns(Protocol):
    """What the data steps need of a run: a way to warn (trainer.Run prints it and writes a warning event)."""

    def warn(self, message: str, code: str) -> None: ...


def uses_template(spec: Dict[str, Any], tokenizer: Any, warn: Warn) -> bool:
    if not bool(RunSpec(spec).data.chat_template):
        return False
    if getattr(tokenizer, "chat_template", None):
        return True
    warn("data.chat_template is set but the tokenizer has no chat template; joining 'role: content' lines", "no-chat-template")
    return False


def _as_sources(ds: Any) -> List[Source]:
    return ds if isinstance(ds, list) else [Source("data", ds)]


def _converter(spec: Dict[str, Any], tokenizer: Any, source: Source, warn: Optional[Warn]) -> Callable[[Dict[str, Any]], Dict[str, Any]]:
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


def tokenize(sources: Any, spec: Dict[str, Any], tokenizer: Any, run: Optional[Warns], *, check: bool = True) -> Any:
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


def prepare_datasets(spec: Dict[str, Any], tokenizer: Any, train: List[Source], evalset: Optional[List[Source]], run: Warns) -> Tuple[Any, Optional[Any]]:
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
