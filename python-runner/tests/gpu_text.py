"""Whole-text readers of nvidia-smi output for the tests: they drive the runner's row parsers
(remote_finetune/gpu.py) over a whole fixture file at once, as test/support/nvidiaSmiText.ts does for the
TypeScript twin. The runner itself reads nvidia-smi line by line (the sampler's loop), so these live here."""

from typing import Any, Dict, Sequence

from remote_finetune import gpu


def parse_gpu_text(text: str, fields: Sequence[str] = gpu.QUERY_FIELDS) -> Dict[str, Any]:
    """Raw nvidia-smi output: {"samples", "rejected_lines"}. Rows are read in `fields` order until a
    header row names the columns; a query without `index` numbers its boards from 0 after each
    header, in the order nvidia-smi lists them."""
    table = gpu.parse_query_csv(text, fields)
    samples, rejected = [], list(table["rejected_lines"])
    for row in table["rows"]:
        s = gpu._sample(row["values"], row["ordinal"])
        if s is None:
            rejected.append(row["line"])
        else:
            samples.append(s)
    return {"samples": samples, "rejected_lines": sorted(rejected)}


def parse_apps_text(text: str, fields: Sequence[str] = gpu.APPS_FIELDS) -> Dict[str, Any]:
    """`--query-compute-apps` output, with or without a header: {"samples", "rejected_lines"}."""
    table = gpu.parse_query_csv(text, fields)
    samples, rejected = [], list(table["rejected_lines"])
    for row in table["rows"]:
        p = gpu._process(row["values"])
        if p is None:
            rejected.append(row["line"])
        else:
            samples.append(p)
    return {"samples": samples, "rejected_lines": sorted(rejected)}


def looks_like_no_gpu(text: str) -> bool:
    return gpu.diagnose(text) is not None
