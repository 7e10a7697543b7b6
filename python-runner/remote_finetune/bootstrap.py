"""Bootstrap on the GPU host: find a Python that already has torch with CUDA, build the run venv
on top of it (--system-site-packages: the image's CUDA torch is reused, never re-downloaded),
install the chosen method's pinned requirements only when their hash changed, and pre-download
the model and dataset into the Hugging Face cache (HF_HOME, HF_TOKEN honoured), turning gated
or missing repositories into a message that says what to do.

Where the images keep their Python:
  Lambda Stack                 /usr/bin/python3 (torch in the system site-packages)
  AWS Deep Learning AMI        /opt/pytorch/bin/python (a venv, the current OSS-driver PyTorch DLAMIs),
                               /opt/conda/envs/<framework env>/bin/python (older conda DLAMIs)
  GCP Deep Learning VM         /opt/conda/bin/python

Which libraries go into the venv is decided by the host's torch: one lock file per torch family
(requirements/locks), never an open range, so a run is reproducible; a torch or CUDA outside every
family is refused with the list of what is supported.
"""

import glob
import hashlib
import json
import os
import re
import subprocess
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

from .run_folder import ENV, EVENTS, SPEC

REQUIREMENTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "requirements")
LOCKS_DIR = os.path.join(REQUIREMENTS_DIR, "locks")
# (lock name, lowest torch (major, minor), highest torch or None). Newest first.
LOCK_FAMILIES = (
    ("hf5-torch2.6plus", (2, 6), None),
    ("hf4-torch2.2to2.5", (2, 2), (2, 5)),
)
# CUDA lines the locked bitsandbytes and the PyTorch wheels of those torch versions are built for (None: CPU).
CUDA_MAJORS = (11, 12, 13)

PROBE = (
    "import json, sys\n"
    "import site\n"
    "info = {'python': list(sys.version_info[:3]), 'executable': sys.executable,\n"
    "        'venv': sys.prefix != getattr(sys, 'base_prefix', sys.prefix), 'site_packages': site.getsitepackages()}\n"
    "try:\n"
    "    import torch\n"
    "    info['torch'] = torch.__version__\n"
    "    info['cuda'] = torch.version.cuda\n"
    "    info['cuda_available'] = bool(torch.cuda.is_available())\n"
    "    info['devices'] = torch.cuda.device_count() if info['cuda_available'] else 0\n"
    "    if info['devices']:\n"
    "        info['capability'] = list(torch.cuda.get_device_capability(0))\n"
    "        info['bf16'] = bool(torch.cuda.is_bf16_supported())\n"
    "    info['cxx11abi'] = bool(getattr(torch._C, '_GLIBCXX_USE_CXX11_ABI', False))\n"
    "except Exception as e:\n"
    "    info['torch'] = None\n"
    "    info['error'] = type(e).__name__\n"
    "try:\n"
    "    import flash_attn\n"
    "    info['flash_attn'] = flash_attn.__version__\n"
    "except Exception:\n"
    "    info['flash_attn'] = None\n"
    "import platform\n"
    "info['machine'] = platform.machine()\n"
    "print('RFT_PROBE ' + json.dumps(info))\n"
)


class BootstrapError(Exception):
    def __init__(self, message: str, hint: str = "", signature: Optional[str] = None) -> None:
        super().__init__(message)
        self.hint = hint
        self.signature = signature


def candidate_pythons(root: str = "/", path_env: Optional[str] = None, override: Optional[str] = None) -> List[Tuple[str, str]]:
    """(path, where it comes from), most specific first, existing files only, no duplicates."""
    def at(p: str) -> str:
        return os.path.join(root, p.lstrip("/"))

    out: List[Tuple[str, str]] = []
    if override:
        out.append((override, "RFT_PYTHON"))
    out.append((at("/usr/bin/python3"), "Lambda Stack / system"))
    out.append((at("/opt/pytorch/bin/python"), "AWS Deep Learning AMI (PyTorch venv)"))
    envs = sorted(glob.glob(at("/opt/conda/envs/*/bin/python")))
    # DLAMI names its PyTorch env "pytorch" (older ones "pytorch_p310" and the like): try those first.
    envs.sort(key=lambda p: (0 if "pytorch" in p.split(os.sep)[-3] else 1, p))
    out += [(p, "AWS Deep Learning AMI conda env %s" % p.split(os.sep)[-3]) for p in envs]
    out.append((at("/opt/conda/bin/python"), "GCP Deep Learning VM conda"))
    for d in (path_env if path_env is not None else os.environ.get("PATH", "")).split(os.pathsep):
        if d:
            out.append((os.path.join(d, "python3"), "PATH"))
    seen, result = set(), []
    for p, origin in out:
        real = interpreter_identity(p)
        if real in seen or not (os.path.isfile(p) and os.access(p, os.X_OK)):
            continue
        seen.add(real)
        result.append((p, origin))
    return result


def interpreter_identity(python: str) -> str:
    """What makes two interpreter paths the same Python environment. A venv's bin/python3 is a symlink to its base
    interpreter, so the real path alone would take a venv holding torch for the system Python without it (seen on a
    GPU image whose PATH leads to /opt/torch/.venv/bin/python3 → /usr/bin/python3.12): a venv is its own folder."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(python)))
    if os.path.isfile(os.path.join(root, "pyvenv.cfg")):
        return "venv:" + os.path.realpath(root)
    return os.path.realpath(python)


def probe_python(python: str, timeout: float = 180.0) -> Optional[Dict[str, Any]]:
    try:
        r = subprocess.run([python, "-c", PROBE], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           stdin=subprocess.DEVNULL, timeout=timeout, text=True)
    except (OSError, subprocess.SubprocessError):
        return None
    for line in r.stdout.splitlines():
        if line.startswith("RFT_PROBE "):
            try:
                info = json.loads(line[len("RFT_PROBE "):])
            except ValueError:
                return None
            return info if isinstance(info, dict) else None
    return None


def score(info: Optional[Dict[str, Any]]) -> int:
    """3: torch sees a GPU; 2: CUDA build of torch (driver not visible now); 1: CPU torch; 0: unusable."""
    if not info or tuple(info.get("python", [0])[:2]) < (3, 9) or not info.get("torch"):
        return 0
    if info.get("cuda_available"):
        return 3
    return 2 if info.get("cuda") else 1


def choose_python(candidates: List[Tuple[str, str]], probe: Callable[[str], Optional[Dict[str, Any]]] = probe_python
                  ) -> Tuple[str, Dict[str, Any], List[str]]:
    """The first candidate with the best score; notes say what was skipped and why."""
    best: Optional[Tuple[int, str, Dict[str, Any], str]] = None
    notes: List[str] = []
    for path, origin in candidates:
        info = probe(path)
        s = score(info)
        if info is None:
            notes.append("%s (%s): did not run" % (path, origin))
        elif s == 0:
            notes.append("%s (%s): %s" % (path, origin, "Python < 3.9" if info.get("torch") else "no torch"))
        elif s < 3:
            notes.append("%s (%s): torch %s %s" % (path, origin, info.get("torch"), "CUDA build, no GPU visible" if s == 2 else "CPU only"))
        if info is not None and s > 0 and (best is None or s > best[0]):
            best = (s, path, info, origin)
        if s == 3:
            break
    if best is None:
        raise BootstrapError("No Python with torch found on this host (looked at %d interpreter(s))" % len(candidates),
                             hint="Use a GPU image that ships PyTorch (Lambda Stack, AWS Deep Learning AMI, GCP Deep Learning VM), "
                                  "or set RFT_PYTHON to an interpreter that has torch with CUDA.")
    if best[0] < 3:
        notes.append("chose %s although torch there sees no GPU" % best[1])
    return best[1], best[2], notes


def venv_python(venv_dir: str) -> str:
    return os.path.join(venv_dir, "bin", "python")


def parent_site_pth(venv_dir: str, info: Dict[str, Any]) -> Optional[Tuple[str, str]]:
    """(path, content) of a .pth that lets our venv see a parent venv's packages. `--system-site-packages`
    reaches only the base interpreter's site-packages: a venv made from the DLAMI's /opt/pytorch venv would
    otherwise not see its CUDA torch and pip would pull a generic one."""
    if not info.get("venv") or not info.get("site_packages"):
        return None
    major, minor = (info.get("python") or [3, 0])[:2]
    site = os.path.join(venv_dir, "lib", "python%d.%d" % (major, minor), "site-packages")
    return os.path.join(site, "_rft_parent_venv.pth"), "".join("%s\n" % p for p in info["site_packages"])


def _torch_version(v: Optional[str]) -> Optional[Tuple[int, int]]:
    m = re.match(r"^(\d+)\.(\d+)", v or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def supported_text() -> str:
    parts = []
    for name, low, high in LOCK_FAMILIES:
        span = "torch %d.%d-%d.%d" % (low + high) if high else "torch %d.%d or newer (2.x)" % low
        parts.append("%s (lock %s)" % (span, name))
    return "; ".join(parts) + "; with CUDA %s.x or CPU" % "/".join(str(c) for c in CUDA_MAJORS)


def choose_lock(info: Dict[str, Any], override: Optional[str] = None) -> str:
    """The lock file for the host's torch and CUDA. RFT_LOCK (a lock's name) overrides the choice."""
    if override:
        path = os.path.join(LOCKS_DIR, os.path.basename(override) + ("" if override.endswith(".txt") else ".txt"))
        if not os.path.isfile(path):
            raise BootstrapError("RFT_LOCK=%s names no lock file" % override, hint="Supported: " + supported_text())
        return path
    tv = _torch_version(info.get("torch"))
    cuda = info.get("cuda")
    cuda_major = _torch_version(cuda + ".0" if cuda and "." not in cuda else cuda)
    cuda_ok = cuda is None or (cuda_major is not None and cuda_major[0] in CUDA_MAJORS and cuda_major >= (11, 8))
    if tv is not None and tv[0] == 2 and cuda_ok:
        for name, low, high in LOCK_FAMILIES:
            if tv >= low and (high is None or tv <= high):
                return os.path.join(LOCKS_DIR, name + ".txt")
    raise BootstrapError("torch %s with CUDA %s is not a combination the runner supports" % (info.get("torch"), cuda or "none"),
                         hint="Supported: %s. Use an image with a supported PyTorch, or set RFT_PYTHON to an interpreter that has one." % supported_text())


def venv_actions(venv_dir: str, base_python: str) -> List[List[str]]:
    """Commands to (re)create the venv; none when it exists on the same base interpreter."""
    marker = os.path.join(venv_dir, ".rft-base")
    try:
        with open(marker, "r", encoding="utf-8") as f:
            if f.read().strip() == os.path.realpath(base_python) and os.path.exists(venv_python(venv_dir)):
                return []
    except OSError:
        pass
    return [[base_python, "-m", "venv", "--clear", "--system-site-packages", venv_dir]]


def requirement_files(method: str, lock: str, wandb: bool = False, deepspeed: bool = False, trackers: Tuple[str, ...] = (),
                      gcs: bool = False) -> List[str]:
    """The lock (transformers, peft, trl, datasets, accelerate, bitsandbytes: every built-in method) and the extras.
    `trackers`: report_to names (tensorboard, mlflow) whose requirement file goes in, pinned by tracking_constraints.
    `gcs`: the spec names gs:// somewhere (gcs.py's client library)."""
    if method not in ("qlora", "lora-bf16", "full", "dpo", "orpo"):
        return []
    names = [lock] + [os.path.join(REQUIREMENTS_DIR, n) for n, on in (("wandb.txt", wandb), ("deepspeed.txt", deepspeed), ("gcs.txt", gcs)) if on]
    names += [os.path.join(REQUIREMENTS_DIR, t + ".txt") for t in ("tensorboard", "mlflow") if t in trackers]
    return names


def tracking_constraints(lock: str) -> Optional[str]:
    """locks/tracking/<lock>.txt: every package the tracking extras pull in, pinned for that lock."""
    path = os.path.join(os.path.dirname(lock), "tracking", os.path.basename(lock))
    return path if os.path.isfile(path) else None


def wants_deepspeed(spec: Optional[Dict[str, Any]]) -> bool:
    if not spec:
        return False
    launcher = spec.get("launcher") or {}
    return bool(launcher.get("deepspeed")) or "deepspeed" in str(launcher.get("config_file") or "")


def requirements_hash(path: str, base_python: str) -> str:
    """Hash of the file, the files it includes with -r, and the interpreter it is installed for."""
    h = hashlib.sha256(os.path.realpath(base_python).encode())
    todo, seen = [path], set()
    while todo:
        p = todo.pop(0)
        if p in seen:
            continue
        seen.add(p)
        with open(p, "rb") as f:
            data = f.read()
        h.update(os.path.basename(p).encode() + b"\0" + data + b"\0")
        for m in re.finditer(rb"^\s*-r\s+(\S+)", data, re.M):
            todo.append(os.path.join(os.path.dirname(p), m.group(1).decode()))
    return h.hexdigest()


def _stamp(venv_dir: str, req: str) -> str:
    return os.path.join(venv_dir, ".rft-req-%s.sha256" % os.path.splitext(os.path.basename(req))[0])


CONSTRAINED = ("tensorboard.txt", "mlflow.txt")


def install_actions(venv_dir: str, base_python: str, reqs: List[str], constraints: Optional[str] = None) -> List[Tuple[List[str], str, str]]:
    """(pip argv, stamp path, hash) for each requirements file whose hash changed since its last install.
    `constraints` (pip -c) pins what the tracking extras pull in; its content is part of their hash."""
    out = []
    for req in reqs:
        constrained = constraints is not None and os.path.basename(req) in CONSTRAINED
        digest = requirements_hash(req, base_python)
        if constrained:
            with open(constraints, "rb") as f:
                digest = hashlib.sha256((digest + "\0").encode() + f.read()).hexdigest()
        try:
            with open(_stamp(venv_dir, req), "r", encoding="utf-8") as f:
                if f.read().strip() == digest:
                    continue
        except OSError:
            pass
        argv = [venv_python(venv_dir), "-m", "pip", "install", "--disable-pip-version-check", "--upgrade-strategy", "only-if-needed"]
        if constrained:
            argv += ["-c", str(constraints)]
        argv += ["-r", req]
        if os.path.basename(req) == "deepspeed.txt":
            argv.append("--no-build-isolation")  # they build against the torch already installed
        out.append((argv, _stamp(venv_dir, req), digest))
    return out


# FlashAttention-2's official release wheels (github.com/Dao-AILab/flash-attention/releases): CUDA 12, CPython 3.9-3.13,
# linux x86_64, one per torch minor in the range and C++ ABI. Newest release first. PyPI has only the source package,
# whose build compiles CUDA kernels for an hour or more on the host: a host without a matching wheel keeps sdpa.
FLASH_ATTN_WHEELS = (("2.8.3", (2, 4), (2, 8)), ("2.7.4.post1", (2, 2), (2, 6)))
FLASH_ATTN_RELEASES = "https://github.com/Dao-AILab/flash-attention/releases/download"


def flash_attn_wheel(info: Dict[str, Any]) -> Tuple[Optional[str], str]:
    """(URL of the prebuilt flash-attn wheel matching the host's torch, CUDA, Python and C++ ABI, or None; the wheel's
    name or why there is none)."""
    torch_v = _torch_version(info.get("torch"))
    cuda = str(info.get("cuda") or "")
    py = tuple(info.get("python") or (0, 0))[:2]
    if torch_v is None:
        return None, "no torch"
    if cuda.split(".")[0] != "12":
        return None, "no prebuilt FlashAttention-2 wheel for CUDA %s (the release wheels are built for CUDA 12)" % (cuda or "none")
    if not (3, 9) <= py <= (3, 13):
        return None, "no prebuilt FlashAttention-2 wheel for Python %d.%d" % py
    if info.get("machine", "x86_64") != "x86_64":
        return None, "no prebuilt FlashAttention-2 wheel for %s" % info.get("machine")
    version = next((v for v, lo, hi in FLASH_ATTN_WHEELS if lo <= torch_v <= hi), None)
    if version is None:
        return None, "no prebuilt FlashAttention-2 wheel for torch %d.%d" % torch_v
    abi = info.get("cxx11abi")
    if abi is None:
        abi = torch_v >= (2, 7)  # PyPI's torch wheels switched to the C++11 ABI in 2.7
    name = "flash_attn-%s+cu12torch%d.%dcxx11abi%s-cp%d%d-cp%d%d-linux_x86_64.whl" % (
        version, torch_v[0], torch_v[1], "TRUE" if abi else "FALSE", py[0], py[1], py[0], py[1])
    return "%s/v%s/%s" % (FLASH_ATTN_RELEASES, version, name.replace("+", "%2B")), name


def want_liger(method: str, info: Dict[str, Any], spec: Optional[Dict[str, Any]]) -> bool:
    """liger-kernel on a CUDA host for the built-in trainer unless the spec rules it out (speed off, trainer.liger
    false, the Unsloth backend): speed auto uses it where the family allows, trainer.liger asks for it."""
    if method not in ("qlora", "lora-bf16", "full", "dpo", "orpo") or not info.get("devices"):
        return False
    spec = spec or {}
    t = spec.get("trainer") or {}
    if t.get("liger") is True:
        return True
    return spec.get("speed", "auto") != "off" and t.get("liger") is not False and t.get("backend", "builtin") != "unsloth"


def want_unsloth(method: str, info: Dict[str, Any], spec: Optional[Dict[str, Any]]) -> bool:
    """Unsloth only where the spec asks for its backend, for an adapter method, on a CUDA host."""
    t = (spec or {}).get("trainer") or {}
    return t.get("backend") == "unsloth" and method in ("qlora", "lora-bf16") and bool(info.get("devices"))


def want_flash_attn(method: str, info: Dict[str, Any]) -> bool:
    """Only for 16-bit methods on Ampere or newer, and never with 4-bit weights (seed 002)."""
    cap = info.get("capability") or [0, 0]
    return method in ("lora-bf16", "full") and not info.get("flash_attn") and int(cap[0]) >= 8


# ---- pre-download ----------------------------------------------------------------------------

IGNORE_PATTERNS = ["original/*", "*.pth", "*.msgpack", "*.h5", "*.ot", "*.onnx", "flax_model*", "tf_model*", "*.gguf"]


def is_local(ref: str, workdir: str) -> bool:
    if os.path.isabs(ref) or ref.startswith((".", "~")):
        return True
    if os.path.exists(os.path.join(workdir, ref)):
        return True
    return ref.endswith((".jsonl", ".json", ".csv", ".parquet", ".txt"))


def explain_hub_error(exc: BaseException, repo: str, kind: str, token_set: bool) -> BootstrapError:
    """Maps huggingface_hub / requests errors to what the person should do. Never includes the token."""
    name = type(exc).__name__
    status = getattr(getattr(exc, "response", None), "status_code", None)
    url = "https://huggingface.co/%s%s" % ("datasets/" if kind == "dataset" else "", repo)
    if name == "GatedRepoError" or status in (401, 403) and name != "RepositoryNotFoundError":
        return BootstrapError(
            "%s %s is a gated repository and the download was refused (%s)" % (kind, repo, status or name),
            hint="Open %s and accept its licence with the Hugging Face account that owns the token, then retry. %s" % (
                url, "HF_TOKEN is set: check that it has read access." if token_set else "HF_TOKEN is not set: add it to the run's .env or the extension's secrets."),
            signature="gated-repo")
    if name in ("RepositoryNotFoundError", "RevisionNotFoundError"):
        return BootstrapError("%s %s was not found on the Hub (%s)" % (kind, repo, name),
                              hint="Check the id and revision; a private repository also reads as not found without a token that can see it.",
                              signature="gated-repo" if not token_set else None)
    if name == "LocalEntryNotFoundError" or "connect" in str(exc).lower():
        return BootstrapError("%s %s could not be downloaded: the host cannot reach huggingface.co" % (kind, repo),
                              hint="Check the host's network, or pre-populate HF_HOME and set HF_HUB_OFFLINE=1.",
                              signature="model-load-failed")
    return BootstrapError("%s %s could not be downloaded (%s)" % (kind, repo, name), signature="model-load-failed")


def predownload(spec: Dict[str, Any], workdir: str, env: Dict[str, str],
                snapshot_download: Optional[Callable[..., str]] = None) -> List[str]:
    """Downloads what the built-in trainer will load; returns notes. Raises BootstrapError."""
    from .spec import RunSpec, get  # local: keeps this module importable on its own
    from .staging import is_remote
    if snapshot_download is None:
        from huggingface_hub import snapshot_download as real  # heavy import, only when downloading
        snapshot_download = real
    from .spec import hub_token
    token = hub_token(env)
    cache = env.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    notes: List[str] = []
    jobs: List[Tuple[str, str, Optional[str]]] = []
    model = RunSpec(spec).model.id
    if model and not spec.get("command"):
        if is_local(model, workdir):
            notes.append("model %s is a local path: nothing to download" % model)
        else:
            jobs.append(("model", model, RunSpec(spec).model.revision))
    for key in ("data.train", "data.eval"):
        ref = get(spec, key)
        if is_remote(ref):
            continue  # s3://, gs://, hf:// data is staged by staging.py (main_predownload), not from the Hub cache
        if ref and not spec.get("command"):
            if is_local(ref, workdir):
                path = ref if os.path.isabs(ref) else os.path.join(workdir, ref)
                if not os.path.exists(os.path.expanduser(path)):
                    raise BootstrapError("%s %s does not exist on the host" % (key, ref), hint="Is it excluded from sync (.finetuneignore)?")
            elif key == "data.train" or ref != RunSpec(spec).data.train:
                jobs.append(("dataset", ref, None))
    for kind, repo, revision in jobs:
        kwargs: Dict[str, Any] = {"repo_id": repo, "token": token}
        if revision:
            kwargs["revision"] = revision
        if kind == "dataset":
            kwargs["repo_type"] = "dataset"
        else:
            kwargs["ignore_patterns"] = IGNORE_PATTERNS
        try:
            path = snapshot_download(**kwargs)
        except Exception as e:  # noqa: BLE001 - every hub failure gets explained, none escapes raw
            raise explain_hub_error(e, repo, kind, token is not None)
        notes.append("%s %s cached in %s (HF_HOME %s)" % (kind, repo, path, cache))
    return notes


# ---- the subcommand --------------------------------------------------------------------------

def bootstrap(home: str, method: str, *, spec: Optional[Dict[str, Any]] = None, workdir: Optional[str] = None,
              env: Optional[Dict[str, str]] = None, flash_attn: bool = False, download: bool = True, root: str = "/",
              runner: Callable[[List[str]], int] = lambda argv: subprocess.call(argv, stdin=subprocess.DEVNULL),
              probe: Callable[[str], Optional[Dict[str, Any]]] = probe_python,
              snapshot_download: Optional[Callable[..., str]] = None, run_dir: Optional[str] = None,
              run_json: Optional[Callable[[List[str], Dict[str, str]], Dict[str, Any]]] = None) -> Dict[str, Any]:
    env = dict(os.environ if env is None else env)
    result: Dict[str, Any] = {"warnings": [], "installed": [], "notes": []}
    base, info, notes = choose_python(candidate_pythons(root, env.get("PATH", ""), env.get("RFT_PYTHON")), probe)
    result.update(base_python=base, torch=info.get("torch"), cuda=info.get("cuda"), gpus=info.get("devices", 0),
                  bf16=info.get("bf16"), capability=info.get("capability"))
    result["notes"] += notes
    if method == "own-script":
        # The user's script brings its own environment; we only say which interpreter has CUDA torch.
        result["python"] = base
        return result
    lock = choose_lock(info, env.get("RFT_LOCK"))
    result["lock"] = os.path.basename(lock)
    venv_dir = os.path.join(home, "venv")
    for argv in venv_actions(venv_dir, base):
        if runner(argv) != 0:
            raise BootstrapError("could not create the venv at %s" % venv_dir, hint="Is python3-venv installed on the host?")
        pth = parent_site_pth(venv_dir, info)
        if pth is not None:
            os.makedirs(os.path.dirname(pth[0]), exist_ok=True)
            with open(pth[0], "w", encoding="utf-8") as f:
                f.write(pth[1])
        with open(os.path.join(venv_dir, ".rft-base"), "w", encoding="utf-8") as f:
            f.write(os.path.realpath(base) + "\n")
        result["notes"].append("created venv %s on %s%s" % (venv_dir, base, " (sees its parent venv's packages)" if pth else ""))
    wandb_on = bool(env.get("WANDB_API_KEY")) and ((spec or {}).get("wandb") or {}).get("enabled") is not False
    from .tracking import asked_trackers
    reqs = requirement_files(method, lock, wandb=wandb_on, deepspeed=wants_deepspeed(spec), trackers=tuple(asked_trackers(spec or {})),
                             gcs='"gs://' in json.dumps(spec or {}))
    for argv, stamp, digest in install_actions(venv_dir, base, reqs, tracking_constraints(lock)):
        if runner(argv) != 0:
            raise BootstrapError("pip install -r %s failed" % os.path.basename(argv[-1]), hint="See the output above; the pins are in python-runner/remote_finetune/requirements.")
        with open(stamp, "w", encoding="utf-8") as f:
            f.write(digest + "\n")
        result["installed"].append(os.path.basename(argv[-1] if argv[-1].endswith(".txt") else argv[-2]))
    # dpo/orpo: flash-attn as for the base the adapter trains on (preference.base_method, lora-bf16 by default).
    base = str(((spec or {}).get("preference") or {}).get("base_method", "lora-bf16")) if method in ("dpo", "orpo") else method
    def optional(req: str, name: str, warning: str, argv_of: Callable[[List[str]], List[str]] = lambda argv: argv) -> None:
        """An extra that the run can do without: installed once per requirements hash, a warning when pip fails."""
        for argv, stamp, digest in install_actions(venv_dir, result["base_python"], [os.path.join(REQUIREMENTS_DIR, req)]):
            if runner(argv_of(argv)) == 0:
                with open(stamp, "w", encoding="utf-8") as f:
                    f.write(digest + "\n")
                result["installed"].append(name)
            else:
                result["warnings"].append(warning)

    if want_liger(method, info, spec):
        optional("liger.txt", "liger.txt", "liger-kernel could not be installed; the run trains without Liger's kernels")
    if want_unsloth(method, info, spec):
        # --no-deps: Unsloth's own pins (xformers, trl<=1.15, datasets<5) would replace the lock's.
        optional("unsloth.txt", "unsloth.txt", "Unsloth could not be installed; trainer.backend unsloth will be refused with the reason",
                 lambda argv: argv[:argv.index("-r")] + ["--no-deps"] + argv[argv.index("-r"):])
    if flash_attn and want_flash_attn(base, info):
        url, wheel = flash_attn_wheel(info)
        if url is None:
            result["warnings"].append("FlashAttention-2 not installed: %s; BF16 runs use sdpa attention (nothing is compiled on the host)" % wheel)
        else:
            # The wheel for this torch/CUDA/Python, never the source package (its build compiles for an hour or more).
            optional("flash-attn.txt", wheel, "flash-attn (%s) could not be installed; BF16 runs use sdpa attention" % wheel,
                     lambda argv: argv[:argv.index("-r")] + ["--no-deps", "--only-binary=:all:", url])
    result["python"] = venv_python(venv_dir)
    if download and spec is not None:
        if snapshot_download is not None:
            result["notes"] += predownload(spec, workdir or os.getcwd(), env, snapshot_download)
        else:
            # huggingface_hub lives in the venv, not in the interpreter running this bootstrap.
            result["notes"] += predownload_in(result["python"], run_dir, workdir or os.getcwd(), env, run_json or run_json_lines)
    return result


def predownload_in(python: str, run_dir: Optional[str], workdir: str, env: Dict[str, str],
                   run_json: Callable[[List[str], Dict[str, str]], Dict[str, Any]]) -> List[str]:
    """Runs the pre-download under the venv's interpreter; its BootstrapError comes back as one."""
    if not run_dir:
        return []
    runner_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    child_env = dict(env, PYTHONPATH=runner_dir)
    out = run_json([python, "-m", "remote_finetune", "predownload", "--run-dir", run_dir, "--workdir", workdir], child_env)
    if "error" in out:
        raise BootstrapError(str(out["error"]), hint=str(out.get("hint") or ""), signature=out.get("signature"))
    return [str(n) for n in out.get("notes", [])]


def run_json_lines(argv: List[str], env: Dict[str, str]) -> Dict[str, Any]:
    """Runs a subcommand and reads its last JSON line (its other output goes to our log)."""
    try:
        r = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True, timeout=6 * 3600)
    except (OSError, subprocess.SubprocessError) as e:
        return {"error": "pre-download could not run: %s" % e}
    for line in reversed(r.stdout.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                break
    return {"error": "pre-download failed (exit %d)" % r.returncode}


def main_predownload(run_dir: str, workdir: str) -> int:
    from .envfile import read_env_file
    from .spec import load_spec
    env = dict(os.environ)
    env.update(read_env_file(os.path.join(run_dir, ENV))[0])
    spec, errs = load_spec(os.path.join(run_dir, SPEC))
    if spec is None:
        print(json.dumps({"error": "spec.json: " + "; ".join(errs)}))
        return 2
    from .events import EventWriter
    from .staging import StagingError, stage_spec_data
    try:
        notes = predownload(spec, workdir, env)
        if not spec.get("command"):
            staged = stage_spec_data(spec, run_dir, env, EventWriter(os.path.join(run_dir, EVENTS)).emit)
            notes += ["%s staged in %s" % (k, v) for k, v in staged.items()]
    except BootstrapError as e:
        print(json.dumps({"error": str(e), "hint": e.hint, "signature": e.signature}))
        return 1
    except StagingError as e:
        print(json.dumps({"error": str(e), "hint": "Check the URI and the credentials in the run's .env (AWS_*, GOOGLE_APPLICATION_CREDENTIALS, HF_TOKEN)."}))
        return 1
    print(json.dumps({"notes": notes}))
    return 0


def main_bootstrap(run_dir: Optional[str], method: Optional[str], home: str, flash_attn: bool, download: bool,
                   workdir: Optional[str] = None) -> int:
    from .envfile import read_env_file
    from .events import EventWriter
    from .spec import load_spec, mode_of

    spec = None
    env = dict(os.environ)
    events = None
    if run_dir:
        file_env, _ = read_env_file(os.path.join(run_dir, ENV))
        env.update(file_env)  # values are used, never printed
        events = EventWriter(os.path.join(run_dir, EVENTS))
        spec, errs = load_spec(os.path.join(run_dir, SPEC))
        if spec is None:
            print(json.dumps({"error": "spec.json: " + "; ".join(errs)}))
            return 2
        method = method or mode_of(spec)
    try:
        result = bootstrap(home, method or "qlora", spec=spec, workdir=workdir, env=env, flash_attn=flash_attn, download=download,
                           run_dir=run_dir)
    except BootstrapError as e:
        if events:
            fields = {"message": str(e), "hint": e.hint} if e.hint else {"message": str(e)}
            if e.signature:
                fields["signature"] = e.signature
            events.emit("error", **fields)
        print(json.dumps({"error": str(e), "hint": e.hint}))
        return 1
    if events:
        for w in result["warnings"]:
            events.emit("warning", message=w, code="bootstrap")
    print(json.dumps(result))
    return 0
