"""`python -m remote_finetune run`: what the extension's detached wrapper starts.

Reads spec.json and the 0600 env file from the run dir, starts the GPU sampler and (once per
host) the watchdog, runs the built-in trainer or the user's command under the spec's launcher
with output.log capture, turns known failures and printed metrics into events, and always ends
events.jsonl with one `finished` event.
"""

import os
import random
import signal
import subprocess
import string
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional

from . import control_env, control_key, envfile, gpuqueue, launchers, notify, spot_notice, stall, tracking
from .budget import start_watch as start_budget_watch
from .measured import collect as collect_measured
from .checkpoint_restore import restore_latest
from .checkpoint_upload import CheckpointUploader
from .events import EventWriter
from .gpu import GpuSampler
from .hfmetrics import TrainerOutputParser
from .logcapture import run_captured
from .signatures import SignatureScanner
from .outputs import CheckpointWatcher, find_adapter, outputs_root
from .run_folder import CALLBACK_MARKER, ENV, EVENTS, OUTPUT_LOG, PIP_FREEZE, RUNNER_PID, SPEC, TRAIN_PGID, WANDB_RUN_ID
from .spec import get, hub_token, load_spec, mode_of, RunSpec
from .trainer_plan import checkpoint_dir, find_resume_checkpoint

RUNNER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def wandb_settings(spec: Dict[str, Any], env: Dict[str, str], run_dir: str) -> Dict[str, str]:
    """W&B environment for the child, when a key is present and the spec does not turn W&B off.

    The run id is chosen here (and kept in the run dir, so a resumed run continues the same W&B
    run) because the extension must be told it in the `started` event before the child starts.
    """
    if not env.get("WANDB_API_KEY") or (spec.get("wandb") or {}).get("enabled") is False:
        return {}
    id_file = os.path.join(run_dir, WANDB_RUN_ID)
    try:
        with open(id_file, "r", encoding="utf-8") as f:
            run_id = f.read().strip()
    except OSError:
        run_id = ""
    if not run_id:
        run_id = "".join(random.choice(string.ascii_lowercase + string.digits) for _ in range(8))
        with open(id_file, "w", encoding="utf-8") as f:
            f.write(run_id + "\n")
    out = {"WANDB_RUN_ID": run_id, "WANDB_RESUME": "allow"}
    for key, var in (("wandb.project", "WANDB_PROJECT"), ("wandb.entity", "WANDB_ENTITY")):
        v = get(spec, key)
        if v and var not in env:
            out[var] = str(v)
    name = RunSpec(spec).wandb.run_name or spec.get("name")
    if name and "WANDB_NAME" not in env:
        out["WANDB_NAME"] = str(name)
    return out


def wandb_url(env: Dict[str, str]) -> Optional[str]:
    if env.get("WANDB_ENTITY") and env.get("WANDB_PROJECT") and env.get("WANDB_RUN_ID"):
        return "https://wandb.ai/%s/%s/runs/%s" % (env["WANDB_ENTITY"], env["WANDB_PROJECT"], env["WANDB_RUN_ID"])
    return None


def child_environment(base: Dict[str, str], file_env: Dict[str, str], run_dir: str, python: str) -> Dict[str, str]:
    env = dict(base)
    # Where the end-of-run notification goes is the runner's business, not the training script's.
    env.update({k: v for k, v in file_env.items() if k not in notify.NAMES})
    token = hub_token(env)
    if token and not env.get("HF_TOKEN"):
        env["HF_TOKEN"] = token  # HUGGINGFACE_TOKEN (the seeds' name) reaches transformers, datasets and the hub
    env["PYTHONPATH"] = RUNNER_DIR + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"  # lines reach output.log as they are printed, not in 8 KiB blocks
    env["RFT_RUN_DIR"] = run_dir
    env["RFT_EVENTS_FILE"] = os.path.join(run_dir, EVENTS)
    # `python` in the user's command means the interpreter the bootstrap chose.
    bindir = os.path.dirname(python)
    if os.path.isabs(python) and bindir:
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    return env


def record_environment(python: str, run_dir: str, env: Dict[str, str], emit: Callable[..., Any]) -> None:
    """pip freeze of the training interpreter, kept with the run: what exactly trained this adapter."""
    try:
        r = subprocess.run([python, "-m", "pip", "freeze", "--all", "--disable-pip-version-check"], env=env, cwd=run_dir,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        emit("warning", code="pip-freeze", message="could not record the environment (pip freeze): %s" % e)
        return
    if r.returncode != 0:
        emit("warning", code="pip-freeze", message="could not record the environment: pip freeze exited %d" % r.returncode)
        return
    with open(os.path.join(run_dir, PIP_FREEZE), "wb") as f:
        f.write(r.stdout)


def _write_train_pgid(run_dir: str, pid: int) -> None:
    """The training process leads its own process group (logcapture starts it in a new session, so a stop
    reaches the workers, not the launcher, first). A stop that must SIGKILL this runner after its grace period
    kills that group too (src/core/ssh/detachedJob.ts stopRun): otherwise a launcher still waiting for its workers, a
    torchrun whose peer machine died, would outlive the run."""
    try:
        with open(os.path.join(run_dir, TRAIN_PGID), "w", encoding="utf-8") as f:
            f.write("%d\n" % pid)
    except OSError:
        pass


def _relative(path: str, workdir: str) -> str:
    r = os.path.relpath(path, workdir)
    return path if r.startswith("..") else r


def run(run_dir: str, workdir: Optional[str] = None, python: Optional[str] = None, *, sample_gpu: bool = True,
        gpu_interval_ms: int = 2000, grace_s: float = 120.0, start_watchdog: Optional[Callable[[Dict[str, Any]], None]] = None) -> int:
    run_dir = os.path.abspath(run_dir)
    workdir = os.path.abspath(workdir or os.getcwd())
    python = python or sys.executable
    started_at = time.time()
    # A stop that arrives before the training process exists still ends with a `finished` event.
    early: Dict[str, int] = {}
    if threading.current_thread() is threading.main_thread():
        for s in (signal.SIGTERM, signal.SIGINT):
            signal.signal(s, lambda signum, _f: early.setdefault("sig", signum))
    # The watchdog counts a run as alive by this file too, whatever the wrapper records.
    pid_file = os.path.join(run_dir, RUNNER_PID)
    with open(pid_file, "w", encoding="utf-8") as f:
        f.write("%d\n" % os.getpid())
    try:
        return _run(run_dir, workdir, python, started_at, early, sample_gpu, gpu_interval_ms, grace_s, start_watchdog)
    finally:
        try:
            os.unlink(pid_file)
        except OSError:
            pass


class _NotifyingEvents(EventWriter):
    """Sends the end-of-run notification (notify.py) just before any `finished` event is written."""

    def __init__(self, path: str, redact: Callable[[str], str], run_dir: str, file_env: Dict[str, str], mac_key: Optional[bytes] = None) -> None:
        super().__init__(path, redact=redact, mac_key=mac_key)
        self._run_dir = run_dir
        self._file_env = file_env

    def emit(self, type_: str, **fields: Any) -> Dict[str, Any]:
        if type_ == "finished" and notify.targets(self._file_env):
            spec, _ = load_spec(os.path.join(self._run_dir, SPEC))
            name = spec.get("name") if isinstance(spec, dict) and isinstance(spec.get("name"), str) else None
            notify.send_finished(self._run_dir, self._file_env, name, fields,
                                 lambda m: super(_NotifyingEvents, self).emit("warning", code="notify", message=m))
        return super().emit(type_, **fields)


# pip freeze's own limit is 120 s; a run that ends sooner waits for the record (a short run's file is complete).
FREEZE_JOIN_S = 125.0

# After a spot notice the instance has two minutes (EC2) at most; otherwise a final checkpoint may be large.
UPLOAD_DRAIN_AFTER_NOTICE_S = 60.0
UPLOAD_DRAIN_S = 1800.0


def _start_checkpoint_safety(run_dir: str, workdir: str, spec: Dict[str, Any], env: Dict[str, str], events: EventWriter,
                             started_at: float) -> Any:
    """Checkpoints uploaded as they are written (outputs.checkpoints), and on a spot instance the cloud's
    reclaim notice turned into a stop that saves a checkpoint (SIGTERM to this runner: the trainer gets its
    grace period). Returns (uploader, its checkpoint watcher, the notice watcher), each None when unused."""
    uploader = upload_watch = notice = None
    dest = RunSpec(spec).outputs.checkpoints
    if isinstance(dest, str) and dest:
        uploader = CheckpointUploader(dest, os.path.basename(run_dir), env, events.emit, lambda p: _relative(p, workdir))
        up = uploader
        upload_watch = CheckpointWatcher(outputs_root(spec, workdir)[1], started_at, lambda _t, **kw: up.submit(kw["step"], kw["path"]),
                                         lambda p: p, interval_s=2.0).start()
    source = spot_notice.notice_source(RunSpec(spec).target.provider, env) if RunSpec(spec).target.spot is True else None
    if source is not None:
        notice = spot_notice.NoticeWatcher(source, events.emit, lambda: os.kill(os.getpid(), signal.SIGTERM),
                                           interval_s=spot_notice.interval_s()).start()
    return uploader, upload_watch, notice


def _restore_checkpoint(run_dir: str, workdir: str, spec: Dict[str, Any], env: Dict[str, str], events: EventWriter) -> None:
    """A run started again under its id on a new instance (the extension's relaunch after a spot reclaim)
    resumes from the newest uploaded checkpoint: fetched into this run's checkpoint folder, where the built-in
    trainer's resume looks, and named to an own script in RFT_RESUME_CHECKPOINT."""
    dest = RunSpec(spec).outputs.checkpoints
    ckpt_dir = checkpoint_dir(outputs_root(spec, workdir)[1], os.path.basename(run_dir))
    # The local disk first (a host restarted by itself, boot_resume.py, still holds them), then the bucket.
    local = find_resume_checkpoint(ckpt_dir)
    if not local and isinstance(dest, str) and dest:
        local = restore_latest(dest, os.path.basename(run_dir), ckpt_dir, env, events.emit)
    if local:
        env["RFT_RESUME_CHECKPOINT"] = local


def _stopped_by(stall_stop: bool, budget_stop: bool, spot_notice_seen: bool) -> str:
    """The word for a run ended by a signal: what sent it, when this runner sent it itself; else interrupted (the
    extension's Stop is told apart by the extension, which knows it asked)."""
    if stall_stop:
        return "stalled"
    if budget_stop:
        return "budget-stopped"
    return "preempted" if spot_notice_seen else "interrupted"


def _take_gpus(run_dir: str, spec: Dict[str, Any], file_env: Dict[str, str], env: Dict[str, str], events: EventWriter,
               early: Dict[str, int]) -> Any:
    """Waits in the host's queue (gpuqueue.py) for this run's GPUs and points CUDA_VISIBLE_DEVICES at them.
    Returns the held slots, None where the host has no GPU to share, or False when stopped while waiting."""
    indices = gpuqueue.gpu_indices()
    if not indices:
        return None
    pinned = gpuqueue.pinned_devices(file_env)
    if pinned is not None:
        candidates = [i for i in pinned if i in indices] or pinned
        want = len(candidates)
    else:
        candidates = indices
        want = gpuqueue.gpus_wanted(spec)
        if want > len(indices):
            events.emit("warning", code="gpu-count", message="the run asks for %d GPUs and this host has %d; it takes all of them" % (want, len(indices)))
            want = len(indices)
    root = os.path.dirname(os.path.dirname(run_dir))
    slots = gpuqueue.HostQueue(root, os.path.basename(run_dir)).acquire(candidates, want, events.emit, lambda: "sig" in early)
    if slots is None:
        return False
    if pinned is None:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in slots.indices)
    return slots


def _run(run_dir: str, workdir: str, python: str, started_at: float, early: Dict[str, int], sample_gpu: bool,
         gpu_interval_ms: int, grace_s: float, start_watchdog: Optional[Callable[[Dict[str, Any]], None]]) -> int:
    # Taken (and its file removed) before any child exists: only this process signs the events the extension acts on.
    key = control_key.take_key(run_dir)
    file_env, env_problems = envfile.read_env_file(os.path.join(run_dir, ENV))
    file_env, refused = control_env.split_env_file(file_env)
    control_env.unset_refused(os.environ, refused)
    secrets = envfile.secret_items(file_env) + envfile.secret_items({k: os.environ[k] for k in envfile.ALWAYS_SECRET if k in os.environ})
    redactor = envfile.Redactor(secrets)
    events = _NotifyingEvents(os.path.join(run_dir, EVENTS), redactor.text, run_dir, file_env, key)
    for p in env_problems:
        events.emit("warning", message=p, code="env-file")
    if refused:
        events.emit("warning", message=control_env.refusal_message(refused), code="env-refused")

    spec, errs = load_spec(os.path.join(run_dir, SPEC))
    if spec is None:
        for e in errs:
            events.emit("error", message="spec.json: " + e)
        events.emit("finished", status="failed", exit_code=2, runtime_s=time.time() - started_at)
        return 2

    mode = mode_of(spec)
    env = child_environment(dict(os.environ), file_env, run_dir, python)
    control_env.set_safe_path(env, own_script=mode == "own-script", runner_dir=RUNNER_DIR)
    env.update(wandb_settings(spec, env, run_dir))
    env.update(tracking.tracking_settings(spec, env, run_dir))
    if start_watchdog is not None:
        start_watchdog(spec)

    try:
        if mode == "own-script":
            argv = launchers.own_script_argv(spec, python, workdir)
        else:
            argv = launchers.builtin_argv(spec, run_dir, python, workdir)
    except launchers.LaunchError as e:
        events.emit("error", message=str(e))
        events.emit("finished", status="failed", exit_code=2, runtime_s=time.time() - started_at)
        return 2

    slots = _take_gpus(run_dir, spec, file_env, env, events, early)
    if slots is False:
        events.emit("finished", status="stopped", exit_code=128 + early.get("sig", signal.SIGTERM), runtime_s=round(time.time() - started_at, 3))
        return 128 + early.get("sig", signal.SIGTERM)

    if mode == "own-script":
        # The built-in trainer's callback reports `started` with parameter counts; for a user's
        # script this is all we know.
        events.emit("started", run_id=os.path.basename(run_dir), model=str(RunSpec(spec).model.id or spec.get("name") or "own script"),
                    method="own-script", world_size=int(RunSpec(spec).launcher.num_processes),
                    wandb_run_id=env.get("WANDB_RUN_ID"), wandb_url=wandb_url(env))

    # pip freeze takes half a second or more (pip's own imports); the training process does not wait for it.
    freeze = threading.Thread(target=record_environment, args=(python, run_dir, dict(env), events.emit), name="rft-pip-freeze", daemon=True)
    freeze.start()
    _restore_checkpoint(run_dir, workdir, spec, env, events)
    scanner = SignatureScanner()
    parser = TrainerOutputParser() if mode == "own-script" else None
    errors_reported: List[str] = []
    marker = os.path.join(run_dir, CALLBACK_MARKER)

    def on_line(line: str) -> None:
        sig = scanner.feed(line)
        if sig is not None and sig.severity == "warning":
            events.emit("warning", message=line.strip()[:2000], code=sig.id)
        elif sig is not None:
            errors_reported.append(sig.id)
            events.emit("error", message=line.strip()[:2000], signature=sig.id, hint=sig.hint)
        if parser is not None and not os.path.exists(marker):
            got = parser.feed(line)
            if got is not None:
                events.emit(got[0], **got[1])

    if "sig" in early:
        events.emit("finished", status="interrupted", exit_code=128 + early["sig"], runtime_s=round(time.time() - started_at, 3))
        return 128 + early["sig"]

    sampler = GpuSampler(run_dir, events.emit, interval_ms=gpu_interval_ms) if sample_gpu else None
    if sampler:
        sampler.start()
    uploader, upload_watch, notice = _start_checkpoint_safety(run_dir, workdir, spec, env, events, started_at)
    budget_watch = start_budget_watch(run_dir, spec, file_env, events.emit, started_at)
    train_pid: Dict[str, int] = {}
    stall_watch = stall.start_watch(run_dir, spec, file_env, events.emit, lambda: train_pid.get("pid"),
                                    lambda: os.kill(os.getpid(), signal.SIGTERM))

    def on_start(pid: int) -> None:
        train_pid["pid"] = pid
        _write_train_pgid(run_dir, pid)

    watcher = None
    if mode == "own-script":
        # An own script's checkpoints are found on disk, unless it added our callback (which reports them itself).
        watcher = CheckpointWatcher(outputs_root(spec, workdir)[1], started_at, events.emit, lambda p: _relative(p, workdir),
                                    active=lambda: not os.path.exists(marker)).start()
    try:
        res = run_captured(argv, os.path.join(run_dir, OUTPUT_LOG), cwd=workdir, env=env, on_line=on_line,
                           redactor=redactor, grace_s=grace_s, on_start=on_start)
    except OSError as e:
        events.emit("error", message="could not start %s: %s" % (argv[0], e.strerror))
        events.emit("finished", status="failed", exit_code=127, runtime_s=time.time() - started_at)
        return 127
    finally:
        if sampler:
            sampler.stop()
        if watcher:
            watcher.stop()
        if notice:
            notice.stop()
        if budget_watch:
            budget_watch.stop()
        stall_watch.stop()
        if upload_watch:
            upload_watch.stop()  # its last scan submits the checkpoint saved on the way out
        freeze.join(FREEZE_JOIN_S)
        if uploader and not uploader.drain(UPLOAD_DRAIN_AFTER_NOTICE_S if notice and notice.noticed else UPLOAD_DRAIN_S):
            events.emit("warning", code="checkpoint-upload", message="the last checkpoint upload did not finish before the run ended")

    if res.lines_not_scanned:
        events.emit("warning", code="scan-skipped",
                    message="%d output lines came faster than they could be checked for known failures; they are in output.log but were not scanned" % res.lines_not_scanned)
    rc = res.returncode
    exit_code = rc if rc >= 0 else 128 - rc  # as a shell reports a signal death
    if res.signalled is not None:
        status = _stopped_by(stall_watch.stopped, bool(budget_watch and budget_watch.stopped), bool(notice and notice.noticed))
    elif rc == 0:
        status = "completed"
    else:
        status = "failed"
        if rc in (-9, 137) and "oom-killer" not in errors_reported and not res.killed_by_us:
            sig = next(s for s in scanner.signatures if s.id == "oom-killer")
            events.emit("error", message="the training process was killed (SIGKILL), most likely by the kernel's OOM killer",
                        signature=sig.id, hint=sig.hint)
        elif not errors_reported:
            events.emit("error", message="the training process exited with code %d; see output.log" % exit_code)
    fields: Dict[str, Any] = {"status": status, "exit_code": exit_code, "runtime_s": round(time.time() - started_at, 3)}
    adapter = find_adapter(spec, workdir, started_at, os.path.basename(run_dir))
    if adapter:
        fields["adapter_path"] = adapter
        dest = RunSpec(spec).outputs.upload
        if status == "completed" and isinstance(dest, str) and dest:
            from .upload import upload_outputs
            upload_outputs(dest, adapter if os.path.isabs(adapter) else os.path.join(workdir, adapter),
                           os.path.basename(run_dir), env, events.emit)
    measured = collect_measured(run_dir, started_at)
    if measured:
        fields["measured"] = measured
    events.emit("finished", **fields)
    return exit_code
