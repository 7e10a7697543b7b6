"""Stall detection with the built-in trainer (issue 36.3): real transformers/peft on CPU, a tiny llama, logging only
every 50 steps. The trainer's callback reports every optimizer step to the runner's stall watch, so a 30 s limit
raises nothing while it trains (a watch on logged lines alone would see 50 steps of silence), and nothing while the
model loads (no step yet). fp32, and a limit well above a step: bf16 steps on some CPU builds took 7-11 s each
under CI load (hf4 lock), which a tighter limit rightly calls a stall. Then the training process is frozen with SIGSTOP (alive, no progress: a hang as the
kernel shows it) and the watch reports `stalled` with the last step and the process `stopped`, stops the run
(`on_stall: stop`: SIGTERM, SIGKILL after the grace period) and the run ends `stalled`."""

import os
import signal
import sys
import time
from typing import List

from tests_training.test_training import Case, base_spec, read_events, tiny_model


class BuiltInStall(Case):
    def argv(self) -> List[str]:
        return [sys.executable, "-m", "remote_finetune", "run", "--run-dir", self.run_dir, "--workdir", self.workdir,
                "--no-gpu-sampler", "--no-watchdog", "--grace-seconds", "3"]

    def test_a_frozen_trainer_is_reported_stalled_and_stopped_and_a_training_one_never(self):
        model = tiny_model("llama")
        self.data("text-jsonl", "data/train.jsonl")
        spec = base_spec(model, trainer={"max_steps": 200000, "save_steps": 1000000, "logging_steps": 50, "precision": "fp32"},
                         watchdog={"stall_minutes": 0.5, "on_stall": "stop"})
        p = self.start(spec)
        self.addCleanup(lambda: p.poll() is None and (p.kill(), p.communicate(timeout=30)))
        progress = os.path.join(self.run_dir, "step_progress")

        def step() -> int:
            try:
                with open(progress) as f:
                    return int(f.read().strip() or 0)
            except (OSError, ValueError):
                return 0

        deadline = time.time() + 300
        while time.time() < deadline and p.poll() is None and step() < 5:
            time.sleep(0.2)
        self.assertGreaterEqual(step(), 5, self.output()[-3000:])
        time.sleep(35)  # longer than the limit, still training: no stall
        self.assertEqual([e for e in read_events(self.run_dir) if e["type"] == "stalled"], [], "a training run was called stalled")
        with open(os.path.join(self.run_dir, "train.pgid")) as f:
            pgid = int(f.read().split()[0])
        os.killpg(pgid, signal.SIGSTOP)
        frozen_at = step()
        try:
            p.communicate(timeout=120)
        finally:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except OSError:
                pass
        events = read_events(self.run_dir)
        msg = "%s\n%s" % ([(e["type"], e.get("code")) for e in events], self.output()[-2000:])
        stalled = [e for e in events if e["type"] == "stalled"]
        self.assertEqual(len(stalled), 1, msg)
        self.assertEqual((stalled[0]["process_state"], stalled[0]["action"], stalled[0]["threshold_s"]), ("stopped", "stop", 30.0), msg)
        self.assertGreaterEqual(stalled[0]["last_step"], frozen_at - 1, msg)
        self.assertGreater(stalled[0]["step_time_s"], 0)
        self.assertEqual((events[-1]["type"], events[-1]["status"]), ("finished", "stalled"), msg)
        print("built-in stall: frozen at step %d, stalled after %.1f s (measured %.3f s a step)"
              % (stalled[0]["last_step"], stalled[0]["stalled_s"], stalled[0]["step_time_s"]))
