"""Shared paths and small helpers for the runner tests (stdlib only)."""

import json
import os
import shutil
import sys
import tempfile
import time
import unittest

RUNNER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO_DIR = os.path.dirname(RUNNER_DIR)
FIXTURES = os.path.join(REPO_DIR, "test", "fixtures")
PYTHON = sys.executable


class TempDirTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="rft-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def path(self, *parts: str) -> str:
        return os.path.join(self.tmp, *parts)

    def wait_for(self, cond, timeout: float = 10.0) -> bool:
        """Polls cond() until it holds (True) or the timeout passes (False), for work done by threads."""
        end = time.time() + timeout
        while time.time() < end:
            if cond():
                return True
            time.sleep(0.05)
        return False

    def own_script_layout(self, train_py: str, run_id: str = "rft-1", spec=None) -> str:
        """A host's layout for an own-script run: work/train.py and home/runs/<run_id>/spec.json; returns the run dir."""
        self.work = self.path("work")
        os.makedirs(self.work, exist_ok=True)
        self.write("work/train.py", train_py)
        run_dir = self.path("home", "runs", run_id)
        os.makedirs(run_dir, exist_ok=True)
        if spec is not None:
            self.write("home/runs/%s/spec.json" % run_id, json.dumps(spec))
        return run_dir

    def write(self, rel: str, text: str, mode: int = 0o644) -> str:
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(p, mode)
        return p


def read(path: str) -> str:
    with open(path, "r", encoding="utf-8") as f:
        return f.read()


def runner_env(extra=None):
    """Environment for a child `python -m remote_finetune`: PYTHONPATH at python-runner, as on the host."""
    env = dict(os.environ)
    env["PYTHONPATH"] = RUNNER_DIR
    env.pop("HF_TOKEN", None)
    env.pop("WANDB_API_KEY", None)
    if extra:
        env.update(extra)
    return env
