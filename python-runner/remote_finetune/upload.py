"""Optional upload of a finished run's adapter (or model) to S3, GCS or the Hugging Face Hub, as the
spec's `outputs.upload` says (s3://bucket/prefix, gs://bucket/prefix, hf://user/repo).

It runs on the host, where the run's env file put the credentials into the environment: the tools read
them from there (AWS_*, GOOGLE_APPLICATION_CREDENTIALS, HF_TOKEN) and no secret is ever on a command line.
gs:// goes through Google's client library (gcs.py), which reads ADC and the VM's metadata token.
The standard CLIs do the work (aws, gcloud storage / gsutil, huggingface-cli): they are on the cloud
images and handle multipart uploads and retries better than anything written here."""

import os
import shutil
import subprocess
from typing import Callable, Dict, List, Optional, Tuple

from . import gcs
from .spec import hub_token


def upload_argv(dest: str, local_dir: str, run_id: str, which: Callable[[str], Optional[str]] = shutil.which) -> Tuple[Optional[List[str]], str]:
    """The command that uploads local_dir to dest, or (None, why) when no tool for it is installed."""
    name = os.path.basename(os.path.normpath(local_dir))
    if dest.startswith("s3://"):
        if not which("aws"):
            return None, "the aws CLI is not installed on the host (pip install awscli, or use a Deep Learning AMI)"
        return ["aws", "s3", "cp", "--recursive", "--only-show-errors", local_dir, "%s/%s/%s" % (dest.rstrip("/"), run_id, name)], ""
    if dest.startswith("gs://"):
        target = "%s/%s/%s" % (dest.rstrip("/"), run_id, name)
        # Google's client library reads ADC and the VM's metadata token; the gcloud CLI reads neither.
        if gcs.available():
            return gcs.command("put-dir", local_dir, target), ""
        if which("gcloud"):
            return ["gcloud", "storage", "cp", "--recursive", local_dir, target], ""
        if which("gsutil"):
            return ["gsutil", "-m", "cp", "-r", local_dir, target], ""
        return None, "neither gcloud nor gsutil is installed on the host (GCP Deep Learning VM images have both)"
    if dest.startswith("hf://"):
        repo = dest[len("hf://"):].strip("/")
        if not repo or repo.count("/") != 1:
            return None, "hf:// needs user/repo, e.g. hf://me/my-adapter"
        if not which("huggingface-cli"):
            return None, "huggingface-cli is not installed on the host (pip install huggingface_hub)"
        return ["huggingface-cli", "upload", repo, local_dir, ".", "--commit-message", "Remote Fine-Tune run %s" % run_id], ""
    return None, "outputs.upload must start with s3://, gs:// or hf://"


def upload_outputs(dest: str, local_dir: str, run_id: str, env: Dict[str, str], emit: Callable[..., None],
                   timeout_s: float = 3600.0) -> bool:
    """Uploads and reports as events; a failed upload is a warning, never a failed run (the adapter is
    still on the host and is downloaded by the extension)."""
    argv, why = upload_argv(dest, local_dir, run_id, lambda t: shutil.which(t, path=env.get("PATH")))
    if argv is None:
        emit("warning", code="upload-skipped", message="upload to %s skipped: %s" % (dest, why))
        return False
    if dest.startswith("hf://") and not hub_token(env):
        emit("warning", code="upload-skipped", message="upload to %s skipped: no HF_TOKEN in the run's env file or secret store" % dest)
        return False
    try:
        r = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as e:
        emit("warning", code="upload-failed", message="upload to %s failed: %s" % (dest, e))
        return False
    if r.returncode != 0:
        tail = r.stdout.decode("utf-8", "replace").strip().splitlines()[-3:]
        emit("warning", code="upload-failed", message="upload to %s failed (exit %d): %s" % (dest, r.returncode, " | ".join(tail)))
        return False
    emit("warning", code="uploaded", message="uploaded %s to %s" % (os.path.basename(os.path.normpath(local_dir)), dest))
    return True
