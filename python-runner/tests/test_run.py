"""`python -m remote_finetune run` end to end in own-script mode, as the detached wrapper starts it.

The user's "training script" is a small Python program printing what HF Trainer prints; the
GPU is tests/standins/nvidia-smi (a stand-in on PATH: no GPU on this machine).
"""

import json
import os
import signal
import subprocess
import sys
import time
import unittest

from remote_finetune.events import parse_event_line
from tests.helpers import FIXTURES, PYTHON, RUNNER_DIR, TempDirTest, read, runner_env

STANDIN_DIR = os.path.join(RUNNER_DIR, "tests", "standins")
HF = "hf_ZyXwVuTsRqPoNmLkJiHgFe"
WB = "0123456789abcdef0123456789abcdef01234567"

TRAIN_PY = r'''
import os, signal, sys, time
def on_term(signum, frame):
    print("SIGTERM received: saving checkpoint-7", flush=True)
    open("saved", "w").write("checkpoint-7")
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
print("argv", sys.argv[1:], flush=True)
print("wandb run", os.environ.get("WANDB_RUN_ID"), os.environ.get("WANDB_PROJECT"), flush=True)
print("debug: my token is", os.environ.get("HF_TOKEN"), flush=True)
sys.stdout.write("  5%|5         | 10/200 [00:10<03:10,  1.00s/it]\r"); sys.stdout.flush()
print("{'loss': 2.3131, 'grad_norm': 0.8123, 'learning_rate': 0.0002, 'epoch': 0.04}", flush=True)
sys.stdout.write(" 10%|#         | 20/200 [00:20<03:00,  1.00s/it]\r"); sys.stdout.flush()
print("{'loss': '1.9876', 'grad_norm': '0.6512', 'learning_rate': '0.000198', 'epoch': '0.08'}", flush=True)
print("{'eval_loss': 2.0112, 'eval_runtime': 3.21, 'epoch': 0.08}", flush=True)
mode = os.environ.get("FAKE_MODE", "ok")
if mode == "oom":
    print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", file=sys.stderr, flush=True)
    print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", file=sys.stderr, flush=True)
    sys.exit(1)
if mode == "wait":
    open("ready", "w").write("1")
    time.sleep(60)
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    open("ready", "w").write("1")
    time.sleep(60)
if mode == "sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
if mode == "launcher":
    import subprocess
    worker = "import signal,sys,time\ndef t(s,f):\n    time.sleep(1.0)\n    open('worker-saved','w').write('ok')\n    sys.exit(0)\nsignal.signal(signal.SIGTERM,t)\nopen('ready','w').write('1')\ntime.sleep(60)\n"
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # like accelerate's simple launcher: no handler
    subprocess.Popen([sys.executable, "-c", worker]).wait()
gpu_csv = os.path.join(os.environ["RFT_RUN_DIR"], "gpu.csv")
end = time.time() + 20  # "train" until the GPU sampler has written a sample (or the host has no GPU)
while time.time() < end and not (os.path.exists(gpu_csv) and os.path.getsize(gpu_csv) > 0) and os.environ.get("RFT_STANDIN_MODE") != "no-gpu":
    time.sleep(0.05)
print("{'train_runtime': 1.5, 'train_samples_per_second': 2.5, 'train_loss': 2.1, 'epoch': 1.0}", flush=True)
os.makedirs("out/adapter", exist_ok=True)
open("out/adapter/adapter_config.json", "w").write("{}")
'''


class OwnScriptRun(TempDirTest):
    def setUp(self):
        super().setUp()
        self.run_dir = self.own_script_layout(TRAIN_PY)
        self.write_spec({"version": 1, "name": "own", "command": "python train.py --bf16 True experiment=cloud_scale",
                         "wandb": {"project": "surgical-vqa"}, "outputs": {"dir": "out"}})
        self.write("home/runs/rft-1/env", "HF_TOKEN=%s\nWANDB_API_KEY=%s\nBATCH=4\n" % (HF, WB), mode=0o600)

    def write_spec(self, spec):
        self.write("home/runs/rft-1/spec.json", json.dumps(spec))

    def start(self, mode="ok", extra=()):
        env = runner_env({"PATH": STANDIN_DIR + os.pathsep + os.environ["PATH"], "FAKE_MODE": mode,
                          "RFT_STANDIN_GPU_FIXTURE": os.path.join(FIXTURES, "nvidia-smi", "a100_lms.csv"),
                          "RFT_HOME": self.path("home")})
        argv = [PYTHON, "-m", "remote_finetune", "run", "--run-dir", self.run_dir, "--workdir", self.work,
                "--no-watchdog", "--gpu-interval-ms", "50"] + list(extra)
        return subprocess.Popen(argv, env=env, cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def events(self):
        out = []
        for line in read(os.path.join(self.run_dir, "events.jsonl")).splitlines():
            ev, err = parse_event_line(line)
            self.assertIsNone(err, line)
            out.append(ev)
        return out

    def log(self):
        return read(os.path.join(self.run_dir, "output.log"))

    def wait_file(self, p, timeout=20):
        end = time.time() + timeout
        while time.time() < end and not os.path.exists(p):
            time.sleep(0.05)
        return os.path.exists(p)

    def test_completed_run_events_log_gpu_and_no_secret_anywhere(self):
        p = self.start()
        out, _ = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, out)
        evs = self.events()
        types = [e["type"] for e in evs]
        self.assertEqual(types[0], "started")
        self.assertEqual(types[-1], "finished")
        self.assertEqual(evs[0]["method"], "own-script")
        self.assertRegex(evs[0]["wandb_run_id"], r"^[a-z0-9]{8}$")
        self.assertEqual(read(os.path.join(self.run_dir, "wandb_run_id")).strip(), evs[0]["wandb_run_id"])
        metrics = [e for e in evs if e["type"] == "metrics"]
        self.assertEqual([m["step"] for m in metrics[:2]], [10, 20])
        self.assertEqual(metrics[1]["loss"], 1.9876)
        self.assertEqual([e["eval_loss"] for e in evs if e["type"] == "eval"], [2.0112])
        self.assertEqual(metrics[-1]["extra"]["train_runtime"], 1.5)
        fin = evs[-1]
        self.assertEqual((fin["status"], fin["exit_code"], fin["adapter_path"]), ("completed", 0, "out/adapter"))
        log = self.log()
        self.assertIn("argv ['--bf16', 'True', 'experiment=cloud_scale']", log)
        self.assertIn("wandb run %s surgical-vqa" % evs[0]["wandb_run_id"], log)
        self.assertIn("my token is [REDACTED:HF_TOKEN]", log)
        everything = log + read(os.path.join(self.run_dir, "events.jsonl")) + out.decode()
        self.assertNotIn(HF, everything)
        self.assertNotIn(WB, everything)
        self.assertFalse(os.path.exists(os.path.join(self.run_dir, "runner.pid")), "runner.pid outlived the run")
        gpu_lines = read(os.path.join(self.run_dir, "gpu.csv")).splitlines()
        self.assertGreaterEqual(len(gpu_lines), 1)

    def test_known_failure_becomes_one_error_event_with_hint(self):
        p = self.start("oom")
        p.communicate(timeout=60)
        self.assertEqual(p.returncode, 1)
        evs = self.events()
        errs = [e for e in evs if e["type"] == "error"]
        self.assertEqual(len(errs), 1)
        self.assertEqual(errs[0]["signature"], "cuda-oom")
        self.assertIn("gradient_checkpointing", errs[0]["hint"])
        self.assertEqual((evs[-1]["status"], evs[-1]["exit_code"]), ("failed", 1))

    def test_sigkill_reads_as_the_oom_killer(self):
        p = self.start("sigkill")
        p.communicate(timeout=60)
        evs = self.events()
        self.assertEqual([e.get("signature") for e in evs if e["type"] == "error"], ["oom-killer"])
        self.assertEqual((evs[-1]["status"], evs[-1]["exit_code"]), ("failed", 137))

    def test_sigterm_is_forwarded_and_the_run_ends_interrupted(self):
        p = self.start("wait")
        self.assertTrue(self.wait_file(os.path.join(self.work, "ready")))
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=30)
        self.assertEqual(read(os.path.join(self.work, "saved")), "checkpoint-7")
        self.assertIn("SIGTERM received: saving checkpoint-7", self.log())
        fin = self.events()[-1]
        self.assertEqual((fin["type"], fin["status"], fin["exit_code"]), ("finished", "interrupted", 0))

    def test_a_child_ignoring_sigterm_is_killed_after_the_grace_period(self):
        p = self.start("stubborn", ["--grace-seconds", "0.5"])
        self.assertTrue(self.wait_file(os.path.join(self.work, "ready")))
        t0 = time.time()
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=30)
        self.assertLess(time.time() - t0, 10)
        fin = self.events()[-1]
        self.assertEqual((fin["status"], fin["exit_code"]), ("interrupted", 137))
        self.assertNotIn("oom-killer", [e.get("signature") for e in self.events()])

    def test_workers_outliving_their_launcher_finish_saving_before_finished(self):
        p = self.start("launcher")
        self.assertTrue(self.wait_file(os.path.join(self.work, "ready")))
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=30)
        self.assertEqual(read(os.path.join(self.work, "worker-saved")), "ok")
        fin = self.events()[-1]
        self.assertEqual((fin["type"], fin["status"]), ("finished", "interrupted"))

    def test_bad_spec_ends_with_errors_and_finished_failed(self):
        self.write_spec({"version": 3})
        p = self.start()
        p.communicate(timeout=60)
        self.assertEqual(p.returncode, 2)
        evs = self.events()
        self.assertTrue(any("version" in e.get("message", "") for e in evs if e["type"] == "error"))
        self.assertEqual((evs[-1]["type"], evs[-1]["status"], evs[-1]["exit_code"]), ("finished", "failed", 2))

    def test_world_readable_env_file_is_warned_about_without_values(self):
        os.chmod(os.path.join(self.run_dir, "env"), 0o644)
        p = self.start()
        p.communicate(timeout=60)
        warn = [e for e in self.events() if e["type"] == "warning" and e.get("code") == "env-file"]
        self.assertEqual(len(warn), 1)
        self.assertNotIn(HF, warn[0]["message"])

    def test_plan_prints_the_argv(self):
        r = subprocess.run([PYTHON, "-m", "remote_finetune", "plan", "--run-dir", self.run_dir, "--workdir", self.work, "--python", "/venv/bin/python"],
                           env=runner_env(), stdout=subprocess.PIPE, check=True)
        self.assertEqual(json.loads(r.stdout), {"mode": "own-script", "argv": ["/venv/bin/python", "train.py", "--bf16", "True", "experiment=cloud_scale"]})


if __name__ == "__main__":
    unittest.main()


SLOW_PIP_PYTHON = r'''#!/bin/sh
# A training interpreter whose pip takes 3 s to answer (pip's imports on a large environment); anything else is Python.
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then sleep 3; echo "slow-pip==1.0"; exit 0; fi
exec "%s" "$@"
'''


class EnvironmentRecordDoesNotDelayTraining(TempDirTest):
    """The pip freeze record is taken beside the training process, not before it: a run's first line (what the
    user waits for after Start) does not wait for pip."""

    def test_training_starts_before_pip_freeze_ends_and_the_record_is_complete_at_the_end(self):
        run_dir = self.own_script_layout("import time\nprint('first line at', time.time(), flush=True)\n",
                                         spec={"version": 1, "name": "own", "command": "python train.py"})
        python = self.write("bin/python", SLOW_PIP_PYTHON % sys.executable, mode=0o755)
        os.chmod(python, 0o755)
        env = runner_env({"PATH": STANDIN_DIR + os.pathsep + os.environ["PATH"], "RFT_STANDIN_MODE": "no-gpu",
                          "RFT_HOME": self.path("home")})
        t0 = time.time()
        p = subprocess.run([PYTHON, "-m", "remote_finetune", "run", "--run-dir", run_dir, "--workdir", self.work, "--python", python,
                            "--no-watchdog", "--no-gpu-sampler"], env=env, cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout)
        first = [l for l in read(os.path.join(run_dir, "output.log")).splitlines() if l.startswith("first line at")]
        self.assertEqual(len(first), 1, read(os.path.join(run_dir, "output.log")))
        waited = float(first[0].split()[-1]) - t0
        self.assertLess(waited, 2.5, "the training process started %.1f s after the runner: it waited for pip freeze (3 s)" % waited)
        self.assertEqual(read(os.path.join(run_dir, "pip-freeze.txt")), "slow-pip==1.0\n", "the record is written before the run ends")
        self.assertGreaterEqual(time.time() - t0, 3.0, "the runner ends only once the record is written")
