"""What a run actually used (issue 32.4): measured.py's figures and the `finished` event's `measured` field
from a real `python -m remote_finetune run`. The training loop is a stand-in that uses the real callback core
(EventsCallbackCore with its RankRecorder), reporting torch peaks through a stand-in function since this
machine has no GPU; nvidia-smi is the stand-in in tests/standins printing test/fixtures/nvidia-smi/a100_lms.csv
(peak memory.used 24612 MiB)."""

import json
import os
import subprocess
import unittest
from unittest import mock

from remote_finetune import measured
from remote_finetune.events import parse_event_line
from tests.helpers import FIXTURES, PYTHON, RUNNER_DIR, TempDirTest, read, runner_env

STANDIN_DIR = os.path.join(RUNNER_DIR, "tests", "standins")
T0 = 1_800_000_000.0

TRAIN_PY = r'''
import os, time
from remote_finetune.callback import EventsCallbackCore
from remote_finetune.events import EventWriter
from remote_finetune.measured import RankRecorder
peaks = {"index": 0, "torch_peak_allocated_mib": 29750.5, "torch_peak_reserved_mib": 31952.0}
rec = RankRecorder(os.environ["RFT_RUN_DIR"], 0, peaks=lambda: peaks)
core = EventsCallbackCore(EventWriter(os.environ["RFT_EVENTS_FILE"]), run_id="rft-1", model="stand-in", method="own-script", recorder=rec)
time.sleep(0.3)  # the model load
core.train_begin(True, None, None, 0, 0)
tokens = 0
for step in range(1, 41):
    time.sleep(0.02)
    core.step_end()
    # 2048 tokens a step: the first window is slow (warm-up), then about 2048 / 0.02 s.
    tokens += 2048
    if step % 4 == 0:
        if step == 4:
            time.sleep(0.5)
        core.log(True, {"loss": 2.0}, step, tokens)
'''


class Collect(TempDirTest):
    def test_figures_from_rank_files_gpu_csv_and_metrics(self):
        d = self.path("run")
        os.makedirs(d)
        with open(os.path.join(d, "measured-rank0.json"), "w") as f:
            json.dump({"index": 2, "torch_peak_allocated_mib": 100.0, "torch_peak_reserved_mib": 120.0, "first_step_at": T0 + 42.5}, f)
        with open(os.path.join(d, "measured-rank1.json"), "w") as f:
            json.dump({"index": 3, "torch_peak_allocated_mib": 101.0, "first_step_at": T0 + 43.0}, f)
        with open(os.path.join(d, "gpu.csv"), "w") as f:
            f.write("%f, 2, NVIDIA H100, 90, 50, 130, 81559, 60, 500, 700, 1980\n" % (T0 - 5))  # before this run: not counted
            f.write("%f, 2, NVIDIA H100, 90, 50, 125, 81559, 60, 500, 700, 1980\n" % (T0 + 50))
            f.write("%f, 3, NVIDIA H100, 90, 50, 127, 81559, 60, 500, 700, 1980\n" % (T0 + 50))
            f.write("%f, 2, NVIDIA H100, 90, 50, [N/A], 81559, 60, 500, 700, 1980\n" % (T0 + 51))
        with open(os.path.join(d, "events.jsonl"), "w") as f:
            for i, tps in enumerate([100.0, 2000.0, 2100.0, 2200.0, 2300.0, 2400.0, 2500.0, 2600.0, 2700.0, 2800.0, 2900.0, 3000.0]):
                f.write(json.dumps({"v": 1, "ts": T0 + 60 + i, "type": "metrics", "step": 10 * (i + 1), "tokens_per_second": tps}) + "\n")
        got = measured.collect(d, T0)
        self.assertEqual(got, {
            "gpus": [{"index": 2, "torch_peak_allocated_mib": 100.0, "torch_peak_reserved_mib": 120.0, "smi_peak_mib": 125.0},
                     {"index": 3, "torch_peak_allocated_mib": 101.0, "smi_peak_mib": 127.0}],
            # 12 windows: the first is warm-up, the median of the other 11 is 2500.
            "tokens_per_second": 2500.0,
            "first_step_s": 42.5,
        })
        self.assertEqual(measured.collect(self.path("none"), T0), {})

    def test_the_recorder_keeps_the_first_step_and_rewrites_the_peaks(self):
        now = [T0]
        peaks = {"index": 0, "torch_peak_allocated_mib": 1.0}
        r = measured.RankRecorder(self.tmp, 1, clock=lambda: now[0], peaks=lambda: dict(peaks))
        r.step()
        now[0] += 5
        r.step()
        peaks["torch_peak_allocated_mib"] = 7.0
        r.write()
        with open(os.path.join(self.tmp, "measured-rank1.json")) as f:
            self.assertEqual(json.load(f), {"index": 0, "torch_peak_allocated_mib": 7.0, "first_step_at": T0})


    def test_the_recorder_writes_only_when_a_figure_changed(self):
        peaks = {"index": 0, "torch_peak_allocated_mib": 1.0}
        r = measured.RankRecorder(self.tmp, 0, clock=lambda: T0, peaks=lambda: dict(peaks))
        replaced = []
        real = os.replace
        with mock.patch.object(measured.os, "replace", side_effect=lambda a, b: (replaced.append(b), real(a, b))):
            r.step()
            for _ in range(50):  # one log per step, the peaks unchanged: nothing to rewrite
                r.write()
            peaks["torch_peak_allocated_mib"] = 2.0
            r.write()
            r.write()
        self.assertEqual(len(replaced), 2, "measured-rank0.json rewritten %d times for 2 distinct contents" % len(replaced))
        with open(os.path.join(self.tmp, "measured-rank0.json")) as f:
            self.assertEqual(json.load(f)["torch_peak_allocated_mib"], 2.0)


class MeasuredRun(TempDirTest):
    def test_the_finished_event_carries_what_the_run_used(self):
        run_dir = self.own_script_layout(TRAIN_PY, spec={"version": 1, "name": "m", "command": "python train.py", "outputs": {"dir": "out"}})
        env = runner_env({"PATH": STANDIN_DIR + os.pathsep + os.environ["PATH"], "RFT_HOME": self.path("home"),
                          "RFT_STANDIN_GPU_FIXTURE": os.path.join(FIXTURES, "nvidia-smi", "a100_lms.csv")})
        argv = [PYTHON, "-m", "remote_finetune", "run", "--run-dir", run_dir, "--workdir", self.work, "--no-watchdog", "--gpu-interval-ms", "50"]
        p = subprocess.run(argv, env=env, cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        evs = []
        for line in read(os.path.join(run_dir, "events.jsonl")).splitlines():
            ev, err = parse_event_line(line)
            self.assertIsNone(err, line)
            evs.append(ev)
        fin = evs[-1]
        self.assertEqual((fin["type"], fin["status"]), ("finished", "completed"), p.stdout.decode()[-2000:])
        m = fin.get("measured")
        self.assertIsNotNone(m, fin)
        self.assertEqual(m["gpus"], [{"index": 0, "torch_peak_allocated_mib": 29750.5, "torch_peak_reserved_mib": 31952.0, "smi_peak_mib": 24612.0}])
        # After the slow first window: 4 steps × 2048 tokens in about 4 × 0.02 s (sleep granularity and load make it less).
        self.assertGreater(m["tokens_per_second"], 20000.0, m)
        self.assertLess(m["tokens_per_second"], 2048 / 0.02 * 1.05, m)
        # The runner starts the script, which loads for 0.3 s before its first step.
        self.assertGreater(m["first_step_s"], 0.3, m)
        self.assertLess(m["first_step_s"], 30.0, m)
        if os.environ.get("RFT_WRITE_FIXTURES") == "1":
            with open(os.path.join(FIXTURES, "events", "measured_run.jsonl"), "w") as f:
                f.write(read(os.path.join(run_dir, "events.jsonl")))


if __name__ == "__main__":
    unittest.main()
