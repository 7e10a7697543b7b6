"""The host resumes interrupted runs by itself after a restart (`python -m remote_finetune boot-resume`).

A spot instance that EC2 stops and starts again, or any host that reboots, comes back with the run's folder and
checkpoints on its disk and nothing running. On instances the extension launched, the runner installs a boot-time
unit (a systemd service where systemd runs and we may write its units, else an `@reboot` line in the user's
crontab) that calls this command; it needs no client. Each run that was interrupted (its wrapper wrote no
exit_code and neither the wrapper nor the runner lives) is started again in its own folder with the same run id,
through its own wrapper.sh and command.sh, exactly as the extension started it: the runner resumes from the newest
checkpoint (the local disk first, then `outputs.checkpoints`; run.py `_restore_checkpoint`), and the run's files
are appended to, so the extension, reconnecting, reads the whole history from its offsets. A `resumed` event
(reason host-restart, the checkpoint step, the last heartbeat before the interruption) is written first.

The extension's control key does not survive a restart (the runner removes it from disk before any child runs and
keeps it only in memory, control_key.py): the restarted runner's lines are unsigned, so the extension takes that
run's end from the wrapper's exit code, as for a run started by hand.
"""

import os
import shlex
import shutil
import subprocess
import sys
import time
from typing import Callable, List, Optional, Tuple

from .events import EventWriter, read_events
from .run_folder import (BOOT_RESUME_LOG, COMMAND, EVENTS, EXIT_CODE, HEARTBEAT, OUTPUT_LOG, PID, RUNNER_PID, STALE_AT_RESTART,
                         STARTED_AT, WRAPPER)
from .watchdog import pid_alive, read_pid, run_dirs_under

UNIT_NAME = "remote-finetune-resume.service"
CRON_MARK = "# remote-finetune boot-resume"


def was_interrupted(run_dir: str) -> bool:
    """Started by our wrapper, never ended (no exit_code), and nothing of it alive: what a restart leaves."""
    if not os.path.isfile(os.path.join(run_dir, WRAPPER)) or not os.path.isfile(os.path.join(run_dir, COMMAND)):
        return False
    if not os.path.exists(os.path.join(run_dir, STARTED_AT)) or os.path.exists(os.path.join(run_dir, EXIT_CODE)):
        return False
    for name in (PID, RUNNER_PID):
        pid = read_pid(os.path.join(run_dir, name))
        if pid is not None and pid_alive(pid):
            return False
    return not _ended_on_purpose(run_dir)


def _ended_on_purpose(run_dir: str) -> bool:
    """The runner wrote its end, or the idle watchdog stopped the run (its SIGKILL after the grace period leaves no
    exit code) since the run last started: a restart after that must not start it again."""
    ended = False
    for e in read_events(run_dir).events:
        if e.get("type") == "resumed":
            ended = False
        elif e.get("type") == "finished" or (e.get("type") == "warning" and e.get("code") == "watchdog-stop"):
            ended = True
    return ended


def newest_checkpoint_step(run_dir: str) -> Optional[int]:
    """The highest step of the run's `checkpoint` events (what the runner will resume from, or a later one)."""
    steps = [e["step"] for e in read_events(run_dir).events
             if e.get("type") == "checkpoint" and isinstance(e.get("step"), int) and not isinstance(e["step"], bool) and e["step"] >= 0]
    return max(steps) if steps else None


def resume_run(run_dir: str, wait_s: float = 10.0) -> Optional[int]:
    """Writes the `resumed` event and starts the run's wrapper again, detached; returns the new wrapper's pid."""
    try:
        last_alive: Optional[float] = os.stat(os.path.join(run_dir, HEARTBEAT)).st_mtime
    except OSError:
        last_alive = None
    step = newest_checkpoint_step(run_dir)
    fields = {"reason": "host-restart"}
    if step is not None:
        fields["from_step"] = step
    if last_alive is not None:
        fields["interrupted_at"] = last_alive
    EventWriter(os.path.join(run_dir, EVENTS)).emit("resumed", **fields)
    with open(os.path.join(run_dir, OUTPUT_LOG), "ab") as log:
        log.write(("\n[remote-finetune] the host restarted; the run goes on%s\n" % (" from checkpoint-%d" % step if step is not None else "")).encode())
    for name in STALE_AT_RESTART:
        try:
            os.unlink(os.path.join(run_dir, name))
        except OSError:
            pass
    # A session of its own, as the extension's setsid launch gives it: stop signals its process group.
    subprocess.Popen(["/bin/sh", os.path.join(run_dir, WRAPPER)], cwd=run_dir, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    deadline = time.time() + wait_s
    while time.time() < deadline:
        pid = read_pid(os.path.join(run_dir, PID))
        if pid is not None:
            return pid
        time.sleep(0.05)
    return None


def main_boot_resume(root: str, log: Callable[[str], None] = lambda m: None) -> int:
    resumed = 0
    for d in run_dirs_under(root):
        if not was_interrupted(d):
            continue
        pid = resume_run(d)
        log("%s: %s" % (os.path.basename(d), "resumed (wrapper pid %d)" % pid if pid else "started again, but no wrapper pid appeared"))
        resumed += 1
    log("boot-resume: %d run(s) resumed under %s" % (resumed, root))
    return 0


def log_line(root: str, message: str) -> None:
    """One line in <root>/boot-resume.log (no client may be there to see anything else)."""
    try:
        os.makedirs(root, exist_ok=True)
        with open(os.path.join(root, BOOT_RESUME_LOG), "a", encoding="utf-8") as f:
            f.write(time.strftime("%Y-%m-%dT%H:%M:%SZ ", time.gmtime()) + message + "\n")
    except OSError:
        pass


def _command(root: str, python: str, runner_dir: str) -> List[str]:
    return ["/usr/bin/env", "PYTHONPATH=" + runner_dir, python, "-m", "remote_finetune", "boot-resume", "--root", root]


def systemd_unit(root: str, python: str, runner_dir: str, user: str) -> str:
    """A oneshot service after the network is up (outputs.checkpoints may need it), as the run's user."""
    return "\n".join([
        "[Unit]",
        "Description=Remote Fine-Tune: resume runs interrupted by a restart",
        "Wants=network-online.target",
        "After=network-online.target",
        "",
        "[Service]",
        "Type=oneshot",
        "User=%s" % user,
        "WorkingDirectory=/",
        "ExecStart=%s" % " ".join(shlex.quote(a) for a in _command(root, python, runner_dir)),
        "",
        "[Install]",
        "WantedBy=multi-user.target",
        "",
    ])


def cron_line(root: str, python: str, runner_dir: str) -> str:
    log = os.path.join(root, BOOT_RESUME_LOG)
    # cron starts from the user's home with a bare PATH; the command names the interpreter by its full path.
    return "@reboot cd / && %s >> %s 2>&1 %s" % (" ".join(shlex.quote(a) for a in _command(root, python, runner_dir)), shlex.quote(log), CRON_MARK)


def _systemd_usable(systemd_dir: str) -> bool:
    return os.path.isdir("/run/systemd/system") and shutil.which("systemctl") is not None and os.access(systemd_dir, os.W_OK)


def install_boot_unit(root: str, python: str = sys.executable, runner_dir: Optional[str] = None, *,
                      systemd_dir: str = "/etc/systemd/system", crontab: str = "crontab",
                      systemd: Optional[bool] = None) -> Tuple[str, str]:
    """Installs the boot hook once; returns (how: systemd | cron | none, what happened in words). Never raises."""
    runner_dir = runner_dir or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    python = os.path.abspath(python)
    try:
        if _systemd_usable(systemd_dir) if systemd is None else systemd:
            import getpass
            path = os.path.join(systemd_dir, UNIT_NAME)
            text = systemd_unit(root, python, runner_dir, getpass.getuser())
            try:
                with open(path, "r", encoding="utf-8") as f:
                    if f.read() == text:
                        return "systemd", "already installed: %s" % path
            except OSError:
                pass
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            for argv in (["systemctl", "daemon-reload"], ["systemctl", "enable", UNIT_NAME]):
                subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60, check=True)
            return "systemd", "installed %s" % path
        if shutil.which(crontab) is None:
            return "none", "neither systemd (writable units) nor crontab on this host: runs are not resumed after a restart"
        cur = subprocess.run([crontab, "-l"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        lines = cur.stdout.decode("utf-8", "replace").splitlines() if cur.returncode == 0 else []
        want = cron_line(root, python, runner_dir)
        if want in lines:
            return "cron", "already installed"
        lines = [l for l in lines if not l.endswith(CRON_MARK)] + [want]
        subprocess.run([crontab, "-"], input=("\n".join(lines) + "\n").encode("utf-8"), stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=30, check=True)
        return "cron", "installed an @reboot line in the crontab"
    except (OSError, subprocess.SubprocessError) as e:
        return "none", "the boot hook was not installed: %s" % e
