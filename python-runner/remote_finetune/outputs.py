"""What a run leaves in its outputs folder: the adapter (or full model) to download, and checkpoints.

The built-in trainer writes to fixed places of its own run: <outputs.dir>/<run id>/adapter or /model, checkpoints
under <outputs.dir>/checkpoints/<run id> (runs before that layout wrote <outputs.dir>/adapter, shared by every
run of the workspace; it is still found for them). A user's own script chooses its own folders (the seed's train_vqa.py saves under its own
output_dir), so for it both are found by looking: checkpoint-N folders that hold trainer_state.json (HF
Trainer writes it last, so the checkpoint is complete), and the newest folder written during this run
that holds an adapter or model.
"""

import os
import re
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

from .spec import RunSpec
from .trainer_plan import run_outputs_dir

_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
_MAX_DEPTH = 4
_MODEL_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")


def outputs_root(spec: Dict[str, Any], workdir: str) -> Tuple[str, str]:
    """(outputs.dir as the spec gives it, its absolute path on this host)."""
    out = str(RunSpec(spec).outputs.dir)
    return out, out if os.path.isabs(out) else os.path.join(workdir, out)


def _walk(root: str) -> Iterator[Tuple[str, List[str], List[str]]]:
    base = root.rstrip(os.sep).count(os.sep)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        if dirpath.count(os.sep) - base >= _MAX_DEPTH:
            dirnames[:] = []
        yield dirpath, dirnames, filenames


def is_saved_model(path: str) -> bool:
    try:
        names = set(os.listdir(path))
    except OSError:
        return False
    return "adapter_config.json" in names or ("config.json" in names and any(n in names for n in _MODEL_FILES))


def _newest_mtime(path: str) -> float:
    try:
        return max(os.stat(os.path.join(path, n)).st_mtime for n in os.listdir(path))
    except (OSError, ValueError):
        return 0.0


def find_adapter(spec: Dict[str, Any], workdir: str, since: float, run_id: Optional[str] = None) -> Optional[str]:
    """The adapter or model of run `run_id` (relative to the workspace when it lies inside it): its own folder
    first; else <outputs.dir>/adapter or /model (runs from before the per-run folders, or an own script that saves
    there), written since `since` when that is given (0 for any age); else the newest saved model since `since`."""
    out, root = outputs_root(spec, workdir)
    if run_id:
        own = os.path.relpath(run_outputs_dir(root, run_id), root)
        for name in ("adapter", "model"):  # the built-in trainer: LoRA methods save the adapter, full fine-tuning the model
            if is_saved_model(os.path.join(root, own, name)):
                return os.path.join(out, own, name)
    for name in ("adapter", "model"):
        path = os.path.join(root, name)
        # Another run's adapter, left there before this one started, is not this run's.
        if is_saved_model(path) and (since <= 0 or _newest_mtime(path) >= since):
            return os.path.join(out, name)
    best: Optional[Tuple[float, str]] = None
    for dirpath, dirnames, _files in _walk(root):
        dirnames[:] = [d for d in dirnames if not _CHECKPOINT.match(d) and d != "checkpoints"]
        if dirpath == root or not is_saved_model(dirpath):
            continue
        mtime = _newest_mtime(dirpath)
        if mtime and mtime >= since and (best is None or mtime > best[0]):
            best = (mtime, dirpath)
    if best is None:
        return None
    return os.path.join(out, os.path.relpath(best[1], root))


def complete_checkpoints(root: str) -> List[Tuple[int, str]]:
    found = []
    for dirpath, dirnames, _files in _walk(root):
        for d in dirnames:
            m = _CHECKPOINT.match(d)
            if m and os.path.isfile(os.path.join(dirpath, d, "trainer_state.json")):
                found.append((int(m.group(1)), os.path.join(dirpath, d)))
    return sorted(found)


class CheckpointWatcher:
    """Reports each complete checkpoint-N under the outputs folder once, as a `checkpoint` event (own scripts)."""

    def __init__(self, root: str, since: float, emit: Callable[..., Any], relpath: Callable[[str], str],
                 interval_s: float = 1.0, active: Callable[[], bool] = lambda: True) -> None:
        self.root = root
        self.since = since
        self.emit = emit
        self.relpath = relpath
        self.interval_s = interval_s
        self.active = active
        self.seen: Set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rft-checkpoints", daemon=True)

    def scan(self) -> None:
        if not self.active():
            return
        for step, path in complete_checkpoints(self.root):
            if path in self.seen:
                continue
            self.seen.add(path)
            try:
                fresh = os.stat(os.path.join(path, "trainer_state.json")).st_mtime >= self.since
            except OSError:
                continue
            if fresh:  # a checkpoint of an earlier run in the same folder is not this run's
                self.emit("checkpoint", step=step, path=self.relpath(path))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.scan()

    def start(self) -> "CheckpointWatcher":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.scan()
