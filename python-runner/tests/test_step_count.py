"""The step a run reports is the step it trained to: a 30-step run ends at step 30 (issue 18.3).

An own script that prints no tqdm bar the parser recognises has its steps counted from its training
log lines. Its end-of-training summary ({'train_runtime': ...}) and evaluation dicts are printed at the
step of the last training line; counting them as steps made the demo's 30-step run end at step 31.
The end-to-end test runs the demo's own stand-in script (examples/demo-host-own-script/train.py)
through `python -m remote_finetune run`, as the detached wrapper starts it.
"""

import json
import os
import shutil
import subprocess
import unittest

from remote_finetune.events import parse_event_line
from remote_finetune.hfmetrics import TrainerOutputParser
from tests.helpers import PYTHON, REPO_DIR, TempDirTest, read, runner_env

DEMO_SCRIPT = os.path.join(REPO_DIR, "examples", "demo-host-own-script", "train.py")


class ParserSteps(unittest.TestCase):
    def test_summary_and_eval_lines_keep_the_last_training_step(self):
        p = TrainerOutputParser()
        steps = [p.feed("{'loss': %s, 'epoch': %s}" % (1.0 / s, s / 3))[1]["step"] for s in (1, 2, 3)]
        ev = p.feed("{'eval_loss': 0.5, 'eval_runtime': 1.0, 'epoch': 1.0}")
        summary = p.feed("{'train_runtime': 1.0, 'train_loss': 0.6, 'epoch': 1.0}")
        self.assertEqual(steps, [1, 2, 3])
        self.assertEqual((ev[0], ev[1]["step"]), ("eval", 3))
        self.assertEqual((summary[0], summary[1]["step"]), ("metrics", 3))

    def test_a_dict_that_is_not_a_training_log_does_not_count(self):
        p = TrainerOutputParser()
        self.assertIsNone(p.feed("{'total_flos': 12.0}"))
        self.assertEqual(p.feed("{'loss': 1.0, 'epoch': 0.5}")[1]["step"], 1)

    def test_a_progress_bar_still_decides_the_step(self):
        p = TrainerOutputParser()
        p.feed(" 100%|##########| 30/30 [00:05<00:00,  6.00it/s]")
        self.assertEqual(p.feed("{'train_runtime': 5.0, 'train_loss': 0.6, 'epoch': 1.0}")[1]["step"], 30)


class DemoScriptRun(TempDirTest):
    def test_a_30_step_run_ends_at_step_30(self):
        work = self.path("work")
        run_dir = self.path("home", "runs", "rft-steps")
        os.makedirs(work)
        os.makedirs(run_dir)
        shutil.copy(DEMO_SCRIPT, os.path.join(work, "train.py"))
        with open(os.path.join(run_dir, "spec.json"), "w", encoding="utf-8") as f:
            json.dump({"version": 1, "name": "steps", "command": "python train.py --steps 30 --sleep 0",
                       "outputs": {"dir": "outputs"}}, f)
        self.write("home/runs/rft-steps/env", "BATCH=4\n", mode=0o600)
        # No nvidia-smi stand-in on PATH: this test is about steps, and the host has no GPU.
        env = runner_env({"RFT_HOME": self.path("home"), "PATH": os.environ.get("PATH", "")})
        r = subprocess.run([PYTHON, "-m", "remote_finetune", "run", "--run-dir", run_dir, "--workdir", work, "--no-watchdog"],
                           env=env, cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout.decode(errors="replace"))
        events = []
        for line in read(os.path.join(run_dir, "events.jsonl")).splitlines():
            ev, err = parse_event_line(line)
            self.assertIsNone(err, line)
            events.append(ev)
        metrics = [e for e in events if e["type"] == "metrics"]
        training = [m["step"] for m in metrics if "loss" in m]
        self.assertEqual(training, list(range(1, 31)))
        self.assertEqual(max(m["step"] for m in metrics), 30)
        self.assertEqual(metrics[-1]["step"], 30, metrics[-1])
        self.assertIn("train_runtime", metrics[-1].get("extra", {}))
        self.assertEqual(events[-1]["type"], "finished")
        self.assertEqual(events[-1]["status"], "completed")


if __name__ == "__main__":
    unittest.main()
