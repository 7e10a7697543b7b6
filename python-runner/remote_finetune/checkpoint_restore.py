"""The other half of checkpoint_upload.py: a run started again on a new instance (a spot reclaim, the
extension's relaunch under the same run id) fetches the newest checkpoint the store's `latest` names, so
the trainer resumes from it and the step count goes on where the last upload left it.

Where it lands: <outputs.dir>/checkpoints/<run id>/checkpoint-N, the built-in trainer's own checkpoint
folder (trainer_plan.checkpoint_dir), which its resume already searches. An own script is told the path in
RFT_RESUME_CHECKPOINT (HF Trainer's `resume_from_checkpoint` takes it as it is).

The aws CLI for s3://, Google's client library for gs:// (gcs.py: ADC or the VM's metadata token; gcloud or
gsutil only where it is missing), with the credentials from the env file; a
missing `latest` is the first attempt of a run (nothing to restore), any other failure a warning: the run
then starts from step 0 rather than not at all."""

import json
import os
import re
import shutil
import subprocess
from typing import Any, Callable, Dict, List, Optional

from . import gcs

Argv = List[str]
_NAME = re.compile(r"^checkpoint-(\d+)$")


def restore_commands(dest: str, run_id: str, name: Optional[str], local_dir: str,
                     which: Callable[[str], Optional[str]] = shutil.which,
                     gcs_library: Callable[[], bool] = gcs.available) -> Optional[Argv]:
    """Reads `latest` to stdout (name None) or copies checkpoint `name` into local_dir; None without a CLI."""
    base = "%s/%s" % (dest.rstrip("/"), run_id)
    if dest.startswith("s3://") and which("aws"):
        if name is None:
            return ["aws", "s3", "cp", "--only-show-errors", base + "/latest", "-"]
        return ["aws", "s3", "sync", "--only-show-errors", "%s/%s" % (base, name), local_dir]
    if dest.startswith("gs://"):
        if gcs_library():
            return gcs.command("cat", base + "/latest") if name is None else gcs.command("get-dir", "%s/%s" % (base, name), local_dir)
        if which("gcloud"):
            return ["gcloud", "storage", "cat", base + "/latest"] if name is None else \
                ["gcloud", "storage", "rsync", "--recursive", "%s/%s" % (base, name), local_dir]
        if which("gsutil"):
            return ["gsutil", "cat", base + "/latest"] if name is None else ["gsutil", "-m", "rsync", "-r", "%s/%s" % (base, name), local_dir]
    return None


def _missing(text: str) -> bool:
    """The store says there is no such object (aws: 404 / NoSuchKey; gcloud/gsutil: No URLs matched / not found)."""
    t = text.lower()
    return "404" in t or "nosuchkey" in t or "not found" in t or "no urls matched" in t or "does not exist" in t


def restore_latest(dest: str, run_id: str, ckpt_parent: str, env: Dict[str, str], emit: Callable[..., Any],
                   which: Callable[[str], Optional[str]] = shutil.which, timeout_s: float = 3600.0) -> Optional[str]:
    """Downloads the checkpoint `latest` names into ckpt_parent/<name>; returns its path, or None."""
    read = restore_commands(dest, run_id, None, "", which)
    if read is None:
        return None  # checkpoint_upload warns once about the missing CLI; saying it twice helps nobody
    try:
        r = subprocess.run(read, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        emit("warning", code="checkpoint-restore", message="could not read the latest checkpoint (%s); starting from step 0" % e)
        return None
    if r.returncode != 0:
        err = r.stderr.decode("utf-8", "replace").strip()
        if not _missing(err):
            emit("warning", code="checkpoint-restore",
                 message="could not read the latest checkpoint (%s); starting from step 0" % (err.splitlines()[-1:] or [""])[0][:300])
        return None
    try:
        latest = json.loads(r.stdout.decode("utf-8"))
        name, step = str(latest["name"]), int(latest["step"])
    except (ValueError, KeyError, TypeError):
        emit("warning", code="checkpoint-restore", message="the store's `latest` is not {\"step\", \"name\"}; starting from step 0")
        return None
    # The name becomes a local folder: only checkpoint-N, never a path.
    if not _NAME.match(name):
        emit("warning", code="checkpoint-restore", message="the store's `latest` names %r, not a checkpoint-N; starting from step 0" % name[:80])
        return None
    local = os.path.join(ckpt_parent, name)
    os.makedirs(local, exist_ok=True)
    cmd = restore_commands(dest, run_id, name, local, which)
    assert cmd is not None
    try:
        c = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as e:
        emit("warning", code="checkpoint-restore", message="could not download %s (%s); starting from step 0" % (name, e))
        return None
    if c.returncode != 0 or not os.path.isfile(os.path.join(local, "trainer_state.json")):
        tail = c.stdout.decode("utf-8", "replace").strip().splitlines()[-1:] or ["trainer_state.json missing"]
        emit("warning", code="checkpoint-restore", message="could not download %s (%s); starting from step 0" % (name, tail[0][:300]))
        shutil.rmtree(local, ignore_errors=True)  # half a checkpoint must not be resumed from
        return None
    emit("warning", code="checkpoint-restored", message="restored %s (step %d) from %s/%s/%s" % (name, step, dest.rstrip("/"), run_id, name))
    return local
