"""On the GPU machine, which cannot download: the run venv built as the runner's bootstrap builds it
(python-runner/remote_finetune/bootstrap.py picks the interpreter with CUDA torch, makes a --system-site-packages
venv on it, and adds a .pth when that interpreter is itself a venv, as the GPU images' often is), then the wheels
packed by scripts/pack_gpu_wheels.py installed into it with pip --no-index --find-links. Only the install source
differs from a host's: there the bootstrap installs the whole lock from PyPI; here the lock's datasets, trl and
bitsandbytes come from the folder, and what the image already has (torch, transformers, peft, accelerate, ...) is
kept when it satisfies them.

  python3 bench/gpu/install_wheels.py --probe     one JSON line: the interpreter chosen, its Python, torch and CUDA
  python3 bench/gpu/install_wheels.py             builds/updates the venv; last line: RFT_VENV_PYTHON <path>
"""

import argparse
import json
import os
import subprocess
import sys
from typing import Any, Dict, List

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python-runner"))

from remote_finetune.bootstrap import (BootstrapError, candidate_pythons, choose_python, parent_site_pth,  # noqa: E402
                                       venv_actions, venv_python)


def choose() -> Dict[str, Any]:
    try:
        base, info, notes = choose_python(candidate_pythons("/", os.environ.get("PATH", ""), os.environ.get("RFT_PYTHON")))
    except BootstrapError as e:
        return {"python": None, "why": str(e)}
    v = info.get("python") or [0, 0]
    return {"python": base, "version": "%d.%d" % (v[0], v[1]), "torch": info.get("torch"), "cuda": bool(info.get("cuda_available")),
            "gpus": info.get("devices", 0), "notes": notes, "info": info}


def build_venv(venv_dir: str, base: str, info: Dict[str, Any]) -> List[str]:
    """The bootstrap's own steps (bootstrap.bootstrap), without its lock install."""
    notes = []
    for argv in venv_actions(venv_dir, base):
        if subprocess.call(argv, stdin=subprocess.DEVNULL) != 0:
            # An interpreter without ensurepip (Debian's python3 without python3-venv) cannot seed pip, and this machine
            # cannot install that package; the venv then runs the pip of the interpreter it sees through.
            if subprocess.call(argv + ["--without-pip"], stdin=subprocess.DEVNULL) != 0:
                raise BootstrapError("could not create the venv at %s (is python3-venv installed?)" % venv_dir)
            notes.append("no ensurepip on %s: venv made --without-pip, pip is the one it sees through" % base)
        pth = parent_site_pth(venv_dir, info)
        if pth is not None:
            os.makedirs(os.path.dirname(pth[0]), exist_ok=True)
            with open(pth[0], "w", encoding="utf-8") as f:
                f.write(pth[1])
        with open(os.path.join(venv_dir, ".rft-base"), "w", encoding="utf-8") as f:
            f.write(os.path.realpath(base) + "\n")
        notes.append("created venv %s on %s%s" % (venv_dir, base, " (sees its parent venv's packages)" if pth else ""))
        # Python 3.11's venv bundles setuptools 65, which shadows the image's own; torch 2.6+ requires setuptools >= 77
        # there, and with no index pip cannot upgrade it: every install touching torch's requirements then fails.
        # Without the bundled copy the venv sees the image's, as it sees its torch. (3.12's venv bundles none.)
        own = os.path.join(venv_dir, "lib", "python%s" % ".".join(map(str, (info.get("python") or [3, 0])[:2])), "site-packages", "setuptools")
        if os.path.isdir(own) and subprocess.call([base, "-c", "import setuptools"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
            subprocess.call([venv_python(venv_dir), "-m", "pip", "uninstall", "-y", "-q", "--disable-pip-version-check", "setuptools"])
            notes.append("removed the venv's bundled setuptools (the image's applies)")
    return notes


def main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--probe", action="store_true")
    p.add_argument("--wheels", default=os.path.join(REPO, ".gpu-wheels"))
    p.add_argument("--venv", default=os.path.join(os.environ.get("RFT_GPU_WORK", os.path.join(os.environ.get("TMPDIR", "/tmp"), "rft-gpu")), "venv"))
    a = p.parse_args(argv)
    chosen = choose()
    if a.probe:
        print(json.dumps({k: v for k, v in chosen.items() if k != "info"}))
        return 0
    if chosen["python"] is None:
        print("install: %s" % chosen["why"], file=sys.stderr)
        return 2
    cp = "cp" + chosen["version"].replace(".", "")
    req = os.path.join(a.wheels, "requirements-%s.txt" % cp)
    if not os.path.isfile(req):
        print("install: no wheels for Python %s in %s: pack them where pip can download (bash scripts/smoke-gpu.sh pack "
              "--python-version %s) and carry the folder" % (chosen["version"], os.path.relpath(a.wheels, REPO), chosen["version"]), file=sys.stderr)
        return 2
    for note in chosen["notes"] + build_venv(a.venv, chosen["python"], chosen["info"]):
        print("install: " + note, flush=True)
    py = venv_python(a.venv)
    if subprocess.call([py, "-m", "pip", "--version"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) != 0:
        print("install: no pip in %s nor in %s, which it sees through" % (a.venv, chosen["python"]), file=sys.stderr)
        return 2
    pip = [py, "-m", "pip", "install", "--disable-pip-version-check", "--no-index", "--find-links", a.wheels,
           "--upgrade-strategy", "only-if-needed", "-r", req]
    print("install: " + " ".join(pip[1:]), flush=True)
    if subprocess.call(pip, stdin=subprocess.DEVNULL) != 0:
        print("install: pip could not install %s from %s (see above: a requirement the GPU machine's packages do not meet and "
              "no packed wheel provides; pack it by taking it out of RFT_GPU_WHEELS_SKIP)" % (os.path.basename(req), a.wheels), file=sys.stderr)
        return 1
    check = subprocess.run([py, "-c", "import datasets, trl, bitsandbytes, torch, transformers, peft, accelerate; "
                            "print(' '.join('%s %s' % (m.__name__, m.__version__) for m in (torch, transformers, peft, trl, datasets, accelerate, bitsandbytes)))"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if check.returncode != 0:
        print("install: the venv cannot import the training libraries: %s" % check.stdout.strip()[-800:], file=sys.stderr)
        return 1
    print("install: " + check.stdout.strip())
    print("RFT_VENV_PYTHON " + py)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
