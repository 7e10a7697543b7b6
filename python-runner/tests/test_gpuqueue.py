"""The host's queue (gpuqueue.py) with real runners: `python -m remote_finetune run` processes sharing one
RFT_HOME, on a host whose nvidia-smi is a STAND-IN (no GPU here) reporting RFT_TEST_GPUS GPUs."""

import json
import os
import signal
import subprocess
import time
import unittest

from remote_finetune import gpuqueue
from remote_finetune.events import parse_event_line
from tests.helpers import PYTHON, TempDirTest, read, runner_env

FAKE_SMI = r'''#!/usr/bin/env python3
import os, sys
if any(a.startswith("--query-gpu=index") for a in sys.argv[1:]):
    for i in range(int(os.environ.get("RFT_TEST_GPUS", "1"))):
        print(i)
    sys.exit(0)
sys.exit(9)
'''

TRAIN_PY = r'''
import os, sys, time
print("begin %.3f cuda=%s" % (time.time(), os.environ.get("CUDA_VISIBLE_DEVICES")), flush=True)
time.sleep(float(os.environ.get("HOLD_S", "1.5")))
print("end %.3f" % time.time(), flush=True)
'''


class QueueRuns(TempDirTest):
    def setUp(self):
        super().setUp()
        self.work = self.path("work")
        os.makedirs(self.work)
        self.write("work/train.py", TRAIN_PY)
        os.makedirs(self.path("bin"))
        self.write("bin/nvidia-smi", FAKE_SMI, mode=0o755)
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        super().tearDown()

    def start(self, run_id, gpus=1, hold=1.5, spec_extra=None, env_file=""):
        run_dir = self.path("home", "runs", run_id)
        os.makedirs(run_dir)
        spec = {"version": 1, "name": run_id, "command": "python train.py"}
        spec.update(spec_extra or {})
        self.write("home/runs/%s/spec.json" % run_id, json.dumps(spec))
        self.write("home/runs/%s/env" % run_id, env_file, mode=0o600)
        env = runner_env({"PATH": self.path("bin") + os.pathsep + os.environ["PATH"], "RFT_HOME": self.path("home"),
                          "RFT_TEST_GPUS": str(gpus), "HOLD_S": str(hold), "RFT_QUEUE_POLL_S": "0.1"})
        p = subprocess.Popen([PYTHON, "-m", "remote_finetune", "run", "--run-dir", run_dir, "--workdir", self.work,
                              "--no-watchdog", "--no-gpu-sampler"], env=env, cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.procs.append(p)
        return p

    def events(self, run_id):
        out = []
        for line in read(self.path("home", "runs", run_id, "events.jsonl")).splitlines():
            ev, err = parse_event_line(line)
            self.assertIsNone(err, line)
            out.append(ev)
        return out

    def log(self, run_id):
        path = self.path("home", "runs", run_id, "output.log")
        return read(path) if os.path.exists(path) else ""

    def times(self, run_id):
        words = {l.split()[0]: l.split() for l in self.log(run_id).splitlines() if l.startswith(("begin ", "end "))}
        return float(words["begin"][1]), float(words["end"][1]), words["begin"][2].split("=", 1)[1]

    def wait_event(self, run_id, type_, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            p = self.path("home", "runs", run_id, "events.jsonl")
            if os.path.exists(p) and any(e["type"] == type_ for e in self.events(run_id)):
                return
            time.sleep(0.05)
        self.fail("no %s event for %s" % (type_, run_id))

    def finish(self, p):
        out, _ = p.communicate(timeout=60)
        return p.returncode, out

    def test_one_gpu_runs_wait_in_order_and_each_gets_the_gpu_after_the_one_before(self):
        a = self.start("rft-a")
        self.wait_event("rft-a", "assigned")
        b = self.start("rft-b")
        self.wait_event("rft-b", "queued")
        c = self.start("rft-c")
        self.wait_event("rft-c", "queued")
        for p in (a, b, c):
            self.assertEqual(self.finish(p)[0], 0)
        ta, tb, tc = self.times("rft-a"), self.times("rft-b"), self.times("rft-c")
        self.assertGreaterEqual(tb[0], ta[1], "b trained while a held the GPU")
        self.assertGreaterEqual(tc[0], tb[1], "c overtook b or overlapped it")
        self.assertEqual((ta[2], tb[2], tc[2]), ("0", "0", "0"))
        qb = [e["position"] for e in self.events("rft-b") if e["type"] == "queued"]
        qc = [e["position"] for e in self.events("rft-c") if e["type"] == "queued"]
        self.assertEqual(qb, [1])
        self.assertEqual(qc, [2, 1])
        ab = next(e for e in self.events("rft-b") if e["type"] == "assigned")
        self.assertEqual(ab["gpus"], [0])
        self.assertGreater(ab["waited_s"], 0.5)
        self.assertEqual(os.listdir(self.path("home", "queue")), [])

    def test_two_gpus_run_two_single_gpu_runs_side_by_side_on_different_devices(self):
        a = self.start("rft-a", gpus=2)
        b = self.start("rft-b", gpus=2)
        for p in (a, b):
            self.assertEqual(self.finish(p)[0], 0)
        ta, tb = self.times("rft-a"), self.times("rft-b")
        self.assertLess(max(ta[0], tb[0]), min(ta[1], tb[1]), "the two runs did not overlap")
        self.assertEqual(sorted([ta[2], tb[2]]), ["0", "1"])
        for r in ("rft-a", "rft-b"):
            # Started together, one may find the other's ticket ahead and take its GPU a poll later.
            self.assertLess(next(e for e in self.events(r) if e["type"] == "assigned")["waited_s"], 1.0)

    def test_a_two_gpu_run_waits_for_both_and_a_later_one_gpu_run_does_not_overtake_it(self):
        a = self.start("rft-a", gpus=2, hold=1.5)
        self.wait_event("rft-a", "assigned")
        b = self.start("rft-b", gpus=2, hold=1.0, spec_extra={"launcher": {"num_processes": 2}})
        self.wait_event("rft-b", "queued")
        c = self.start("rft-c", gpus=2, hold=0.5)
        for p in (a, b, c):
            self.assertEqual(self.finish(p)[0], 0)
        ta, tb, tc = self.times("rft-a"), self.times("rft-b"), self.times("rft-c")
        self.assertEqual(tb[2], "0,1")
        self.assertGreaterEqual(tb[0], ta[1])
        self.assertGreaterEqual(tc[0], tb[0], "the one-GPU run overtook the two-GPU run ahead of it")

    def test_stopping_a_queued_run_ends_it_stopped_without_running_the_script(self):
        a = self.start("rft-a", hold=2.0)
        self.wait_event("rft-a", "assigned")
        b = self.start("rft-b")
        self.wait_event("rft-b", "queued")
        b.send_signal(signal.SIGTERM)
        rc, _ = self.finish(b)
        self.assertEqual(rc, 128 + signal.SIGTERM)
        evs = self.events("rft-b")
        self.assertEqual((evs[-1]["type"], evs[-1]["status"]), ("finished", "stopped"))
        self.assertNotIn("begin", self.log("rft-b"))
        self.assertEqual(self.finish(a)[0], 0)
        self.assertEqual(os.listdir(self.path("home", "queue")), [])

    def test_a_runner_killed_outright_frees_its_gpu(self):
        a = self.start("rft-a", hold=30)
        self.wait_event("rft-a", "assigned")
        b = self.start("rft-b", hold=0.2)
        self.wait_event("rft-b", "queued")
        a.kill()  # SIGKILL: no cleanup code runs; the kernel drops the flock
        a.wait()
        self.assertEqual(self.finish(b)[0], 0)
        self.assertIn("cuda=0", self.log("rft-b"))

    def test_a_users_own_cuda_visible_devices_is_the_slot_and_is_kept(self):
        a = self.start("rft-a", gpus=2, env_file="CUDA_VISIBLE_DEVICES=1\n")
        b = self.start("rft-b", gpus=2, env_file="CUDA_VISIBLE_DEVICES=1\n", hold=0.2)
        for p in (a, b):
            self.assertEqual(self.finish(p)[0], 0)
        ta, tb = self.times("rft-a"), self.times("rft-b")
        self.assertEqual((ta[2], tb[2]), ("1", "1"))
        first, second = sorted([ta, tb])
        self.assertGreaterEqual(second[0], first[1], "two runs pinned to GPU 1 overlapped")

    def test_no_gpu_means_no_queue(self):
        self.assertEqual(gpuqueue.gpu_indices(os.path.join(self.tmp, "missing-nvidia-smi")), [])
        a = self.start("rft-a", gpus=0, hold=1.0)
        b = self.start("rft-b", gpus=0, hold=1.0)
        for p in (a, b):
            self.assertEqual(self.finish(p)[0], 0)
        ta, tb = self.times("rft-a"), self.times("rft-b")
        self.assertLess(max(ta[0], tb[0]), min(ta[1], tb[1]))
        self.assertEqual((ta[2], tb[2]), ("None", "None"))


class Wanted(unittest.TestCase):
    def test_gpus_wanted_from_the_launcher_or_the_target(self):
        self.assertEqual(gpuqueue.gpus_wanted({}), 1)
        self.assertEqual(gpuqueue.gpus_wanted({"target": {"gpu_count": 4}}), 4)
        self.assertEqual(gpuqueue.gpus_wanted({"launcher": {"num_processes": 8, "num_machines": 2}, "target": {"gpu_count": 1}}), 4)
        self.assertEqual(gpuqueue.gpus_wanted({"launcher": {"num_processes": True}}), 1)
        self.assertEqual(gpuqueue.pinned_devices({"CUDA_VISIBLE_DEVICES": "2, 0"}), [0, 2])
        self.assertIsNone(gpuqueue.pinned_devices({"CUDA_VISIBLE_DEVICES": "GPU-1234"}))
        self.assertIsNone(gpuqueue.pinned_devices({}))


if __name__ == "__main__":
    unittest.main()
