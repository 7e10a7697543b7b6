"""Preference tuning (method dpo or orpo) through TRL's own trainers: the rows as TRL takes them, its config and
its trainer, with the run's callbacks, checkpoints and resume as an SFT run has them (trainer.train drives both).

The model arrives from trainer.load_model already wrapped in the LoRA adapter (on a 16-bit or 4-bit base, by
preference.base_method). DPO then needs no second model: TRL's DPOTrainer, given a PEFT model and no ref_model,
scores the reference with the adapter switched off. ORPO has no reference model at all.
"""

import dataclasses
import inspect
from typing import Any, Dict, List, Optional, Tuple

from . import data_formats
from . import trainer_plan as plan
from .spec import RunSpec


def trl_classes(method: str) -> Tuple[Any, Any]:
    """(config class, trainer class). ORPO moved to trl.experimental.orpo (trl 0.29 and 1.x); older trl has it at top level."""
    if method == "dpo":
        from trl import DPOConfig, DPOTrainer
        return DPOConfig, DPOTrainer
    try:
        from trl.experimental.orpo import ORPOConfig, ORPOTrainer
    except ImportError:
        from trl import ORPOConfig, ORPOTrainer  # type: ignore[attr-defined,no-redef]
    return ORPOConfig, ORPOTrainer


def rows(spec: Dict[str, Any], sources: List[Any], row_column: str) -> Any:
    """The sources' rows as {prompt?, chosen, rejected}, mixed by weight; a row of another layout stops the run
    with the file and row named, before the model loads."""
    from datasets import concatenate_datasets

    roles = data_formats.role_map(RunSpec(spec).data.roles)
    seed = int(RunSpec(spec).trainer.seed)
    parts = []
    for source in sources:
        ds = source.dataset
        first = ds[0] if len(ds) else {}
        if data_formats.detect(first) != "preference":
            raise data_formats.DataError(source.label, 1, None, "method %s trains on preference rows (chosen and rejected, with "
                                         "or without prompt); this row has %s" % (spec["method"], sorted(k for k, v in first.items()
                                                                                   if v is not None and k != row_column)))

        def convert(row: Dict[str, Any], label: str = source.label) -> Dict[str, Any]:
            return data_formats.to_preference(row, roles, label, int(row[row_column]))

        out = ds.map(convert, remove_columns=ds.column_names)
        if source.weight != 1.0:
            out = out.select(data_formats.weighted_indices(len(out), source.weight, seed))
        parts.append(out)
    return parts[0] if len(parts) == 1 else concatenate_datasets(parts)


def arguments(spec: Dict[str, Any], base_kwargs: Any) -> Any:
    """DPOConfig/ORPOConfig: the TrainingArguments the SFT path would build (base_kwargs(fields, class name)) plus
    beta and the length bound, each only under a name this trl has."""
    config_class, _ = trl_classes(spec["method"])
    fields = [f.name for f in dataclasses.fields(config_class)]
    kw = base_kwargs(fields, config_class.__name__)
    kw.update(plan.preference_kwargs(spec, fields))
    return config_class(**kw)


def build(spec: Dict[str, Any], args: Any, model: Any, tokenizer: Any, train: Any, evalset: Optional[Any], callbacks: List[Any]) -> Any:
    _, trainer_class = trl_classes(spec["method"])
    params = inspect.signature(trainer_class.__init__).parameters
    tk = {"processing_class": tokenizer} if "processing_class" in params else {"tokenizer": tokenizer}
    kw: Dict[str, Any] = dict(model=model, args=args, train_dataset=train, eval_dataset=evalset, callbacks=callbacks, **tk)
    if "ref_model" in params:
        kw["ref_model"] = None  # the adapter-disabled base (see the module docstring)
    return trainer_class(**kw)
