"""What a run actually used, measured on the host (issue 32.4), for the `finished` event's `measured` field:
the extension keeps it in the run record, shows it against the estimate, and a later estimate of the same
case uses it. Nothing leaves the user's machines.

- per GPU: torch's peak allocated and reserved memory, which only the training process can read (each
  rank writes measured-rank<N>.json through the callback), and nvidia-smi's peak memory.used from gpu.csv
  (what the whole process, CUDA context and other allocators included, held);
- tokens per second after warm-up: the median of the metrics events' tokens_per_second once the first
  tenth of the logged steps (and at least the first logging window: compilation, cache warm-up) is past;
- seconds from the runner's start to the end of the first optimizer step (model load, data preparation).
"""

import glob
import json
import os
import statistics
import time
from typing import Any, Callable, Dict, List, Optional

from .events import read_events
from .run_folder import GPU_CSV, MEASURED_RANK, MEASURED_RANK_GLOB

MIB = 2 ** 20


def torch_peaks() -> Dict[str, Any]:
    """This process's CUDA device and its peaks in MiB; {} without a GPU (or without torch)."""
    try:
        import torch
        if not (torch.cuda.is_available() and torch.cuda.is_initialized()):
            return {}
        dev = torch.cuda.current_device()
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        ids = [s.strip() for s in visible.split(",") if s.strip()]
        # nvidia-smi numbers GPUs physically; CUDA_VISIBLE_DEVICES maps this process's device to one of them.
        index = int(ids[dev]) if dev < len(ids) and ids[dev].isdigit() else dev
        return {"index": index, "torch_peak_allocated_mib": round(torch.cuda.max_memory_allocated(dev) / MIB, 1),
                "torch_peak_reserved_mib": round(torch.cuda.max_memory_reserved(dev) / MIB, 1)}
    except Exception:
        return {}


class RankRecorder:
    """Kept by the training callback on every rank: the first step's end and the torch peaks so far, rewritten
    at a log when they changed (a run killed later still leaves its last figures)."""

    def __init__(self, run_dir: Optional[str], rank: int, clock: Callable[[], float] = time.time,
                 peaks: Callable[[], Dict[str, Any]] = torch_peaks) -> None:
        self.path = os.path.join(run_dir, MEASURED_RANK % rank) if run_dir else None
        self.clock, self.peaks = clock, peaks
        self.first_step_at: Optional[float] = None
        self._written: Optional[Dict[str, Any]] = None

    def step(self) -> None:
        if self.first_step_at is None:
            self.first_step_at = self.clock()
            self.write()

    def write(self) -> None:
        if not self.path:
            return
        doc = dict(self.peaks())
        if self.first_step_at is not None:
            doc["first_step_at"] = self.first_step_at
        if doc == self._written:
            # Peaks settle after the first steps: rewriting the same figures at every log cost a rename per step
            # (3 ms on the CI disk, the larger part of the runner's per-step overhead in bench/trainer-overhead).
            return
        try:
            tmp = self.path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            os.replace(tmp, self.path)
            self._written = doc
        except OSError:
            pass


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x and abs(x) != float("inf")


def _rank_docs(run_dir: str) -> List[Dict[str, Any]]:
    out = []
    for p in sorted(glob.glob(os.path.join(run_dir, MEASURED_RANK_GLOB))):
        try:
            with open(p, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict):
            out.append(doc)
    return out


def _smi_peaks(run_dir: str, since: float) -> Dict[int, float]:
    from .gpu import parse_gpu_csv_line
    peaks: Dict[int, float] = {}
    try:
        with open(os.path.join(run_dir, GPU_CSV), encoding="utf-8", errors="replace") as f:
            for line in f:
                s = parse_gpu_csv_line(line.strip())
                if not s or not _finite(s.get("memory_used_mib")) or not isinstance(s.get("index"), int) or s.get("ts", 0) < since:
                    continue
                peaks[s["index"]] = max(peaks.get(s["index"], 0.0), float(s["memory_used_mib"]))
    except OSError:
        pass
    return peaks


def _tokens_per_second(run_dir: str, since: float) -> Optional[float]:
    rates = [float(e["tokens_per_second"]) for e in read_events(run_dir).events
             if e.get("type") == "metrics" and _finite(e.get("tokens_per_second")) and e["ts"] >= since]
    skip = max(1, len(rates) // 10)
    after = rates[skip:]
    return round(statistics.median(after), 1) if after else None


def collect(run_dir: str, started_at: float) -> Dict[str, Any]:
    """The `measured` object for this run's `finished` event ({} when nothing was measured). Only this run's
    samples count (a relaunched run's folder keeps the earlier attempt's lines): those after `started_at`."""
    out: Dict[str, Any] = {}
    docs = _rank_docs(run_dir)
    gpus: Dict[int, Dict[str, Any]] = {}
    for d in docs:
        if isinstance(d.get("index"), int) and d["index"] >= 0:
            g = gpus.setdefault(d["index"], {"index": d["index"]})
            for k in ("torch_peak_allocated_mib", "torch_peak_reserved_mib"):
                if _finite(d.get(k)):
                    g[k] = float(d[k])
    for i, peak in _smi_peaks(run_dir, started_at).items():
        gpus.setdefault(i, {"index": i})["smi_peak_mib"] = peak
    if gpus:
        out["gpus"] = [gpus[i] for i in sorted(gpus)]
    tps = _tokens_per_second(run_dir, started_at)
    if tps is not None:
        out["tokens_per_second"] = tps
    firsts = [float(d["first_step_at"]) for d in docs if _finite(d.get("first_step_at")) and d["first_step_at"] >= started_at]
    if firsts:
        out["first_step_s"] = round(min(firsts) - started_at, 3)
    return out
