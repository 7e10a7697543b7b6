"""Runs a child process with its combined stdout/stderr appended to output.log.

- append-only, byte for byte (ANSI colours and tqdm's carriage returns kept for the log panel),
  except that exact secret values are replaced (envfile.Redactor); a value split across two
  reads is still caught because a possible secret prefix at the end of a read is held back;
- every line (split at \\n and \\r) goes to `on_line` for signatures and printed metrics;
- a trickle of output (a loss line a step) is read in batches, at most BATCH_S apart: each read wakes this
  process on the training process's core;
- SIGTERM/SIGINT sent to us are forwarded to the child's whole process group (accelerate and
  torchrun workers included); the child gets `grace_s` to save a checkpoint, then SIGKILL.
"""

import os
import queue
import re
import select
import signal
import subprocess
import threading
import time
from typing import Any, Callable, Dict, List, Optional

from .envfile import Redactor

_LINE_BREAKS = re.compile(r"[\r\n]+")


# Output read in small pieces is gathered for BATCH_S between reads (output.log lags it by that much at most).
BATCH_S = 0.05
BATCH_BELOW_BYTES = 16384
# Lines waiting for the scanner; past that, lines are logged but not scanned (CaptureResult.lines_not_scanned).
QUEUED_LINES = 20000


class CaptureResult:
    def __init__(self, returncode: int, signalled: Optional[int], runtime_s: float, killed_by_us: bool, lines_not_scanned: int = 0) -> None:
        self.returncode = returncode
        self.lines_not_scanned = lines_not_scanned
        self.signalled = signalled  # the signal we received and forwarded, if any
        self.runtime_s = runtime_s
        self.killed_by_us = killed_by_us


class _Splitter:
    """Decides which bytes may be written to the log now without splitting a secret."""

    def __init__(self, redactor: Redactor) -> None:
        self.pending = b""
        self._secrets = list(redactor.secret_bytes())

    def _risky_suffix(self, data: bytes) -> int:
        """Length of the longest suffix of data that is a proper prefix of some secret."""
        best = 0
        for s in self._secrets:
            for k in range(min(len(s) - 1, len(data)), best, -1):
                if data.endswith(s[:k]):
                    best = k
                    break
        return best

    def push(self, chunk: bytes, final: bool = False) -> bytes:
        """Bytes up to the last line end (\\n or \\r) are safe; at the end everything is."""
        data = self.pending + chunk
        if final:
            self.pending = b""
            return data
        cut = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
        self.pending = data[cut:]
        return data[:cut]

    def flush_partial(self) -> bytes:
        """On a pause in output: release the partial line except a tail that might start a secret."""
        hold = self._risky_suffix(self.pending)
        head = self.pending[:len(self.pending) - hold]
        self.pending = self.pending[len(self.pending) - hold:]
        return head


class _Lines:
    """Whole lines for the scanners, whatever the log writes did."""

    def __init__(self) -> None:
        self.buf = b""

    def push(self, data: bytes, final: bool = False) -> List[str]:
        self.buf += data
        cut = max(self.buf.rfind(b"\n"), self.buf.rfind(b"\r")) + 1
        if final:
            cut = len(self.buf)
        done, self.buf = self.buf[:cut], self.buf[cut:]
        if len(self.buf) > 1 << 20:  # a megabyte without a line end is not a line worth scanning
            self.buf = b""
        return split_lines(done) if done else []


def split_lines(data: bytes) -> List[str]:
    return [line for line in _LINE_BREAKS.split(data.decode("utf-8", errors="replace")) if line]


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


LAUNCHERS = ("torchrun", "accelerate", "deepspeed")


def group_members(pgid: int) -> Optional[List[int]]:
    """Pids in process group `pgid` (from /proc), or None where /proc cannot tell."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    found = []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and int(fields[2]) == pgid:
            found.append(int(name))
    return found


def signal_workers(leader: int, signum: int, spare_leader: bool) -> None:
    """A stop reaches the training processes. Under torchrun/accelerate/deepspeed the launcher itself is spared:
    on SIGTERM it kills its workers after its own short timeout (torchrun: 30 s), cutting the grace period in
    which they save a checkpoint; left alone it waits for them and exits with their status."""
    members = group_members(leader) if spare_leader else None
    if members is None or members == [leader] or not members:
        try:
            os.killpg(leader, signum)
        except ProcessLookupError:
            pass
        return
    for pid in members:
        if pid != leader:
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass


def run_captured(argv: List[str], output_log: str, *, cwd: Optional[str] = None, env: Optional[Dict[str, str]] = None,
                 on_line: Optional[Callable[[str], None]] = None, redactor: Optional[Redactor] = None,
                 grace_s: float = 120.0, idle_flush_s: float = 0.5,
                 on_start: Optional[Callable[[int], None]] = None) -> CaptureResult:
    redactor = redactor if redactor is not None else Redactor([])
    spare_leader = os.path.basename(argv[0]) in LAUNCHERS if argv else False
    splitter = _Splitter(redactor)
    started = time.time()
    state: Dict[str, Any] = {"signalled": None, "deadline": None, "killed": False, "proc": None}

    def forward(signum: int, _frame: object) -> None:
        if state["signalled"] is None:
            state["signalled"] = signum
            state["deadline"] = time.time() + grace_s
        if state["proc"] is not None:
            signal_workers(state["proc"].pid, signum, spare_leader)

    # Handlers first: a signal arriving while the child starts must still reach it.
    previous = {}
    in_main = threading.current_thread() is threading.main_thread()
    if in_main:
        for s in (signal.SIGTERM, signal.SIGINT):
            previous[s] = signal.signal(s, forward)
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
    except BaseException:
        for s, h in previous.items():
            signal.signal(s, h)
        raise
    state["proc"] = proc
    if state["signalled"] is not None:
        forward(state["signalled"], None)
    if on_start:
        on_start(proc.pid)

    lines = _Lines()

    def write(data: bytes, log) -> None:
        if data:
            log.write(redactor.bytes(data))
            log.flush()

    # Scanning (signatures, printed metrics) runs in its own thread behind a bounded backlog: a
    # chatty script must never wait on our regexes, so when the backlog is full lines are
    # skipped for scanning (never for the log).
    # Each read's lines go over as one item (a thread hand-off per line woke the scanner as often as the child
    # wrote); at most QUEUED_LINES lines wait.
    pending: "queue.Queue[Optional[List[str]]]" = queue.Queue()
    queued = [0]
    queued_lock = threading.Lock()
    skipped = [0]

    def scan(data: bytes, final: bool = False) -> None:
        if on_line is None:
            return
        got = lines.push(data, final)
        if not got:
            return
        with queued_lock:
            room = QUEUED_LINES - queued[0]
            if room < len(got):
                skipped[0] += len(got) - max(room, 0)
                got = got[:max(room, 0)]
            queued[0] += len(got)
        if got:
            pending.put(got)

    def consume() -> None:
        while True:
            batch = pending.get()
            if batch is None:
                return
            for line in batch:
                try:
                    on_line(redactor.text(line))  # type: ignore[misc]
                except Exception:  # a scanner bug must never stop the log
                    pass
            with queued_lock:
                queued[0] -= len(batch)

    scanner = threading.Thread(target=consume, name="rft-log-scan", daemon=True)
    scanner.start()

    def pump() -> None:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        with open(output_log, "ab") as log:
            while True:
                ready, _, _ = select.select([fd], [], [], idle_flush_s)
                if not ready:
                    # Quiet child: let a partial line (a prompt, a tqdm bar) reach the log panel.
                    write(splitter.flush_partial(), log)
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    write(splitter.push(b"", final=True), log)
                    scan(b"", final=True)
                    return
                write(splitter.push(chunk), log)
                scan(chunk)
                if len(chunk) < BATCH_BELOW_BYTES:
                    # A trickle (a loss line a step, a progress bar): gather it for a moment instead of waking
                    # on every write, each wake-up a switch away from the training process on its core. The pipe
                    # holds 64 KiB meanwhile; a read that brings more than a trickle reads on at once.
                    time.sleep(BATCH_S)

    reader = threading.Thread(target=pump, name="rft-log-pump", daemon=True)
    reader.start()
    try:
        while True:
            try:
                rc = proc.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                pass
            if state["deadline"] is not None and time.time() > state["deadline"] and not state["killed"]:
                state["killed"] = True
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if state["signalled"] is not None:
            # A launcher (accelerate's simple launcher) may die on the signal while its workers are
            # still writing their checkpoint: wait for the whole group within the grace period.
            while _group_alive(proc.pid):
                if time.time() > (state["deadline"] or 0) and not state["killed"]:
                    state["killed"] = True
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        break
                time.sleep(0.2)
        reader.join(10)
        pending.put(None)
        scanner.join(30)
    finally:
        if in_main:
            for s, h in previous.items():
                signal.signal(s, h)
    return CaptureResult(rc, state["signalled"], time.time() - started, state["killed"], skipped[0])
