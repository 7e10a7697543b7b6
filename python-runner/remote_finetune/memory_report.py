"""RFT_MEMORY_REPORT=<file>: the training process's peak memory, written when `train` ends (after an
out-of-memory error too), for the GPU measurements in bench/gpu that hold the VRAM estimate to real runs.

The metrics events carry torch.cuda.max_memory_allocated only. What decides whether a run fits is what the
caching allocator reserved (allocated plus its cached, fragmented blocks), and that can be read only inside
the training process, so the trainer writes it here when asked. Off by default: nothing is written.
"""

import json
import os
import resource
from typing import Any, Dict, Optional

MIB = 2 ** 20


def peak_memory() -> Dict[str, Any]:
    """Peak figures of this process in MiB; the CUDA ones are None without a GPU (or without torch)."""
    # ru_maxrss is in KiB on Linux.
    out: Dict[str, Any] = {"device": "cpu", "host_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                           "cuda_max_memory_allocated_mib": None, "cuda_max_memory_reserved_mib": None}
    try:
        import torch
    except ImportError:
        return out
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        dev = torch.cuda.current_device()
        out.update(device=torch.cuda.get_device_name(dev),
                   cuda_max_memory_allocated_mib=round(torch.cuda.max_memory_allocated(dev) / MIB, 1),
                   cuda_max_memory_reserved_mib=round(torch.cuda.max_memory_reserved(dev) / MIB, 1),
                   cuda_total_memory_mib=round(torch.cuda.get_device_properties(dev).total_memory / MIB, 1))
    return out


def write_memory_report(path: Optional[str]) -> None:
    """Writes peak_memory() to `path` (rank 0 only: every rank of a launcher sees the same variable)."""
    if not path or int(os.environ.get("RANK", "0")) != 0:
        return
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(peak_memory(), f)
    os.replace(tmp, path)
