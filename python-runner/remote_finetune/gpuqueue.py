"""A queue per host, kept on the host itself, so it goes on with the laptop closed.

Each GPU is a slot: an flock(2) on <root>/slots/gpu<i>.lock held by the runner for the run's life, so a
runner that dies for any reason (crash, SIGKILL, reboot) frees its GPUs with no cleanup step. Waiting runs
hold a ticket <root>/queue/<time_ns>-<run id> naming their pid; the oldest live ticket goes first (FIFO:
a one-GPU run does not overtake a four-GPU run that waits for the whole machine). A host with several
GPUs runs several single-GPU runs side by side, each with CUDA_VISIBLE_DEVICES set to its own slots.

A host with no NVIDIA GPU has nothing to share: runs there start at once, as before. The locks bind our
runners only: a process started by hand on the GPU is not seen (nvidia-smi shows it in the GPU panel).
"""

import fcntl
import os
import re
import subprocess
import time
from typing import Any, Callable, Dict, List, Optional

from .run_folder import QUEUE_DIR, QUEUE_SLOTS_DIR
from .watchdog import pid_alive

POLL_S = float(os.environ.get("RFT_QUEUE_POLL_S", "2"))


def gpu_indices(nvidia_smi: str = "nvidia-smi") -> List[int]:
    """The host's GPU indices from nvidia-smi, or [] where there is none (no driver, no nvidia-smi)."""
    try:
        r = subprocess.run([nvidia_smi, "--query-gpu=index", "--format=csv,noheader,nounits"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, timeout=30, universal_newlines=True)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if r.returncode != 0:
        return []
    return sorted({int(l.strip()) for l in r.stdout.splitlines() if l.strip().isdigit()})


def _int_at(spec: Dict[str, Any], section: str, key: str) -> Optional[int]:
    v = spec.get(section)
    v = v.get(key) if isinstance(v, dict) else None
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def gpus_wanted(spec: Dict[str, Any]) -> int:
    """GPUs this machine's part of the run uses: the launcher's processes per machine, else the target's
    gpu_count, else one."""
    procs = _int_at(spec, "launcher", "num_processes")
    machines = _int_at(spec, "launcher", "num_machines") or 1
    if procs:
        return max(1, -(-procs // machines))
    return _int_at(spec, "target", "gpu_count") or 1


def pinned_devices(env: Dict[str, str]) -> Optional[List[int]]:
    """The GPUs a user's own CUDA_VISIBLE_DEVICES names (as indices), which then are the slots to take."""
    v = env.get("CUDA_VISIBLE_DEVICES")
    if v is None or not re.fullmatch(r"\s*\d+(\s*,\s*\d+)*\s*", v):
        return None
    return sorted({int(x) for x in v.split(",")})


class Slots:
    """The slots a run holds; released when the runner exits (or by release())."""

    def __init__(self, indices: List[int], fds: List[int]) -> None:
        self.indices = indices
        self._fds = fds

    def release(self) -> None:
        for fd in self._fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds = []


class HostQueue:
    def __init__(self, root: str, run_id: str, poll_s: float = POLL_S) -> None:
        self.slots_dir = os.path.join(root, QUEUE_SLOTS_DIR)
        self.queue_dir = os.path.join(root, QUEUE_DIR)
        self.run_id = run_id
        self.poll_s = poll_s
        self.ticket: Optional[str] = None

    def _tickets(self) -> List[str]:
        """Live tickets, oldest first; those of runners that are gone are removed."""
        out = []
        try:
            names = sorted(os.listdir(self.queue_dir))
        except OSError:
            return out
        for name in names:
            path = os.path.join(self.queue_dir, name)
            try:
                with open(path, "r", encoding="utf-8") as f:
                    pid = int(f.read().strip() or "0")
            except (OSError, ValueError):
                continue
            if pid_alive(pid):
                out.append(name)
            elif path != self.ticket:
                try:
                    os.unlink(path)
                except OSError:
                    pass
        return out

    def _try_take(self, candidates: List[int], want: int) -> Optional[Slots]:
        fds: List[int] = []
        taken: List[int] = []
        for i in candidates:
            fd = os.open(os.path.join(self.slots_dir, "gpu%d.lock" % i), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            fds.append(fd)
            taken.append(i)
            if len(taken) == want:
                return Slots(taken, fds)
        for fd in fds:
            os.close(fd)
        return None

    def _leave(self) -> None:
        if self.ticket:
            try:
                os.unlink(self.ticket)
            except OSError:
                pass
            self.ticket = None

    def acquire(self, candidates: List[int], want: int, emit: Callable[..., Any], stop: Callable[[], bool]) -> Optional[Slots]:
        """Waits for `want` of `candidates` (all of them when pinned), in turn; None if stop() turned true
        while waiting. Emits `queued` whenever the run's place changes and `assigned` when it has its GPUs."""
        for d in (self.slots_dir, self.queue_dir):
            os.makedirs(d, mode=0o700, exist_ok=True)
        started = time.time()
        self.ticket = os.path.join(self.queue_dir, "%020d-%s" % (time.time_ns(), self.run_id))
        with open(self.ticket, "w", encoding="utf-8") as f:
            f.write("%d\n" % os.getpid())
        last_position = None
        try:
            while True:
                if stop():
                    return None
                tickets = self._tickets()
                name = os.path.basename(self.ticket)
                position = tickets.index(name) + 1 if name in tickets else 1
                if position == 1:
                    got = self._try_take(candidates, want)
                    if got is not None:
                        emit("assigned", gpus=got.indices, waited_s=round(time.time() - started, 3))
                        return got
                # Said from the second look on: two runs started together find each other's ticket first, and the
                # one behind has its GPU a poll later; that is no queue worth showing. Position 1 that could not
                # take its GPUs waits for runs that are already training.
                if position != last_position and time.time() - started >= self.poll_s:
                    emit("queued", position=position, gpus_wanted=want)
                    last_position = position
                time.sleep(self.poll_s)
        finally:
            self._leave()
