"""Metrics from the dicts Hugging Face Trainer prints, for scripts that do not run our callback.

Trainer's progress callback writes each `logs` dict to the console:
  {'loss': 1.2345, 'grad_norm': 0.53, 'learning_rate': 0.0002, 'epoch': 0.04}
  {'eval_loss': 1.1, 'eval_runtime': 3.2, 'eval_samples_per_second': 31.1, 'epoch': 0.5}
  {'train_runtime': 90.1, 'train_samples_per_second': 2.5, 'train_loss': 1.8, 'epoch': 3.0}
Newer versions print floats as strings ('1.234'); numpy 2 prints np.float64(1.2); older code
paths printed tensor(0.53, device='cuda:0'). All of these are read. The step is taken from
the training progress bar ("10/200 [") when one is printed, else it counts training logging lines:
the evaluation and end-of-training dicts are printed at the step the last training line had, so they
are reported at that step and do not advance it (else a 30-step run ended at step 31).
"""

import ast
import math
import re
from typing import Any, Dict, Optional, Tuple

_DICT = re.compile(r"\{\s*'[A-Za-z_][A-Za-z0-9_/.\-]*'\s*:[^{}]*\}")
_WRAPPED = re.compile(r"\b[A-Za-z_][\w.]*\(\s*([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+|nan|inf))[^()]*\)")
_BAR = re.compile(r"\|\s*(\d+)/(\d+)\s*\[")

TRAIN_KEYS = {"loss": "loss", "learning_rate": "learning_rate", "grad_norm": "grad_norm", "epoch": "epoch"}


def _number(v: Any) -> Optional[float]:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        f = float(v)
    elif isinstance(v, str):
        try:
            f = float(v.strip())
        except ValueError:
            return None
    else:
        return None
    return f if math.isfinite(f) else None


def parse_logged_dict(line: str) -> Optional[Dict[str, float]]:
    """The numeric items of the last Trainer-style dict in a line, or None."""
    matches = _DICT.findall(line)
    if not matches:
        return None
    text = _WRAPPED.sub(lambda m: m.group(1), matches[-1])
    text = re.sub(r"(?<![\w'])(nan|inf)(?![\w'])", r"'\1'", text)
    try:
        raw = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(raw, dict):
        return None
    out: Dict[str, float] = {}
    for k, v in raw.items():
        n = _number(v)
        if isinstance(k, str) and n is not None:
            out[k] = n
    return out or None


class TrainerOutputParser:
    """Turns printed lines into (event type, fields) pairs for EventWriter.emit."""

    def __init__(self) -> None:
        self.step: Optional[int] = None
        self._bar_total = 0
        self.logged = 0

    def _observe_bar(self, line: str) -> None:
        # Evaluation has its own, shorter bar; the training bar is the one with the largest total.
        for done, total in _BAR.findall(line):
            d, t = int(done), int(total)
            if t >= self._bar_total:
                self._bar_total = t
                self.step = d

    def feed(self, line: str) -> Optional[Tuple[str, Dict[str, Any]]]:
        self._observe_bar(line)
        logs = parse_logged_dict(line)
        if not logs:
            return None
        is_eval = any(k.startswith("eval_") for k in logs)
        is_summary = "train_runtime" in logs or "train_loss" in logs
        if not is_eval and not is_summary and ("loss" in logs or "learning_rate" in logs):
            self.logged += 1
        step = self.step if self.step is not None else self.logged
        epoch = logs.get("epoch")
        if is_eval:
            metrics = {k: v for k, v in logs.items() if k not in ("epoch", "eval_loss")}
            fields: Dict[str, Any] = {"step": step, "eval_loss": logs.get("eval_loss"), "epoch": epoch, "metrics": metrics}
            return "eval", {k: v for k, v in fields.items() if v is not None}
        if is_summary:
            fields = {"step": step, "epoch": epoch, "extra": {k: v for k, v in logs.items() if k != "epoch"}}
            return "metrics", {k: v for k, v in fields.items() if v is not None}
        if "loss" not in logs and "learning_rate" not in logs:
            return None
        fields = {"step": step}
        # The training bar's total is the Trainer's max_steps: the extension shows "step N of M" and the time left.
        if self.step is not None and self._bar_total > 0:
            fields["max_steps"] = self._bar_total
        for src, dst in TRAIN_KEYS.items():
            if src in logs:
                fields[dst] = logs[src]
        extra = {k: v for k, v in logs.items() if k not in TRAIN_KEYS}
        if extra:
            fields["extra"] = extra
        return "metrics", fields
