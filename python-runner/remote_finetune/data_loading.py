"""The training and eval data as read: each data.train source (local file or folder, a saved dataset, the Hub, or
what the bootstrap staged from s3://, gs:// or hf://) with its weight, and the eval set (data.eval or a held-out
share), every row numbered as in its file so a later error can name it. The trainer and `evaluate` both read
data through here; neither imports the other.

datasets is imported inside the functions: the runner's core stays stdlib-only.
"""

import os
from typing import Any, Dict, List, Optional, Tuple

from . import data_formats
from . import trainer_plan as plan
from .spec import hub_token, RunSpec

# The row of the file each example came from (1-based), so an error still names it after splits and mixing.
ROW_COLUMN = "_rft_row"


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
    return ds.add_column(ROW_COLUMN, list(range(1, len(ds) + 1))) if ROW_COLUMN not in ds.column_names else ds



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
