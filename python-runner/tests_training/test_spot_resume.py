"""The built-in trainer (real transformers/peft on CPU, a tiny llama built here) across a spot reclaim: the
first "instance" uploads its checkpoints to S3 as it trains and is killed outright (SIGKILL of everything,
as a reclaim without notice does); the replacement is another workdir and run dir under the same run id,
which restores the newest checkpoint `latest` names and resumes there, so the steps go on to the end.
S3 is moto's server and the uploads and downloads go through AWS's own CLI (both from the venv
scripts/ensure-moto.sh caches)."""

import json
import os
import shutil
import signal
import subprocess
import time
import unittest
import uuid

from tests.moto_s3 import MotoS3
from tests_training.test_training import Case, RUNNER_DIR, base_spec, read_events, tiny_model

RUN_ID = "rft-20261125-200000-5pot"
MAX_STEPS = 240
SAVE_STEPS = 20


def _group_alive(pgid: int) -> bool:
    """Whether a live (non-zombie) process is left in the process group."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, encoding="utf-8", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            return True
    return False


class SpotResume(Case):
    @classmethod
    def setUpClass(cls):
        cls.s3 = MotoS3()
        # Only `aws` on PATH: the training venv stays the python.
        cls.bin = os.path.join(cls.s3.venv, "rft-aws-only")
        os.makedirs(cls.bin, exist_ok=True)
        if not os.path.exists(os.path.join(cls.bin, "aws")):
            os.symlink(os.path.join(cls.s3.bin, "aws"), os.path.join(cls.bin, "aws"))
        cls.endpoint = cls.s3.endpoint

    @classmethod
    def tearDownClass(cls):
        cls.s3.stop()

    def setUp(self) -> None:
        super().setUp()
        # The run dir's name is the run id, the same on both instances.
        os.rmdir(self.run_dir)
        self.run_dir = os.path.join(self.tmp, "home", ".remote-finetune", "runs", RUN_ID)
        os.makedirs(self.run_dir)
        self.aws_env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                        "AWS_ENDPOINT_URL": self.endpoint}
        self.extra_env = dict(self.aws_env, PATH=self.bin + os.pathsep + os.environ["PATH"])

    def start(self, spec):
        with open(os.path.join(self.run_dir, "spec.json"), "w", encoding="utf-8") as f:
            json.dump(spec, f)
        with open(os.path.join(self.run_dir, "env"), "w", encoding="utf-8") as f:
            f.write("".join("%s=%s\n" % kv for kv in self.aws_env.items()))
        os.chmod(os.path.join(self.run_dir, "env"), 0o600)
        return subprocess.Popen(self.argv(), cwd=self.run_dir, env=self.env(), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)

    def test_a_replacement_restores_the_s3_checkpoint_and_the_trainer_goes_on_from_its_step(self):
        bucket = "ckpt-%s" % uuid.uuid4().hex[:8]
        r = subprocess.run(["aws", "s3", "mb", "s3://" + bucket], env=dict(os.environ, **self.extra_env), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout)
        model = tiny_model("llama")
        self.data("text-jsonl", "data/train.jsonl")
        # Each upload is an `aws s3` process, seconds on a loaded machine, while a step of the tiny model is ~15 ms: four
        # micro-batches per step keep the run long enough that the reclaim (after the first upload) lands mid-run.
        # With one, a runner 3 ms a step faster (measured.py writing only changed figures) outran the first upload.
        spec = base_spec(model, trainer={"max_steps": MAX_STEPS, "save_steps": SAVE_STEPS, "save_total_limit": 2, "gradient_accumulation": 4},
                         outputs={"dir": "outputs", "checkpoints": "s3://%s/runs" % bucket})
        first = self.start(spec)
        try:
            deadline = time.time() + 400
            uploaded = 0
            while time.time() < deadline and first.poll() is None and uploaded < SAVE_STEPS:
                uploaded = max([e["step"] for e in read_events(self.run_dir) if e["type"] == "checkpoint" and e.get("uploaded_to")] or [0])
                time.sleep(0.05)
            self.assertGreaterEqual(uploaded, SAVE_STEPS, self.output()[-3000:])
        finally:
            # The reclaim: no notice, no grace, nothing saved on the way out, and every process of the instance
            # gone, the trainer too. It leads a process group of its own (run.py's train.pgid); left alive, it
            # went on writing checkpoints into the workdir the replacement was given, which then resumed from
            # that local checkpoint instead of restoring the uploaded one.
            pgids = [first.pid]
            try:
                with open(os.path.join(self.run_dir, "train.pgid"), encoding="utf-8") as f:
                    pgids.append(int(f.read().strip()))
            except (OSError, ValueError):
                pass
            for pgid in pgids:
                if pgid > 1:
                    try:
                        os.killpg(pgid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            first.communicate(timeout=60)
            wait_gone = time.time() + 30
            while time.time() < wait_gone and any(_group_alive(g) for g in pgids):
                time.sleep(0.05)
            self.assertFalse([g for g in pgids if _group_alive(g)], "every process of the reclaimed instance is gone")
        events1 = read_events(self.run_dir)
        self.assertFalse([e for e in events1 if e["type"] == "finished"], "a reclaimed instance writes no end")
        steps1 = [e["step"] for e in events1 if e["type"] == "metrics" and "loss" in e]
        self.assertLess(max(steps1), MAX_STEPS, "the reclaim came after the run had ended: no resume to test")

        # The replacement: nothing of the first instance's disk, the same run id, the same spec.
        shutil.rmtree(self.workdir)
        os.makedirs(self.workdir)
        self.data("text-jsonl", "data/train.jsonl")
        shutil.rmtree(self.run_dir)
        self.run_dir = os.path.join(self.tmp, "home2", ".remote-finetune", "runs", RUN_ID)
        os.makedirs(self.run_dir)
        second = self.start(spec)
        second.communicate(timeout=900)
        self.assertEqual(second.returncode, 0, self.output()[-4000:])
        events2 = read_events(self.run_dir)
        restored = [e for e in events2 if e["type"] == "warning" and e.get("code") == "checkpoint-restored"]
        self.assertEqual(len(restored), 1, events2)
        k = int(restored[0]["message"].split("(step ")[1].split(")")[0])
        self.assertGreaterEqual(k, uploaded, "the newest uploaded checkpoint (at least the one seen before the kill)")
        self.assertIn("resumed", [e.get("code") for e in events2 if e["type"] == "warning"])
        steps2 = [e["step"] for e in events2 if e["type"] == "metrics" and "loss" in e]
        self.assertEqual(steps2, list(range(k + 1, MAX_STEPS + 1)), "the trainer goes on from the restored step, every step once")
        self.assertEqual(events2[-1]["status"], "completed")
        with open(os.path.join(self.workdir, "outputs", "checkpoints", RUN_ID, "checkpoint-%d" % MAX_STEPS, "trainer_state.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["global_step"], MAX_STEPS)


if __name__ == "__main__":
    unittest.main()
