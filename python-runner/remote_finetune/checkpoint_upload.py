"""Checkpoints copied to object storage while the run trains (the spec's `outputs.checkpoints`), so they
outlive the instance: a spot reclaim or a lost disk costs the steps since the last upload, not the run.

Layout: <dest>/<run id>/checkpoint-N/… and <dest>/<run id>/latest, a small JSON {"step", "name"} written
only after that checkpoint's files are all up (a reader never sees a half-uploaded "latest"). Only the
newest waiting checkpoint is sent: one superseded while another uploaded is skipped.

As upload.py: the aws CLI for s3://, Google's client library for gs:// (gcs.py: ADC or the VM's metadata
token; gcloud/gsutil only where the library is missing), with the credentials the env file put into the
environment; none is ever on a command line. AWS_ENDPOINT_URL is
honoured by the aws CLI itself (S3-compatible stores, and the tests' moto server)."""

import json
import shutil
import subprocess
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import gcs

Argv = List[str]


def _target(dest: str, run_id: str, name: str) -> str:
    return "%s/%s/%s" % (dest.rstrip("/"), run_id, name)


def upload_commands(dest: str, local_dir: str, run_id: str, name: str,
                    which: Callable[[str], Optional[str]] = shutil.which,
                    gcs_library: Callable[[], bool] = gcs.available) -> Tuple[Optional[Tuple[Argv, Argv]], str]:
    """(the folder's sync command, the command that writes `latest` from stdin), or (None, why)."""
    folder, latest = _target(dest, run_id, name), _target(dest, run_id, "latest")
    if dest.startswith("s3://"):
        if not which("aws"):
            return None, "the aws CLI is not installed on the host (pip install awscli, or use a Deep Learning AMI)"
        return (["aws", "s3", "sync", "--only-show-errors", local_dir, folder], ["aws", "s3", "cp", "--only-show-errors", "-", latest]), ""
    if dest.startswith("gs://"):
        # Google's client library reads ADC and the VM's metadata token; the CLIs only where it is missing.
        if gcs_library():
            return (gcs.command("put-dir", local_dir, folder), gcs.command("put", latest)), ""
        if which("gcloud"):
            return (["gcloud", "storage", "rsync", "--recursive", local_dir, folder], ["gcloud", "storage", "cp", "-", latest]), ""
        if which("gsutil"):
            return (["gsutil", "-m", "rsync", "-r", local_dir, folder], ["gsutil", "cp", "-", latest]), ""
        return None, "neither gcloud nor gsutil is installed on the host (GCP Deep Learning VM images have both)"
    return None, "outputs.checkpoints must start with s3:// or gs://"


class CheckpointUploader:
    """Uploads checkpoints in the background, newest first; `checkpoint` events with `uploaded_to` say which
    are safe. Failures are warnings (training goes on); drain() waits for the last one at the end."""

    def __init__(self, dest: str, run_id: str, env: Dict[str, str], emit: Callable[..., Any],
                 relpath: Callable[[str], str], which: Callable[[str], Optional[str]] = shutil.which, timeout_s: float = 3600.0) -> None:
        self.dest, self.run_id, self.env, self.emit, self.relpath = dest, run_id, env, emit, relpath
        self.which, self.timeout_s = which, timeout_s
        self._pending: Optional[Tuple[int, str]] = None
        self._cond = threading.Condition()
        self._busy = False
        self._closed = False
        self._warned = False
        self.uploaded: List[int] = []
        self._thread = threading.Thread(target=self._loop, name="rft-checkpoint-upload", daemon=True)
        self._thread.start()

    def submit(self, step: int, path: str) -> None:
        with self._cond:
            if self._pending is None or step >= self._pending[0]:
                self._pending = (step, path)
            self._cond.notify_all()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._closed:
                    self._cond.wait()
                if self._pending is None:
                    return
                step, path = self._pending
                self._pending = None
                self._busy = True
            try:
                self._upload(step, path)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _run(self, argv: Argv, stdin: Optional[bytes] = None) -> Optional[str]:
        try:
            r = subprocess.run(argv, input=stdin, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=self.timeout_s)
        except (OSError, subprocess.TimeoutExpired) as e:
            return "%s: %s" % (argv[0], e)
        if r.returncode != 0:
            tail = r.stdout.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            return "%s exited %d: %s" % (" ".join(argv[:3]), r.returncode, tail[0][:300])
        return None

    def _upload(self, step: int, path: str) -> None:
        name = path.rstrip("/").rsplit("/", 1)[-1]
        cmds, why = upload_commands(self.dest, path, self.run_id, name, self.which)
        if cmds is None:
            if not self._warned:  # once: every checkpoint would say the same
                self._warned = True
                self.emit("warning", code="checkpoint-upload", message="checkpoints are not uploaded: " + why)
            return
        started = time.time()
        err = self._run(cmds[0]) or self._run(cmds[1], json.dumps({"step": step, "name": name}).encode("utf-8"))
        if err:
            self.emit("warning", code="checkpoint-upload", message="checkpoint %s was not uploaded (%s)" % (name, err))
            return
        self.uploaded.append(step)
        self.emit("checkpoint", step=step, path=self.relpath(path), uploaded_to=_target(self.dest, self.run_id, name),
                  upload_s=round(time.time() - started, 3))

    def drain(self, timeout_s: float) -> bool:
        """Waits until nothing is waiting or uploading (at most timeout_s); True when all went out."""
        end = time.time() + timeout_s
        with self._cond:
            while self._pending is not None or self._busy:
                left = end - time.time()
                if left <= 0:
                    return False
                self._cond.wait(left)
            self._closed = True
            self._cond.notify_all()
        return True
