"""Stall detection on training progress (`watchdog.stall_minutes`, `watchdog.on_stall`).

The idle watchdog counts a run as busy while its log changes; a loop hung in an NCCL collective or a stuck data
loader can keep printing (or keep a live process) and burn the GPU until someone looks. This watcher looks at the
one thing that means progress, the optimizer step: the built-in trainer's callback writes it to `step_progress`
in the run folder at every step (at most once a second; during an evaluation the same step again, which keeps the
watch quiet without counting a step), and every `metrics` event in events.jsonl carries one
(printed by a user's own script and parsed by the runner, or written by our callback).

No step for the threshold while the training process lives: one `stalled` event with what was seen (the last
step, GPU utilisation from gpu.csv, the process's state from /proc), the host notification, and with
`on_stall: stop` the same stop as the extension's Stop (SIGTERM to the runner: the trainer saves a checkpoint if
its loop still turns, SIGKILL after the grace period), so the run ends as `stalled` and the idle watchdog and
teardown apply. The threshold is the spec's `stall_minutes` (fractions allowed), else 20 steps' worth of the
measured step time, never under 10 minutes, and never under three of the gaps seen between logged steps (a
script that logs every 50 steps would otherwise look stalled between its lines). Nothing is judged before the
first step: model download and loading have no steps.
"""

import os
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from .events import read_events
from .gpu import parse_gpu_csv_line
from .run_folder import GPU_CSV, STEP_PROGRESS
from .spec import RunSpec

DEFAULT_MIN_S = 600.0
STEPS_OF_SLACK = 20
LOG_GAPS_OF_SLACK = 3
ACTIONS = ("notify", "stop")
_STATES = {"R": "running", "S": "sleeping", "D": "disk-sleep", "T": "stopped", "t": "traced", "Z": "zombie", "X": "dead",
           "I": "idle"}


def write_progress(run_dir: str, step: int) -> None:
    """The callback's side: the newest optimizer step, replaced atomically."""
    tmp = os.path.join(run_dir, STEP_PROGRESS + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("%d\n" % step)
        os.replace(tmp, os.path.join(run_dir, STEP_PROGRESS))
    except OSError:
        pass


def settings(spec: Dict[str, Any]) -> Tuple[Optional[float], str]:
    """(threshold in seconds from the spec, or None for the measured default; the action)."""
    minutes = RunSpec(spec).watchdog.stall_minutes
    fixed = float(minutes) * 60.0 if isinstance(minutes, (int, float)) and not isinstance(minutes, bool) and minutes > 0 else None
    action = RunSpec(spec).watchdog.on_stall
    return fixed, action if action in ACTIONS else "notify"


def process_state(pid: Optional[int]) -> Optional[str]:
    """The process's state as /proc/<pid>/stat tells it, in a word."""
    if not pid:
        return None
    try:
        with open("/proc/%d/stat" % pid, "r", encoding="utf-8", errors="replace") as f:
            code = f.read().rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return None
    return _STATES.get(code, code)


def gpu_utilisation(run_dir: str) -> Optional[float]:
    """The mean utilisation.gpu of the newest sample time in gpu.csv (all of the run's GPUs), if any."""
    try:
        with open(os.path.join(run_dir, GPU_CSV), "rb") as f:
            f.seek(0, os.SEEK_END)
            start = max(0, f.tell() - 16384)
            f.seek(start)
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    # A read from the middle of the file starts inside a line.
    samples = [s for s in (parse_gpu_csv_line(l) for l in (lines[1:] if start else lines)) if s and s.get("utilization_gpu") is not None]
    if not samples:
        return None
    newest = samples[-1]["ts"]
    vals = [s["utilization_gpu"] for s in samples if abs(s["ts"] - newest) < 1.0]
    return round(min(100.0, max(0.0, sum(vals) / len(vals))), 1)


class StepClock:
    """The newest optimizer step and when it was seen, and the measured time per step."""

    def __init__(self) -> None:
        self.points: List[Tuple[int, float]] = []  # (step, time it was first seen), steps increasing
        self.max_gap_s = 0.0

    def see(self, step: int, at: float) -> bool:
        """True when `step` is progress (a step not seen before)."""
        if self.points and step <= self.points[-1][0]:
            return False  # the same step read from both sources, or a line replayed
        if self.points:
            self.max_gap_s = max(self.max_gap_s, at - self.points[-1][1])
        self.points.append((step, at))
        del self.points[:-64]
        return True

    @property
    def last(self) -> Optional[Tuple[int, float]]:
        return self.points[-1] if self.points else None

    def step_time_s(self) -> Optional[float]:
        if len(self.points) < 2:
            return None
        (s0, t0), (s1, t1) = self.points[0], self.points[-1]
        return (t1 - t0) / (s1 - s0) if s1 > s0 else None

    def threshold_s(self, fixed: Optional[float]) -> float:
        if fixed is not None:
            return fixed
        per_step = self.step_time_s() or 0.0
        return max(DEFAULT_MIN_S, STEPS_OF_SLACK * per_step, LOG_GAPS_OF_SLACK * self.max_gap_s)


class StallWatcher:
    def __init__(self, run_dir: str, fixed_s: Optional[float], action: str, emit: Callable[..., Any],
                 notify: Callable[[str, str, bool], None], on_stop: Callable[[], None], pid: Callable[[], Optional[int]],
                 clock: Callable[[], float] = time.time, interval_s: float = 5.0) -> None:
        self.run_dir, self.fixed_s, self.action = run_dir, fixed_s, action
        self.emit, self.notify, self.on_stop, self.pid = emit, notify, on_stop, pid
        self.clock, self.interval_s = clock, interval_s
        self.steps = StepClock()
        self.stalled = False  # a stall is reported once; a step after it re-arms the watch
        self.stopped = False
        self._events_offset = 0
        self._progress_mtime: Optional[float] = None
        self._busy_at: Optional[float] = None
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rft-stall", daemon=True)

    def _read_events(self) -> None:
        read = read_events(self.run_dir, self._events_offset)
        self._events_offset = read.offset
        for e in read.events:
            if e.get("type") == "metrics" and isinstance(e.get("step"), int) and not isinstance(e.get("step"), bool):
                self._progress(e["step"])

    def _read_progress_file(self) -> None:
        path = os.path.join(self.run_dir, STEP_PROGRESS)
        try:
            mtime = os.stat(path).st_mtime
            if mtime == self._progress_mtime:
                return
            with open(path, "r", encoding="utf-8") as f:
                step = int(f.read().strip() or "-1")
        except (OSError, ValueError):
            return
        self._progress_mtime = mtime
        if step >= 0 and not self._progress(step):
            # The same step written again: the trainer is evaluating, alive but with no optimizer step to show.
            self._busy_at = self.clock()

    def _progress(self, step: int) -> bool:
        if self.steps.see(step, self.clock()):
            self.stalled = False
            return True
        return False

    def check(self) -> None:
        self._read_events()
        self._read_progress_file()
        last = self.steps.last
        if last is None or self.stalled or self.stopped:
            return
        pid = self.pid()
        state = process_state(pid)
        if state is None or state in ("zombie", "dead"):
            return  # the process is gone or going: its end, not a stall, decides
        quiet = self.clock() - last[1]
        threshold = self.steps.threshold_s(self.fixed_s)
        if quiet < threshold or (self._busy_at is not None and self.clock() - self._busy_at < threshold):
            return
        self.stalled = True
        fields: Dict[str, Any] = {"stalled_s": round(quiet, 1), "threshold_s": round(threshold, 1), "action": self.action,
                                  "last_step": last[0], "process_state": state}
        per_step = self.steps.step_time_s()
        if per_step is not None:
            fields["step_time_s"] = round(per_step, 3)
        util = gpu_utilisation(self.run_dir)
        if util is not None:
            fields["gpu_util_pct"] = util
        self.emit("stalled", **fields)
        what = "stalled at step %d, stopping" % last[0] if self.action == "stop" else "stalled at step %d" % last[0]
        body = "no optimizer step for %s (limit %s) while the training process is %s%s%s" % (
            _span(quiet), _span(threshold), state, "" if util is None else ", GPU %.0f%% busy" % util,
            "; saving what it can and stopping the run" if self.action == "stop" else "; the run goes on (watchdog.on_stall: stop ends it)")
        self.notify(what, body, True)
        if self.action == "stop":
            self.stopped = True
            self.on_stop()

    def _loop(self) -> None:
        while not self._halt.wait(self.interval_s):
            self.check()
            if self.stopped:
                return

    def start(self) -> "StallWatcher":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._halt.set()


def _span(s: float) -> str:
    return "%.0f min" % (s / 60) if s >= 120 else "%.0f s" % s


def interval_s(fixed_s: Optional[float]) -> float:
    """Every 5 s; a limit of seconds (a test's) is looked at ten times within it."""
    return max(0.2, min(5.0, (fixed_s or DEFAULT_MIN_S) / 10.0))


def start_watch(run_dir: str, spec: Dict[str, Any], file_env: Dict[str, str], emit: Callable[..., Any],
                pid: Callable[[], Optional[int]], stop: Callable[[], None]) -> "StallWatcher":
    """The runner's stall watch, notifying through notify.py's targets as the budget watch does."""
    from .budget import rank0_note

    fixed, action = settings(spec)
    return StallWatcher(run_dir, fixed, action, emit, rank0_note(run_dir, spec, file_env, emit), stop, pid, interval_s=interval_s(fixed)).start()
