"""The budget the host enforces (issue 32.6): budget.py's arithmetic on a fake clock, and a real
`python -m remote_finetune run` with a tiny budget whose training loop is a stand-in that uses the real
callback (EventsCallbackCore with the SIGTERM StopFlag), as the built-in trainer does. Nothing from the
extension takes part: the price per hour and the billing start are in spec.json, as the extension writes
them at start, and the notifications go to a loopback webhook receiver standing in for Slack/ntfy."""

import json
import os
import subprocess
import time
import unittest

from remote_finetune import budget
from remote_finetune.events import parse_event_line
from remote_finetune.spec import check_spec
from tests.helpers import PYTHON, TempDirTest, read, runner_env
from tests.test_notify import Receiver

T0 = 1_800_000_000.0


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class BudgetArithmetic(unittest.TestCase):
    def watcher(self, spec_budget, clock, started_at=T0):
        b = budget.budget_of({"budget": spec_budget}, started_at)
        self.assertIsNotNone(b)
        self.events, self.notes, self.stops = [], [], []
        return budget.BudgetWatcher(b, lambda t, **kw: self.events.append((t, kw)), lambda w, body, urgent: self.notes.append((w, urgent)),
                                    lambda: self.stops.append(clock()), clock=clock)

    def test_dollars_warn_once_at_80_percent_and_stop_once_at_100(self):
        clock = Clock(T0)
        w = self.watcher({"max_usd": 10.0, "price_per_hour": 4.0}, clock)  # $10 at $4/h: 2.5 h
        clock.t = T0 + 0.79 * 2.5 * 3600
        w.check()
        self.assertEqual((self.events, self.notes, self.stops), ([], [], []))
        clock.t = T0 + 0.81 * 2.5 * 3600
        w.check()
        w.check()
        self.assertEqual([kw["code"] for _, kw in self.events], ["budget-warning"])
        self.assertIn("$8.10 of $10.00 (at $4.00/h)", self.events[0][1]["message"])
        self.assertEqual(self.notes, [("budget 81% used", False)])
        self.assertEqual(self.stops, [])
        clock.t = T0 + 2.5 * 3600
        w.check()
        w.check()
        self.assertEqual([kw["code"] for _, kw in self.events], ["budget-warning", "budget-stop"])
        self.assertEqual(self.notes[-1], ("budget reached, stopping", True))
        self.assertEqual(self.stops, [T0 + 2.5 * 3600])

    def test_hours_limit_and_the_larger_share_counts(self):
        clock = Clock(T0)
        w = self.watcher({"max_usd": 1000.0, "max_hours": 1.0, "price_per_hour": 2.0}, clock)
        clock.t = T0 + 3600
        w.check()
        # One check that finds 100% straight away stops without a separate 80% warning.
        self.assertEqual([kw["code"] for _, kw in self.events], ["budget-stop"])
        self.assertIn("1.00 h of 1.00 h", self.events[0][1]["message"])
        self.assertEqual(len(self.stops), 1)

    def test_billing_began_at_the_launch_so_the_wait_for_ssh_counts(self):
        # The instance was launched 20 minutes before the runner started: $6/h, $3 budget = 30 minutes in all.
        clock = Clock(T0)
        w = self.watcher({"max_usd": 3.0, "price_per_hour": 6.0, "billed_since": T0 - 1200}, clock)
        clock.t = T0 + 600
        w.check()
        self.assertEqual(len(self.stops), 1)

    def test_a_billing_start_after_the_runner_started_is_not_free_time(self):
        b = budget.budget_of({"budget": {"max_hours": 1.0, "billed_since": T0 + 5000}}, T0)
        self.assertEqual(b.since, T0)

    def test_nothing_to_count(self):
        self.assertIsNone(budget.budget_of({}, T0))
        # A dollar limit on a host without a price (an SSH host whose spec names none) cannot be counted.
        self.assertIsNone(budget.budget_of({"budget": {"max_usd": 5.0}}, T0))
        self.assertIsNotNone(budget.budget_of({"budget": {"max_usd": 5.0, "price_per_hour": 1.1}}, T0))

    def test_a_small_budget_is_checked_every_percent(self):
        env = os.environ.pop("RFT_BUDGET_POLL_S", None)
        try:
            self.assertEqual(budget.interval_s(budget.budget_of({"budget": {"max_usd": 2.0, "price_per_hour": 36.0}}, T0)), 2.0)
            self.assertEqual(budget.interval_s(budget.budget_of({"budget": {"max_hours": 10.0}}, T0)), 10.0)
            self.assertEqual(budget.interval_s(budget.budget_of({"budget": {"max_hours": 0.001}}, T0)), 0.5)
        finally:
            if env is not None:
                os.environ["RFT_BUDGET_POLL_S"] = env

    def test_spec_check_refuses_a_negative_or_textual_budget(self):
        errs = check_spec({"version": 1, "model": {"id": "m"}, "budget": {"max_usd": -1, "max_hours": "2", "price_per_hour": 1.0}})
        self.assertIn("budget.max_usd: expected a number >= 0", errs)
        self.assertIn("budget.max_hours: expected a number >= 0", errs)


class MultiNode(TempDirTest):
    def test_every_machine_stops_but_only_machine_rank_0_notifies(self):
        hook = Receiver()
        self.addCleanup(hook.close)
        env = {"RFT_NOTIFY_WEBHOOK": hook.url + "/hook"}
        spent = {"max_hours": 1.0, "billed_since": time.time() - 7200}
        for rank in (0, 1):
            stops, events = [], []
            w = budget.start_watch(self.tmp, {"name": "mn", "launcher": {"machine_rank": rank}, "budget": spent}, env,
                                   lambda t, **kw: events.append(kw.get("code")), time.time(), stop=lambda: stops.append(1))
            deadline = time.time() + 10
            while not stops and time.time() < deadline:
                time.sleep(0.02)
            w.stop()
            self.assertEqual((stops, events), ([1], ["budget-stop"]), "machine rank %d" % rank)
        self.assertEqual(len(hook.posts), 1, "one notification, from machine rank 0")


# A training loop standing in for the Trainer: the real EventsCallbackCore and StopFlag, checked after every
# step as RemoteFinetuneCallback.on_step_end does; on a stop it saves a checkpoint and ends, as the Trainer's
# should_save + should_training_stop do.
TRAIN_PY = r'''
import os, sys, time
from remote_finetune.callback import EventsCallbackCore, StopFlag
from remote_finetune.events import EventWriter
stop = StopFlag().install()
core = EventsCallbackCore(EventWriter(os.environ["RFT_EVENTS_FILE"]), run_id="rft-1", model="stand-in", method="own-script", stop=stop)
core.train_begin(True, None, None, 0, None)
for step in range(1, 3001):
    time.sleep(0.01)
    if step % 10 == 0:
        core.log(True, {"loss": 3.0 - step / 1500.0}, step, None)
    if core.step_end():
        path = "out/checkpoint-%d" % step
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "adapter_model.safetensors"), "w") as f:
            f.write("weights")
        core.save(True, step, path)
        print("stopped by signal %d at step %d after saving %s" % (stop.signum, step, path), flush=True)
        sys.exit(0)
print("trained all 3000 steps", flush=True)
'''


class TinyBudgetRun(TempDirTest):
    def test_the_runner_warns_notifies_and_stops_training_with_a_checkpoint_on_its_own(self):
        hook = Receiver()
        self.addCleanup(hook.close)
        # $36/h and a $0.10 budget: ten seconds of billing in all, half a second of it spent before the runner
        # started (the launch and the wait for SSH).
        spec = {"version": 1, "name": "budget-ft", "command": "python train.py", "outputs": {"dir": "out"},
                "budget": {"max_usd": 0.10, "price_per_hour": 36.0, "billed_since": time.time() - 0.5}}
        run_dir = self.own_script_layout(TRAIN_PY, spec=spec)
        self.write("home/runs/rft-1/env", "RFT_NOTIFY_WEBHOOK=%s/hook-s3cret\n" % hook.url, mode=0o600)
        env = runner_env({"RFT_HOME": self.path("home"), "RFT_STANDIN_MODE": "no-gpu", "RFT_BUDGET_POLL_S": "0.05"})
        argv = [PYTHON, "-m", "remote_finetune", "run", "--run-dir", run_dir, "--workdir", self.work, "--no-watchdog", "--no-gpu-sampler"]
        p = subprocess.run(argv, env=env, cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        evs = []
        for line in read(os.path.join(run_dir, "events.jsonl")).splitlines():
            ev, err = parse_event_line(line)
            self.assertIsNone(err, line)
            evs.append(ev)
        log = read(os.path.join(run_dir, "output.log"))
        msg = "%s\n%s\n%s" % (p.stdout.decode(), [(e["type"], e.get("code")) for e in evs], log[-2000:])
        codes = [e.get("code") for e in evs if e["type"] == "warning" and (e.get("code") or "").startswith("budget")]
        self.assertEqual(codes, ["budget-warning", "budget-stop"], msg)
        self.assertRegex(next(e["message"] for e in evs if e.get("code") == "budget-stop"),
                         r"^budget reached: \$0\.1\d of \$0\.10 \(at \$36\.00/h\); saving a checkpoint and stopping training$")
        order = [e["type"] if e["type"] != "warning" else e.get("code") for e in evs]
        self.assertLess(order.index("budget-stop"), order.index("checkpoint"), msg)
        ckpt = next(e for e in evs if e["type"] == "checkpoint")
        self.assertTrue(os.path.isfile(os.path.join(self.work, ckpt["path"], "adapter_model.safetensors")), msg)
        self.assertRegex(log, r"stopped by signal 15 at step \d+ after saving out/checkpoint-\d+")
        self.assertNotIn("trained all 3000 steps", log)
        self.assertEqual(evs[-1]["type"], "finished")
        self.assertEqual(evs[-1]["status"], "budget-stopped", msg)
        # The 80% warning and the stop reached the host notification; the end-of-run one follows.
        texts = [json.loads(b)["text"] for _, _, b in hook.posts]
        self.assertEqual(len(texts), 3, texts)
        self.assertRegex(texts[0], r"^budget-ft on .+: budget \d+% used: budget \d+% used: \$0\.0\d+ of \$0\.10")
        self.assertRegex(texts[1], r"^budget-ft on .+: budget reached, stopping: budget reached: ")
        self.assertRegex(texts[2], r"^budget-ft budget-stopped on ")
        for where in (log, read(os.path.join(run_dir, "events.jsonl"))):
            self.assertNotIn("hook-s3cret", where)


if __name__ == "__main__":
    unittest.main()
