"""CPU and memory of a host without an NVIDIA GPU, as lines of the run's gpu.csv.

A GPU-less host (a laptop, a CPU box, the demo host) would otherwise leave the GPU panel with nothing
but "No NVIDIA GPU", while the numbers that matter there (is the training busy, is memory running out)
are one file read away. Each line is the sample time, the literal `cpu`, then CPU busy percent over the
interval, the number of CPUs, and memory used and total in MiB:

    1795661483.387, cpu, 97.5, 16, 20480, 128000

nvidia-smi's lines start with a GPU index after the time, never a word, so the two kinds cannot be
confused, and a reader that knows only GPU lines skips these. The TypeScript reader is
src/core/telemetry/hostSample.ts; both are tested on test/fixtures/host-samples.
"""

import re
from typing import Any, Dict, Optional, Tuple

MARKER = "cpu"
_NUMBER = re.compile(r"^\d+(?:\.\d+)?$")


def cpu_times(stat_text: str) -> Optional[Tuple[int, int]]:
    """(busy, total) jiffies from /proc/stat's aggregate `cpu` line; idle and iowait count as not busy."""
    for line in stat_text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            try:
                values = [int(v) for v in parts[1:]]
            except ValueError:
                return None
            if len(values) < 4:
                return None
            # guest and guest_nice (fields 9, 10) are already counted in user and nice.
            total = sum(values[:8])
            idle = values[3] + (values[4] if len(values) > 4 else 0)
            return total - idle, total
    return None


def cpu_count(stat_text: str) -> int:
    return sum(1 for line in stat_text.splitlines() if re.match(r"^cpu\d+\s", line))


def memory_mib(meminfo_text: str) -> Optional[Tuple[float, float]]:
    """(used, total) MiB from /proc/meminfo: used is MemTotal - MemAvailable, what `free` calls used."""
    kb = {}  # type: Dict[str, int]
    for line in meminfo_text.splitlines():
        m = re.match(r"^(MemTotal|MemAvailable|MemFree|Buffers|Cached):\s+(\d+)\s*kB", line)
        if m:
            kb[m.group(1)] = int(m.group(2))
    total = kb.get("MemTotal")
    if not total:
        return None
    # Kernels before 3.14 have no MemAvailable; free + buffers + cache is what they offered instead.
    available = kb.get("MemAvailable", kb.get("MemFree", 0) + kb.get("Buffers", 0) + kb.get("Cached", 0))
    return round((total - available) / 1024.0, 1), round(total / 1024.0, 1)


def busy_pct(before: Tuple[int, int], after: Tuple[int, int]) -> Optional[float]:
    busy, total = after[0] - before[0], after[1] - before[1]
    if total <= 0 or busy < 0:
        return None
    return round(min(100.0, 100.0 * busy / total), 1)


def format_line(ts: float, cpu_pct: Optional[float], cpus: int, used_mib: Optional[float], total_mib: Optional[float]) -> str:
    def v(x: Optional[float]) -> str:
        return "[N/A]" if x is None else ("%g" % x)
    return "%.3f, %s, %s, %d, %s, %s\n" % (ts, MARKER, v(cpu_pct), cpus, v(used_mib), v(total_mib))


def parse_line(line: str) -> Optional[Dict[str, Any]]:
    """One CPU line of gpu.csv as {"ts", "cpu_pct", "cpus", "memory_used_mib", "memory_total_mib"}, else None."""
    parts = [p.strip() for p in line.strip().split(",")]
    if len(parts) != 6 or parts[1] != MARKER or not _NUMBER.match(parts[0]) or not parts[3].isdigit():
        return None

    def num(s: str) -> Optional[float]:
        return float(s) if _NUMBER.match(s) else None

    return {"ts": float(parts[0]), "cpu_pct": num(parts[2]), "cpus": int(parts[3]),
            "memory_used_mib": num(parts[4]), "memory_total_mib": num(parts[5])}


def read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(1024 * 1024)
    except OSError:
        return ""


class HostProbe:
    """Reads /proc (or the files named) and turns two reads into one line; the first read only primes."""

    def __init__(self, stat_path: str = "/proc/stat", meminfo_path: str = "/proc/meminfo") -> None:
        self.stat_path = stat_path
        self.meminfo_path = meminfo_path
        self._last = None  # type: Optional[Tuple[int, int]]

    def available(self) -> bool:
        return cpu_times(read(self.stat_path)) is not None or memory_mib(read(self.meminfo_path)) is not None

    def line(self, ts: float) -> Optional[str]:
        stat = read(self.stat_path)
        now = cpu_times(stat)
        pct = busy_pct(self._last, now) if self._last is not None and now is not None else None
        primed = self._last is not None
        self._last = now
        mem = memory_mib(read(self.meminfo_path))
        if not primed and mem is None:
            return None
        used, total = mem if mem is not None else (None, None)
        return format_line(ts, pct, cpu_count(stat), used, total)
