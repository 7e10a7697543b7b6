"""Datasets named by URI (data.train / data.eval as s3://bucket/key, gs://bucket/key, hf://datasets/org/name) are
staged on the host, never through the laptop: the size is read first (one `staging` event with bytes_total, so
the person sees what is coming before training starts), then the host's own tools copy it, with `staging`
events carrying the bytes landed so far.

Staged data goes to a folder shared by the host's runs (RFT_DATA_DIR, else ~/.remote-finetune/data), under the
URI's own path, so a second run re-uses it: `aws s3 sync` and gcs.py's get-dir (Google's client library, which
reads ADC and the VM's metadata token) fetch only what changed, and
a persistent volume mounted there keeps it across instances. <run dir>/staged.json maps each URI to its local
path for the trainer. Credentials come from the run's env file (AWS_*, GOOGLE_APPLICATION_CREDENTIALS, HF_TOKEN);
AWS_ENDPOINT_URL and HF_ENDPOINT are honoured by the tools themselves.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import gcs
from .run_folder import STAGED

SCHEMES = ("s3://", "gs://", "hf://")
Emit = Callable[..., Any]
Which = Callable[[str], Optional[str]]


def is_remote(ref: Any) -> bool:
    return isinstance(ref, str) and ref.startswith(SCHEMES)


def data_root(run_dir: str, env: Dict[str, str]) -> str:
    return env.get("RFT_DATA_DIR") or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(run_dir))), "data")


def local_dir_for(uri: str, root: str) -> str:
    """<root>/<scheme>/<bucket>/<path>, every part made safe for a folder name (no '..', no absolute parts)."""
    scheme, rest = uri.split("://", 1)
    parts = [re.sub(r"[^A-Za-z0-9._@=-]", "_", p) for p in rest.strip("/").split("/") if p not in ("", ".", "..")]
    return os.path.join(root, scheme, *parts)


def hf_repo(uri: str) -> Tuple[str, Optional[str]]:
    """hf://datasets/org/name[@revision] (the huggingface_hub fsspec spelling) or hf://org/name → (repo id, revision)."""
    rest = uri[len("hf://"):].strip("/")
    if rest.startswith("datasets/"):
        rest = rest[len("datasets/"):]
    rev = None
    if "@" in rest:
        rest, rev = rest.split("@", 1)
    parts = rest.split("/")
    if len(parts) != 2 or not all(parts):
        raise StagingError("%s: an hf:// dataset is hf://datasets/<org>/<name>" % uri)
    return "/".join(parts), rev or None


class StagingError(Exception):
    pass


# ---- size before copying -----------------------------------------------------------------------------

def parse_s3_listing(text: str, uri: str) -> Tuple[int, int, bool]:
    """`aws s3 ls --recursive --summarize` output → (objects, bytes, whether the URI is exactly one object)."""
    key = uri[len("s3://"):].split("/", 1)[1] if "/" in uri[len("s3://"):] else ""
    objects = size = 0
    exact = False
    for line in text.splitlines():
        m = re.match(r"^\s*Total Objects:\s*(\d+)", line)
        if m:
            objects = int(m.group(1))
            continue
        m = re.match(r"^\s*Total Size:\s*(\d+)", line)
        if m:
            size = int(m.group(1))
            continue
        m = re.match(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+\d+\s+(.*)$", line)
        if m and m.group(1) == key:
            exact = True
    return objects, size, exact and objects == 1


def parse_du(text: str) -> int:
    """`gcloud storage du -s` / `gsutil du -s`: '<bytes>  <url>' lines."""
    total = 0
    for line in text.splitlines():
        m = re.match(r"^\s*(\d+)\s+\S", line)
        if m:
            total += int(m.group(1))
    return total


def _run(argv: List[str], env: Dict[str, str], timeout: float = 600, quiet_fail_ok: bool = False) -> str:
    """stdout of the tool; `quiet_fail_ok`: an exit without a word on stderr is an answer (`aws s3 ls` of nothing exits 1)."""
    try:
        r = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise StagingError("%s failed: %s" % (argv[0], e))
    if r.returncode != 0 and not (quiet_fail_ok and not r.stderr.strip()):
        tail = r.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise StagingError("%s exited %d: %s" % (" ".join(argv[:3]), r.returncode, " | ".join(tail)))
    return r.stdout.decode("utf-8", "replace")


def gcs_tool(which: Which) -> Optional[str]:
    return "gcloud" if which("gcloud") else "gsutil" if which("gsutil") else None


def plan(uri: str, root: str, env: Dict[str, str], which: Which) -> Dict[str, Any]:
    """{'bytes', 'objects', 'argv' (None for hf), 'local' (the path the trainer loads), 'dir' (where bytes land)}."""
    dest = local_dir_for(uri, root)
    if uri.startswith("s3://"):
        if not which("aws"):
            raise StagingError("the aws CLI is not installed on the host (pip install awscli, or use a Deep Learning AMI)")
        objects, size, single = parse_s3_listing(_run(["aws", "s3", "ls", "--recursive", "--summarize", uri], env, quiet_fail_ok=True), uri)
        if objects == 0:
            raise StagingError("%s holds no objects (or the credentials cannot list it)" % uri)
        if single:
            parent = os.path.dirname(dest)
            return {"bytes": size, "objects": 1, "dir": parent, "local": dest,
                    "argv": ["aws", "s3", "cp", "--only-show-errors", "--no-progress", uri, dest]}
        return {"bytes": size, "objects": objects, "dir": dest, "local": dest,
                "argv": ["aws", "s3", "sync", "--only-show-errors", "--no-progress", uri.rstrip("/") + "/", dest]}
    if uri.startswith("gs://") and gcs.available():
        # Google's client library reads ADC and the VM's metadata token; the gcloud CLI reads neither.
        info = json.loads(_run(gcs.command("stat", uri), env) or "{}")
        if not info.get("objects"):
            raise StagingError("%s holds no objects (or the credentials cannot list it)" % uri)
        if info.get("single"):
            return {"bytes": info["bytes"], "objects": 1, "dir": os.path.dirname(dest), "local": dest, "argv": gcs.command("get", uri, dest)}
        return {"bytes": info["bytes"], "objects": info["objects"], "dir": dest, "local": dest, "argv": gcs.command("get-dir", uri.rstrip("/"), dest)}
    if uri.startswith("gs://"):
        tool = gcs_tool(which)
        if tool is None:
            raise StagingError("neither gcloud nor gsutil is installed on the host (GCP Deep Learning VM images have both)")
        size = parse_du(_run([tool, "storage", "du", "-s", uri] if tool == "gcloud" else ["gsutil", "du", "-s", uri], env))
        listing = _run([tool, "storage", "ls", uri] if tool == "gcloud" else ["gsutil", "ls", uri], env).split()
        if listing == [uri]:  # one object: ls of an object prints just its URL
            return {"bytes": size, "objects": 1, "dir": os.path.dirname(dest), "local": dest,
                    "argv": [tool, "storage", "cp", uri, dest] if tool == "gcloud" else ["gsutil", "cp", uri, dest]}
        argv = [tool, "storage", "rsync", "--recursive", uri, dest] if tool == "gcloud" else ["gsutil", "-m", "rsync", "-r", uri, dest]
        return {"bytes": size, "objects": len(listing), "dir": dest, "local": dest, "argv": argv}
    repo, rev = hf_repo(uri)
    from huggingface_hub import HfApi  # heavy import, only for hf:// data; honours HF_ENDPOINT
    from .spec import hub_token
    # The run's env file is not this process's environment: HF_ENDPOINT is passed, not read at import time.
    info = HfApi(endpoint=env.get("HF_ENDPOINT") or None).dataset_info(repo, revision=rev, files_metadata=True, token=hub_token(env))
    sizes = [int(getattr(s, "size", 0) or 0) for s in (info.siblings or [])]
    return {"bytes": sum(sizes), "objects": len(sizes), "dir": dest, "local": dest, "argv": None, "repo": repo, "revision": rev}


def _bytes_under(path: str) -> int:
    total = 0
    if os.path.isfile(path):
        return os.path.getsize(path)
    for d, dirs, names in os.walk(path):
        dirs[:] = [x for x in dirs if x != ".cache"]  # huggingface_hub's own bookkeeping in a local_dir
        for n in names:
            try:
                total += os.path.getsize(os.path.join(d, n))
            except OSError:
                pass
    return total


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return ("%.1f %s" % (n, unit)) if unit != "B" else "%d B" % n
        n /= 1000.0
    return "%d B" % n


def stage_one(uri: str, root: str, env: Dict[str, str], emit: Emit, which: Which = shutil.which,
              interval_s: float = 2.0, log: Optional[Callable[[str], None]] = None) -> str:
    """Copies one URI onto the host with progress; returns the local path the trainer loads."""
    if log is None:
        # stderr: the pre-download's stdout is its JSON answer to the bootstrap; stderr reaches output.log.
        def log(line: str) -> None:
            print(line, file=sys.stderr, flush=True)
    p = plan(uri, root, env, which)
    emit("staging", uri=uri, bytes_total=p["bytes"], files_total=p["objects"], bytes_done=0)
    log("[remote-finetune] staging %s: %d object%s, %s, into %s" % (uri, p["objects"], "" if p["objects"] == 1 else "s", _human(p["bytes"]), p["local"]))
    os.makedirs(p["dir"], exist_ok=True)
    before = _bytes_under(p["local"]) if os.path.exists(p["local"]) else 0
    started = time.time()
    done = threading.Event()
    failure: List[str] = []

    def copy() -> None:
        try:
            if p["argv"] is None:
                from huggingface_hub import snapshot_download
                from .spec import hub_token
                snapshot_download(repo_id=p["repo"], repo_type="dataset", revision=p["revision"], local_dir=p["local"], token=hub_token(env),
                                  endpoint=env.get("HF_ENDPOINT") or None)
            else:
                _run(p["argv"], env, timeout=24 * 3600)
        except Exception as e:  # noqa: BLE001 - any tool or hub failure becomes the staging error below
            failure.append(str(e) or type(e).__name__)
        finally:
            done.set()

    t = threading.Thread(target=copy, name="rft-staging", daemon=True)
    t.start()
    while not done.wait(interval_s):
        now = _bytes_under(p["local"])
        emit("staging", uri=uri, bytes_total=p["bytes"], bytes_done=now)
        log("[remote-finetune] staging %s: %s of %s" % (uri, _human(now), _human(p["bytes"])))
    if failure:
        raise StagingError("staging %s failed: %s" % (uri, failure[0]))
    now = _bytes_under(p["local"])
    emit("staging", uri=uri, bytes_total=p["bytes"], bytes_done=now, done=True, seconds=round(time.time() - started, 3))
    log("[remote-finetune] staged %s: %s in %.1f s (%s were already there)" % (uri, _human(now), time.time() - started, _human(before)))
    return p["local"]


def stage_spec_data(spec: Dict[str, Any], run_dir: str, env: Dict[str, str], emit: Emit, which: Which = shutil.which,
                    interval_s: float = 2.0) -> Dict[str, str]:
    """Stages data.train and data.eval when they are URIs; writes <run dir>/staged.json; returns it."""
    from .spec import RunSpec
    root = data_root(run_dir, env)
    staged: Dict[str, str] = {}
    train = RunSpec(spec).data.train
    # data.train may list several sources, each a path or {path, weight, ...}.
    refs = [t.get("path") if isinstance(t, dict) else t for t in (train if isinstance(train, list) else [train])]
    for ref in refs + [RunSpec(spec).data.eval]:
        if is_remote(ref) and ref not in staged:
            staged[ref] = stage_one(ref, root, env, emit, which, interval_s)
    if staged:
        with open(os.path.join(run_dir, STAGED), "w", encoding="utf-8") as f:
            json.dump(staged, f, indent=1)
    return staged


def read_staged(run_dir: str) -> Dict[str, str]:
    try:
        with open(os.path.join(run_dir, STAGED), "r", encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
