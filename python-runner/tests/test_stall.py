"""Stall detection on training progress (issue 36.3): stall.py's threshold and watch on a fake clock, and a real
`python -m remote_finetune run` whose own script prints Trainer-style step lines and then hangs mid-run, with
`watchdog.stall_minutes` in seconds' worth: a `stalled` event with the last step and the process's state, the host
notification (a loopback webhook receiver standing in for Slack/ntfy), and with `on_stall: stop` the run ends as
`stalled`, never `failed` or `completed`. A stand-in nvidia-smi (tests/standins) gives the GPU utilisation."""

import json
import os
import signal
import subprocess
import time
import unittest

from remote_finetune import run_folder, stall
from remote_finetune.events import parse_event_line
from tests.helpers import FIXTURES, PYTHON, RUNNER_DIR, TempDirTest, read, runner_env
from tests.test_budget import Clock
from tests.test_notify import Receiver


class Threshold(unittest.TestCase):
    def test_default_is_twenty_steps_of_the_measured_step_time_and_at_least_ten_minutes(self):
        c = stall.StepClock()
        for i in range(11):
            c.see(i, 1000.0 + 2.0 * i)  # 2 s a step: 20 steps are 40 s, under the floor
        self.assertEqual(c.step_time_s(), 2.0)
        self.assertEqual(c.threshold_s(None), 600.0)
        slow = stall.StepClock()
        for i in range(3):
            slow.see(i, 60.0 * i)  # a minute a step: 20 minutes
        self.assertEqual(slow.threshold_s(None), 1200.0)
        self.assertEqual(slow.threshold_s(3.0), 3.0, "the spec's stall_minutes wins")

    def test_sparse_logging_widens_the_default(self):
        c = stall.StepClock()
        for i in range(4):
            c.see(100 * i, 400.0 * i)  # logged every 100 steps of 4 s: 400 s between lines
        self.assertEqual(c.threshold_s(None), 1200.0)

    def test_a_repeated_or_lower_step_is_not_progress(self):
        c = stall.StepClock()
        self.assertTrue(c.see(5, 1.0))
        self.assertFalse(c.see(5, 2.0))
        self.assertFalse(c.see(4, 3.0))
        self.assertEqual(c.last, (5, 1.0))

    def test_settings_from_the_spec(self):
        self.assertEqual(stall.settings({}), (None, "notify"))
        self.assertEqual(stall.settings({"watchdog": {"stall_minutes": 0.5, "on_stall": "stop"}}), (30.0, "stop"))


class Watch(TempDirTest):
    def watcher(self, fixed, action, clock):
        self.events, self.notes, self.stops = [], [], []
        return stall.StallWatcher(self.tmp, fixed, action, lambda t, **kw: self.events.append((t, kw)),
                                  lambda w, b, u: self.notes.append(w), lambda: self.stops.append(1), lambda: os.getpid(), clock=clock)

    def metrics(self, step):
        with open(self.path("events.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps({"v": 1, "ts": 1.0, "type": "metrics", "step": step}) + "\n")

    def test_nothing_before_the_first_step_then_one_report_per_stall(self):
        clock = Clock(1000.0)
        w = self.watcher(60.0, "notify", clock)
        clock.t += 3600
        w.check()
        self.assertEqual(self.events, [], "model loading has no steps: no stall before the first")
        self.metrics(1)
        w.check()
        clock.t += 59
        w.check()
        self.assertEqual(self.events, [])
        clock.t += 2
        w.check()
        w.check()
        self.assertEqual([t for t, _ in self.events], ["stalled"])
        kw = self.events[0][1]
        self.assertEqual((kw["last_step"], kw["action"], kw["threshold_s"], kw["process_state"]), (1, "notify", 60.0, "running"))
        self.assertEqual(self.notes, ["stalled at step 1"])
        self.assertEqual(self.stops, [])
        # Steps again, then quiet again: a second report.
        stall.write_progress(self.tmp, 2)
        w.check()
        clock.t += 61
        w.check()
        self.assertEqual([kw["last_step"] for _, kw in self.events], [1, 2])

    def test_an_evaluation_writing_the_same_step_again_is_no_stall(self):
        clock = Clock(1000.0)
        w = self.watcher(60.0, "stop", clock)
        stall.write_progress(self.tmp, 7)
        w.check()
        for _ in range(5):  # five minutes of evaluation batches, no optimizer step
            clock.t += 59
            os.utime(self.path(run_folder.STEP_PROGRESS), (clock.t, clock.t))
            w.check()
        self.assertEqual((self.events, self.stops), ([], []))
        clock.t += 61  # and then nothing at all
        w.check()
        self.assertEqual([kw["last_step"] for _, kw in self.events], [7])
        self.assertEqual(self.stops, [1])


class BuiltInTrainerSteps(TempDirTest):
    def test_the_callback_reports_every_optimizer_step_to_the_watch_at_most_once_a_second(self):
        from remote_finetune.callback import EventsCallbackCore
        from remote_finetune.events import EventWriter

        clock = Clock(100.0)
        core = EventsCallbackCore(EventWriter(self.path("events.jsonl")), run_id="rft-1", model="m", method="qlora", clock=clock,
                                  marker_dir=self.tmp)
        core.step_end(1)
        clock.t += 0.5
        core.step_end(2)
        self.assertEqual(read(self.path(run_folder.STEP_PROGRESS)).strip(), "1")
        clock.t += 0.6
        core.step_end(3)
        self.assertEqual(read(self.path(run_folder.STEP_PROGRESS)).strip(), "3")
        w = stall.StallWatcher(self.tmp, 60.0, "notify", lambda t, **kw: None, lambda *a: None, lambda: None, lambda: None, clock=clock)
        w.check()
        self.assertEqual(w.steps.last, (3, clock.t), "no metrics line was logged; the step came from the callback")


# An own script that prints what HF Trainer prints for 5 steps, then hangs as a deadlocked collective would: alive,
# asleep, no more steps. It ignores SIGTERM, as a process stuck in a C call does, so the runner's grace period ends it.
HANGING_PY = r'''
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
for step in range(1, 6):
    time.sleep(0.2)
    print({"loss": 2.0 - step / 10, "learning_rate": 1e-4, "epoch": step / 100, "step": step}, flush=True)
print("waiting on a collective that never completes", flush=True)
time.sleep(600)
print("never reached", flush=True)
'''


class HangingScript(TempDirTest):
    def run_hanging(self, on_stall):
        hook = Receiver()
        self.addCleanup(hook.close)
        spec = {"version": 1, "name": "hang-ft", "command": "python train.py", "outputs": {"dir": "out"},
                # 3 s: the threshold goes down to seconds for a test through the spec itself (minutes, fractions allowed).
                "watchdog": {"stall_minutes": 0.05, "on_stall": on_stall}}
        run_dir = self.own_script_layout(HANGING_PY, spec=spec)
        self.write("home/runs/rft-1/env", "RFT_NOTIFY_WEBHOOK=%s/hook-s3cret\n" % hook.url, mode=0o600)
        env = runner_env({"RFT_HOME": self.path("home"), "RFT_STANDIN_MODE": "loop",
                          "RFT_STANDIN_GPU_FIXTURE": os.path.join(FIXTURES, "nvidia-smi", "a100_lms.csv"),
                          "PATH": os.path.join(RUNNER_DIR, "tests", "standins") + os.pathsep + os.environ.get("PATH", "")})
        argv = [PYTHON, "-m", "remote_finetune", "run", "--run-dir", run_dir, "--workdir", self.work, "--no-watchdog",
                "--gpu-interval-ms", "200", "--grace-seconds", "2"]
        p = subprocess.Popen(argv, env=env, cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.addCleanup(self.end, p, run_dir)
        return p, run_dir, hook

    def end(self, p, run_dir):
        """Whatever the test saw, nothing it started outlives it: the runner, then the script's own session."""
        if p.poll() is None:
            p.kill()
            p.communicate(timeout=30)
        try:
            os.killpg(int(read(os.path.join(run_dir, "train.pgid")).split()[0]), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            pass

    def events(self, run_dir):
        evs = []
        path = os.path.join(run_dir, "events.jsonl")
        for line in (read(path) if os.path.exists(path) else "").splitlines():
            ev, err = parse_event_line(line)
            self.assertIsNone(err, line)
            evs.append(ev)
        return evs

    def test_on_stall_stop_reports_notifies_and_ends_the_run_as_stalled(self):
        t0 = time.time()
        p, run_dir, hook = self.run_hanging("stop")
        out, _ = p.communicate(timeout=120)
        took = time.time() - t0
        evs = self.events(run_dir)
        msg = "%s\n%s\n%s" % (out.decode(errors="replace")[-2000:], [(e["type"], e.get("code")) for e in evs], read(os.path.join(run_dir, "output.log"))[-1500:])
        stalled = [e for e in evs if e["type"] == "stalled"]
        self.assertEqual(len(stalled), 1, msg)
        s = stalled[0]
        self.assertEqual((s["last_step"], s["action"], s["threshold_s"]), (5, "stop", 3.0), msg)
        self.assertGreaterEqual(s["stalled_s"], 3.0)
        self.assertEqual(s["process_state"], "sleeping", msg)
        self.assertIn("gpu_util_pct", s, "the nvidia-smi stand-in samples every 200 ms: gpu.csv had a utilisation")
        self.assertTrue(0 <= s["gpu_util_pct"] <= 100)
        fin = evs[-1]
        self.assertEqual((fin["type"], fin["status"]), ("finished", "stalled"), msg)
        self.assertNotIn("never reached", read(os.path.join(run_dir, "output.log")))
        texts = [json.loads(b)["text"] for _, _, b in hook.posts]
        self.assertEqual(len(texts), 2, texts)
        self.assertRegex(texts[0], r"^hang-ft on .+: stalled at step 5, stopping: no optimizer step for \d+ s \(limit 3 s\) while the training process is sleeping")
        self.assertRegex(texts[1], r"^hang-ft stalled on ")
        self.assertEqual(json.loads(hook.posts[1][2])["run"]["status"], "stalled")
        print("test_stall: hung after step 5; stalled event after %.1f s quiet, run ended as stalled %.1f s after start" % (s["stalled_s"], took))

    def test_on_stall_notify_reports_once_and_leaves_the_run_alone(self):
        p, run_dir, hook = self.run_hanging("notify")
        try:
            deadline = time.time() + 60
            while time.time() < deadline and not any(e["type"] == "stalled" for e in self.events(run_dir)):
                time.sleep(0.2)
            time.sleep(4)  # more than the threshold again: still one report, the run still alive
            evs = self.events(run_dir)
            self.assertEqual([e["action"] for e in evs if e["type"] == "stalled"], ["notify"])
            self.assertIsNone(p.poll(), "on_stall notify must not end the run")
            self.assertFalse(any(e["type"] == "finished" for e in evs))
            self.assertEqual(len(hook.posts), 1)
        finally:
            p.terminate()
            p.communicate(timeout=60)


if __name__ == "__main__":
    unittest.main()
