"""Downloads, on a machine with network, the wheels a GPU machine without network lacks to run the built-in
trainer: datasets, trl and bitsandbytes at the versions of a runner lock file, and their dependencies pinned by
the same lock, for each target Python version, into one folder (.gpu-wheels/ by default, git-ignored) that
travels with the working tree. `bash scripts/smoke-gpu.sh` installs them there with pip --no-index.

Only binary wheels (--only-binary=:all:) for manylinux x86-64, each file fetched with --no-deps: pip's own
resolution would pull torch and its CUDA libraries (gigabytes) in through bitsandbytes. The dependency closure is
walked here instead, from each wheel's Requires-Dist, keeping the lock's pins. Packages the GPU machine already
has (--skip) are left out: the image's own torch, transformers, peft and accelerate, and numpy, pandas and pyarrow
(16-45 MB each, which would not fit beside bitsandbytes in a 64 MiB working tree); pip keeps the installed ones
when they satisfy the requirements, and names any that does not.

Writes <dest>/requirements-cp<XY>.txt (the top-level pins to install) and <dest>/manifest-cp<XY>.txt (the wheels)
per Python version, and <dest>/packed-from.txt (what they were packed from: --check compares it). Exit status 1
when a requested version could not be packed (the hf5 lock needs Python 3.11+: trl 1.x, filelock 4 and httpx2 do).
"""

import argparse
import hashlib
import os
import re
import subprocess
import sys
import zipfile
from typing import Dict, List, Optional, Set, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOCK = os.path.join(ROOT, "python-runner", "remote_finetune", "requirements", "locks", "hf5-torch2.6plus.txt")
TOP = ("datasets", "trl", "bitsandbytes")
SKIP = ("torch", "transformers", "peft", "accelerate", "numpy", "pandas", "pyarrow")
# pip matches platform tags exactly; wheels of this lock are tagged from manylinux2014 (= 2_17) to 2_28.
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64")


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock(path: str) -> Dict[str, str]:
    pins = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            m = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s;]+)$", line)
            if m:
                pins[norm(m.group(1))] = m.group(2)
    return pins


def requires(wheel: str, python_version: str) -> List[str]:
    """Names the wheel needs on Linux x86-64 CPython `python_version`, extras left out."""
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode("utf-8", "replace")
    env = {"python_version": python_version, "python_full_version": python_version + ".0", "sys_platform": "linux",
           "platform_system": "Linux", "platform_machine": "x86_64", "implementation_name": "cpython",
           "platform_python_implementation": "CPython", "os_name": "posix", "extra": ""}
    out = []
    for line in text.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        spec = line[len("Requires-Dist:"):].strip()
        try:
            # pip's own copy of `packaging` (present wherever pip runs) evaluates markers exactly as pip will.
            from pip._vendor.packaging.requirements import Requirement
            req = Requirement(spec)
            if req.marker is not None and not req.marker.evaluate(env):
                continue
            out.append(norm(req.name))
        except ImportError:
            if "extra ==" in spec:
                continue
            out.append(norm(re.split(r"[\s;<>=!~\[(]", spec, 1)[0]))
    return out


def download(dest: str, name: str, version: str, python_version: str) -> Tuple[Optional[str], str]:
    """(wheel path, "") or (None, pip's reason)."""
    cp = "cp" + python_version.replace(".", "")
    argv = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-deps", "--only-binary=:all:",
            "--python-version", python_version, "--implementation", "cp", "--abi", cp, "--abi", "abi3", "--abi", "none",
            "-d", dest, "%s==%s" % (name, version)]
    for p in PLATFORMS:
        argv += ["--platform", p]
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        why = [re.sub(r"\(from versions: [^)]*\)", "", l).strip() for l in r.stdout.splitlines() if "ERROR" in l or "Requires-Python" in l]
        return None, "; ".join(why[-1:]) or r.stdout.strip()[-300:]
    m = re.findall(r"(?:Saved|File was already downloaded) (\S+\.whl)", r.stdout)
    if not m:
        return None, "pip saved no wheel: " + r.stdout.strip()[-300:]
    return os.path.join(dest, os.path.basename(m[-1])), ""


def pack(dest: str, lock: Dict[str, str], top: List[str], skip: Set[str], python_version: str) -> Tuple[List[str], List[str]]:
    """(wheel files, problems) for one Python version."""
    queue, seen, wheels, problems = list(top), set(), [], []
    while queue:
        name = queue.pop(0)
        if name in seen or name in skip:
            continue
        seen.add(name)
        if name not in lock:
            if name in top:
                problems.append("%s is not in the lock" % name)
            continue  # not in the lock: a dependency only other interpreters or platforms need (the lock is pip's full resolution)
        wheel, why = download(dest, name, lock[name], python_version)
        if wheel is None:
            problems.append("%s==%s: %s" % (name, lock[name], why))
            continue
        wheels.append(os.path.basename(wheel))
        queue.extend(requires(wheel, python_version))
    return wheels, problems


def trim_bitsandbytes(wheel: str, keep_cuda: List[str]) -> Tuple[int, int]:
    """Rewrites the bitsandbytes wheel in place with its CPU library and only the CUDA builds named (e.g. 130 for a
    CUDA 13.0 torch): the wheel ships one 4-26 MB library per CUDA and ROCm version, 43 MB compressed in all, and
    bitsandbytes loads only the one matching torch.version.cuda. Their RECORD lines go too, so pip installs the
    trimmed wheel as any other (the kept files' hashes are unchanged). Returns (bytes before, bytes after)."""
    before = os.path.getsize(wheel)
    wanted = {"libbitsandbytes_cuda%s.so" % v for v in keep_cuda}

    def dropped(name: str) -> bool:
        base = os.path.basename(name)
        return re.match(r"^libbitsandbytes_(cuda|rocm|xpu)", base) is not None and base not in wanted

    tmp = wheel + ".tmp"
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
        names = src.namelist()
        missing = sorted(w for w in wanted if not any(os.path.basename(n) == w for n in names))
        if missing:
            raise SystemExit("pack: %s has no %s (it has: %s)" % (os.path.basename(wheel), ", ".join(missing), ", ".join(
                sorted(os.path.basename(n) for n in names if "libbitsandbytes_" in n))))
        for info in src.infolist():
            if dropped(info.filename):
                continue
            data = src.read(info.filename)
            if info.filename.endswith(".dist-info/RECORD"):
                data = "".join(l for l in data.decode("utf-8").splitlines(True) if not dropped(l.split(",", 1)[0])).encode("utf-8")
            dst.writestr(info, data)
    os.replace(tmp, wheel)
    return before, os.path.getsize(wheel)


def main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dest", default=os.path.join(ROOT, ".gpu-wheels"))
    p.add_argument("--lock", default=LOCK)
    p.add_argument("--python-version", default=os.environ.get("RFT_GPU_PYTHON_VERSIONS", "3.11,3.12"),
                   help="target Python versions, comma-separated (default 3.11,3.12; env RFT_GPU_PYTHON_VERSIONS)")
    p.add_argument("--top", default=",".join(TOP))
    p.add_argument("--skip", default=os.environ.get("RFT_GPU_WHEELS_SKIP", ",".join(SKIP)),
                   help="packages the GPU machine already has (env RFT_GPU_WHEELS_SKIP)")
    p.add_argument("--bnb-cuda", default=os.environ.get("RFT_GPU_BNB_CUDA", ""),
                   help="keep only these CUDA builds in the bitsandbytes wheel, e.g. 130 for torch's CUDA 13.0 (env RFT_GPU_BNB_CUDA; "
                        "default: all). The room it frees can carry pyarrow (--skip without it) to a machine whose own is too old")
    p.add_argument("--check", action="store_true", help="exit 0 when <dest> is packed for these versions from this lock, 1 otherwise")
    a = p.parse_args(argv)
    lock = read_lock(a.lock)
    top = [norm(n) for n in a.top.split(",") if n.strip()]
    skip = {norm(n) for n in a.skip.split(",") if n.strip()}
    versions = [v.strip() for v in a.python_version.replace(" ", ",").split(",") if v.strip()]
    for v in versions:
        if not re.match(r"^3\.\d+$", v):
            print("pack: %s is not a Python version like 3.12" % v, file=sys.stderr)
            return 2
    bnb_cuda = [v.strip() for v in a.bnb_cuda.split(",") if v.strip()]
    for v in bnb_cuda:
        if not re.match(r"^\d{3}$", v):
            print("pack: --bnb-cuda takes versions like 130 (CUDA 13.0), not %s" % v, file=sys.stderr)
            return 2
    with open(a.lock, "rb") as f:
        source = "lock %s sha256 %s; top %s; skip %s%s\n" % (os.path.basename(a.lock), hashlib.sha256(f.read()).hexdigest(),
                                                           ",".join(top), ",".join(sorted(skip)),
                                                           "; bitsandbytes cuda %s" % ",".join(bnb_cuda) if bnb_cuda else "")
    stamp = os.path.join(a.dest, "packed-from.txt")
    if a.check:
        try:
            with open(stamp, encoding="utf-8") as f:
                same = f.read() == source
        except OSError:
            same = False
        have = all(os.path.isfile(os.path.join(a.dest, "requirements-cp%s.txt" % v.replace(".", ""))) for v in versions)
        return 0 if same and have else 1
    os.makedirs(a.dest, exist_ok=True)
    if os.path.exists(stamp):
        with open(stamp, encoding="utf-8") as f:
            if f.read() != source:  # another lock or selection: what was packed before no longer applies
                for old in os.listdir(a.dest):
                    if old.startswith(("requirements-", "manifest-")):
                        os.remove(os.path.join(a.dest, old))
    with open(stamp, "w", encoding="utf-8") as f:
        f.write(source)
    failed = []
    for v in versions:
        cp = "cp" + v.replace(".", "")
        wheels, problems = pack(a.dest, lock, top, skip, v)
        for w in wheels:
            if bnb_cuda and w.startswith("bitsandbytes-"):
                before, after = trim_bitsandbytes(os.path.join(a.dest, w), bnb_cuda)
                if before != after:
                    print("pack: %s trimmed to the CPU and CUDA %s builds: %.1f MiB, was %.1f" % (w, ",".join(bnb_cuda), after / 2 ** 20, before / 2 ** 20))
        if problems:
            failed.append(v)
            print("pack: Python %s NOT packed: %s" % (v, " | ".join(problems)), file=sys.stderr)
            for stale in ("requirements-%s.txt" % cp, "manifest-%s.txt" % cp):
                if os.path.exists(os.path.join(a.dest, stale)):
                    os.remove(os.path.join(a.dest, stale))
            continue
        with open(os.path.join(a.dest, "manifest-%s.txt" % cp), "w", encoding="utf-8") as f:
            f.write("".join(w + "\n" for w in sorted(wheels)))
        with open(os.path.join(a.dest, "requirements-%s.txt" % cp), "w", encoding="utf-8") as f:
            f.write("# installed with pip --no-index --find-links %s by scripts/smoke-gpu.sh (lock %s)\n" % (
                os.path.basename(a.dest), os.path.basename(a.lock)))
            f.write("".join("%s==%s\n" % (n, lock[n]) for n in top))
        print("pack: Python %s: %d wheels (%s)" % (v, len(wheels), ", ".join(sorted(wheels))))
    # Wheels no manifest lists (a version that failed, an older pack) would only take up the carry's room.
    listed = set()
    for f in os.listdir(a.dest):
        if f.startswith("manifest-"):
            with open(os.path.join(a.dest, f), encoding="utf-8") as m:
                listed.update(l.strip() for l in m if l.strip())
    for f in os.listdir(a.dest):
        if f.endswith(".whl") and f not in listed:
            os.remove(os.path.join(a.dest, f))
    size = sum(os.path.getsize(os.path.join(a.dest, f)) for f in os.listdir(a.dest))
    print("pack: %s holds %.1f MiB; skipped as already on the GPU machine: %s" % (
        os.path.relpath(a.dest, ROOT), size / 2 ** 20, ", ".join(sorted(skip))))
    if size > 60 * 2 ** 20:
        print("pack: warning: over 60 MiB; a working tree limited to 64 MiB will not carry it (pack fewer Python versions)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
