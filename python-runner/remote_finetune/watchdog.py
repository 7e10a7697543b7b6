"""On-host watchdog (autostop, as SkyPilot runs it on the cluster itself).

One per host, under ~/.remote-finetune. Every poll it asks two questions:
- is any run active? A run is active while its process is alive and its output.log or
  events.jsonl changed within the idle window (a live process silent that long is stalled);
- is anybody watching? The extension touches `heartbeat` files (the host-wide
  ~/.remote-finetune/heartbeat or a run's own) while it is attached.
When no run is active and the newest heartbeat is older than the idle window (default 30
minutes), it saves progress (SIGTERM to stalled runs, whose trainer then writes a checkpoint;
SIGKILL after a grace period; a warning event in their events.jsonl; sync), and then powers the
host off only when the extension launched it: a run's launch.json (see launch_record.py), copied
to the root as `launched-instance.json`. Never from a spec's `target.provider`: a cloud spec run
on the user's own SSH host must not arm `shutdown -h now` there. On EC2 the instance is created so
that power-off ends billing (terminate on shutdown); a powered-off GCP VM stays stopped with its disk
billing, and a Lambda instance bills until it is terminated through the API: the extension's orphan
sweep offers those for termination. On a host we did not launch it only stops our runs and exits.
The flag file of older runners (`provisioned`, written from the spec) is not trusted and is removed.
"""

import json
import os
import signal
import subprocess
import sys
import time
from typing import Callable, Dict, List, Optional

from .events import EventWriter
from .launch_record import parse_launch_record, read_launch_record
from .run_folder import (EVENTS, EXIT_CODE, HEARTBEAT, HOST_LAUNCH_RECORD, LEGACY_PROVISIONED_FLAG, OUTPUT_LOG, PID, ROOT_HEARTBEAT, RUNNER_PID,
                         RUNS_DIR, SPEC, WATCHDOG_LOG, WATCHDOG_PID)

DEFAULT_IDLE_MINUTES = 30.0


def poweroff_argv_from(text: Optional[str]) -> Optional[List[str]]:
    """`--poweroff-cmd` / RFT_POWEROFF_CMD: a JSON argv, or the path of one program (no arguments)."""
    if not text:
        return None
    if text.lstrip().startswith("["):
        argv = json.loads(text)
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise ValueError("power-off command: expected a JSON array of strings")
        return argv
    return [text]


def default_poweroff_argv() -> List[str]:
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return ["shutdown", "-h", "now"]
    return ["sudo", "-n", "shutdown", "-h", "now"]


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours counts as gone.
    try:
        with open("/proc/%d/stat" % pid, "r") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def read_pid(path: str) -> Optional[int]:
    """A process id from a run's pid file, or None. The run can write that file: 0, 1 and negative numbers are
    refused, since kill(0) is the watchdog's own group, kill(1) init and kill(-1) every process it may signal."""
    try:
        with open(path, "r", encoding="utf-8") as f:
            pid = int(f.read().strip().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if pid > 1 else None


def _mtime(path: str) -> Optional[float]:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def run_dirs_under(root: str) -> List[str]:
    """The run folders under a runner root (~/.remote-finetune/runs/*)."""
    runs = os.path.join(root, RUNS_DIR)
    try:
        names = sorted(os.listdir(runs))
    except OSError:
        return []
    return [os.path.join(runs, n) for n in names if os.path.isdir(os.path.join(runs, n))]


class Watchdog:
    def __init__(self, root: str, idle_s: float = DEFAULT_IDLE_MINUTES * 60, poweroff_argv: Optional[List[str]] = None,
                 grace_s: float = 120.0, poll_s: float = 30.0, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep, log: Callable[[str], None] = lambda m: None) -> None:
        self.root = root
        self.idle_s = idle_s
        self.poweroff_argv = poweroff_argv or default_poweroff_argv()
        self.grace_s = grace_s
        self.poll_s = poll_s
        self.clock = clock
        self.sleep = sleep
        self.log = log
        self.started_at = clock()

    def run_dirs(self) -> List[str]:
        return run_dirs_under(self.root)

    def run_pid(self, run_dir: str) -> Optional[int]:
        """The live process of a run: the wrapper's `pid`, else the runner's own `runner.pid`."""
        pids = [read_pid(os.path.join(run_dir, name)) for name in (PID, RUNNER_PID)]
        live = [p for p in pids if p is not None and pid_alive(p)]
        return live[0] if live else None

    def run_state(self, run_dir: str) -> str:
        """'active', 'stalled' (alive but silent for the idle window) or 'done'."""
        pid = self.run_pid(run_dir)
        if pid is None or os.path.exists(os.path.join(run_dir, EXIT_CODE)):
            return "done"
        times = [t for t in (_mtime(os.path.join(run_dir, f)) for f in (OUTPUT_LOG, EVENTS, SPEC)) if t is not None]
        last = max(times) if times else self.started_at
        return "active" if self.clock() - last < self.idle_s else "stalled"

    def provisioned(self) -> bool:
        """True only when a launch record of ours says the extension launched this host."""
        try:
            with open(os.path.join(self.root, HOST_LAUNCH_RECORD), "r", encoding="utf-8") as f:
                if parse_launch_record(json.load(f)) is not None:
                    return True
        except (OSError, ValueError):
            pass
        return any(read_launch_record(d) is not None for d in self.run_dirs())

    def root_gone(self) -> bool:
        # A root removed under us (a test's temp HOME, a wiped ~/.remote-finetune) has nothing left to guard.
        return not os.path.isdir(self.root)

    def last_heartbeat(self) -> float:
        times = [self.started_at]
        for p in [os.path.join(self.root, ROOT_HEARTBEAT)] + [os.path.join(d, HEARTBEAT) for d in self.run_dirs()]:
            t = _mtime(p)
            if t is not None:
                times.append(t)
        return max(times)

    def decide(self) -> str:
        """'wait' or 'stop'."""
        states = {d: self.run_state(d) for d in self.run_dirs()}
        if any(s == "active" for s in states.values()):
            return "wait"
        if self.clock() - self.last_heartbeat() < self.idle_s:
            return "wait"
        return "stop"

    def stop_runs(self) -> List[str]:
        """SIGTERM every live run (its trainer saves a checkpoint), SIGKILL after the grace period."""
        stopped = []
        for d in self.run_dirs():
            if self.run_state(d) == "done":
                continue
            pid = self.run_pid(d)
            assert pid is not None
            EventWriter(os.path.join(d, EVENTS)).emit(
                "warning", code="watchdog-stop",
                message="Idle watchdog: no output for %.0f min and the extension is gone; stopping the run (a checkpoint is saved)" % (self.idle_s / 60))
            self._signal(pid, signal.SIGTERM)
            stopped.append(d)
        deadline = self.clock() + self.grace_s
        while stopped and self.clock() < deadline and any(self.run_pid(d) is not None for d in stopped):
            self.sleep(min(1.0, self.grace_s / 10 or 0.01))
        for d in stopped:
            pid = self.run_pid(d)
            if pid is not None:
                self._signal(pid, signal.SIGKILL)
        return stopped

    def _signal(self, pid: int, sig: int) -> None:
        # The run wrapper leads its own process group: reach the launcher's workers too.
        try:
            os.killpg(os.getpgid(pid), sig) if os.getpgid(pid) == pid else os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def act(self) -> str:
        stopped = self.stop_runs()
        if hasattr(os, "sync"):
            os.sync()
        if not self.provisioned():
            self.log("idle: stopped %d run(s); host not provisioned by us, leaving it on" % len(stopped))
            return "stopped"
        self.log("idle: stopped %d run(s); powering off: %s" % (len(stopped), " ".join(self.poweroff_argv)))
        try:
            subprocess.run(self.poweroff_argv, stdin=subprocess.DEVNULL, timeout=120)
        except (OSError, subprocess.SubprocessError) as e:
            self.log("power-off failed: %s" % e)
            return "poweroff-failed"
        return "poweroff"

    def loop(self, max_polls: Optional[int] = None) -> str:
        n = 0
        while max_polls is None or n < max_polls:
            if self.root_gone():
                self.log("root %s is gone; exiting" % self.root)
                return "root-gone"
            if self.decide() == "stop":
                return self.act()
            n += 1
            self.sleep(self.poll_s)
        return "wait"


def already_running(root: str) -> bool:
    pid = read_pid(os.path.join(root, WATCHDOG_PID))
    return pid is not None and pid != os.getpid() and pid_alive(pid)


def ensure_watchdog(root: str, idle_minutes: float, launch: Optional[Dict[str, str]], python: str = sys.executable,
                    extra_args: Optional[List[str]] = None) -> Optional[int]:
    """Starts the host's watchdog detached unless one is alive; returns the new pid, if any.

    `launch` is the run's launch record (None on a host the extension did not launch)."""
    os.makedirs(root, exist_ok=True)
    legacy = os.path.join(root, LEGACY_PROVISIONED_FLAG)
    if os.path.exists(legacy):
        os.unlink(legacy)  # written from a spec by older runners: not evidence that we launched this host
    if launch is not None:
        record = dict(launch, v=1, launched_by="remote-finetune")
        tmp = os.path.join(root, HOST_LAUNCH_RECORD + ".tmp")
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as f:
            json.dump(record, f)
        os.replace(tmp, os.path.join(root, HOST_LAUNCH_RECORD))
    if already_running(root):
        return None
    runner_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = runner_dir
    argv = [python, "-m", "remote_finetune", "watchdog", "--root", root, "--idle-minutes", str(idle_minutes)] + (extra_args or [])
    # From "/": `-m` puts the working folder first on sys.path (Python 3.10, or PYTHONSAFEPATH unset), and the
    # runner's own folder is a run folder the user's script may write into.
    with open(os.path.join(root, WATCHDOG_LOG), "ab") as log:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                             start_new_session=True, close_fds=True, cwd="/")
    return p.pid


def _claim_pidfile(path: str) -> bool:
    """Atomically becomes the host's only watchdog (two runs may start at the same moment).

    The pid is written to a private file first and hard-linked into place, so the pidfile
    never exists empty (an empty one would read as stale and let a second watchdog in)."""
    tmp = "%s.%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("%d\n" % os.getpid())
    try:
        for _ in range(2):
            try:
                os.link(tmp, path)
                return True
            except FileExistsError:
                pid = read_pid(path)
                if pid is not None and pid != os.getpid() and pid_alive(pid):
                    return False
                try:
                    os.unlink(path)  # stale: its watchdog died without cleaning up
                except OSError:
                    pass
        return False
    finally:
        os.unlink(tmp)


def main_watchdog(root: str, idle_minutes: float, poll_s: float, grace_s: float, poweroff_cmd: Optional[str]) -> int:
    os.makedirs(root, exist_ok=True)
    if not _claim_pidfile(os.path.join(root, WATCHDOG_PID)):
        print("watchdog already running", flush=True)
        return 0
    argv = poweroff_argv_from(poweroff_cmd)
    wd = Watchdog(root, idle_s=idle_minutes * 60, poweroff_argv=argv, grace_s=grace_s, poll_s=poll_s,
                  log=lambda m: print(time.strftime("%Y-%m-%dT%H:%M:%SZ ", time.gmtime()) + m, flush=True))
    wd.log("watchdog started: idle %.2f min, provisioned=%s" % (idle_minutes, wd.provisioned()))
    try:
        result = wd.loop()
    finally:
        try:
            os.unlink(os.path.join(root, WATCHDOG_PID))
        except OSError:
            pass
    wd.log("watchdog finished: " + result)
    return 0 if result in ("stopped", "poweroff", "root-gone") else 1
