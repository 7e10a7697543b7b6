"""Issue 39.3: the metrics events carry the Trainer's max_steps, so the extension shows "step N of M, ≈ T left"
(src/core/runs/view/runProgress.ts). The callback core writes it from TrainerState.max_steps; events.py accepts it
and refuses what is not a positive integer, as events.ts does (the fixture qlora_run.jsonl holds it)."""

import os
import unittest

from remote_finetune.callback import EventsCallbackCore
from remote_finetune.events import EventWriter, parse_event_line, validate_event
from remote_finetune.hfmetrics import TrainerOutputParser
from tests.helpers import TempDirTest


class MaxStepsInMetrics(TempDirTest):
    def events(self, **log_kw):
        path = self.path("events.jsonl")
        core = EventsCallbackCore(EventWriter(path), run_id="rft-1", model="m", method="qlora", clock=lambda: 100.0)
        core.train_begin(True, None, None, 0, None)
        core.log(True, {"loss": 2.0}, 10, None, **log_kw)
        with open(path, encoding="utf-8") as f:
            return [parse_event_line(line)[0] for line in f if line.strip()]

    def test_metrics_carry_the_trainers_max_steps(self):
        metrics = [e for e in self.events(max_steps=250) if e and e["type"] == "metrics"]
        self.assertEqual(len(metrics), 1)
        self.assertEqual(metrics[0]["step"], 10)
        self.assertEqual(metrics[0]["max_steps"], 250)

    def test_no_or_unplanned_max_steps_is_left_out(self):
        # An own script's Trainer may leave max_steps at 0 (unknown) or -1; a bool is not a count.
        for bad in (None, 0, -1, True):
            metrics = [e for e in self.events(**({} if bad is None else {"max_steps": bad})) if e and e["type"] == "metrics"]
            self.assertNotIn("max_steps", metrics[0], bad)

    def test_the_schema_takes_a_positive_integer_only(self):
        base = {"v": 1, "ts": 1.0, "type": "metrics", "step": 3}
        self.assertIsNone(validate_event(dict(base, max_steps=12)))
        for bad in (0, -5, 2.5, "12", True):
            self.assertIsNotNone(validate_event(dict(base, max_steps=bad)), bad)


class OwnScriptBar(unittest.TestCase):
    """An own script's printed Trainer output: the training bar's total is its max_steps (the demo prints one)."""

    def test_the_training_bars_total_is_max_steps_and_the_eval_bar_is_not(self):
        p = TrainerOutputParser()
        p.feed("  5%|▌         | 10/200 [00:10<03:10,  1.00s/it]")
        first = p.feed("{'loss': 2.3, 'learning_rate': 0.0002, 'epoch': 0.04}")
        p.feed("100%|██████████| 13/13 [00:03<00:00,  4.1it/s]")
        second = p.feed("{'loss': 2.1, 'learning_rate': 0.0002, 'epoch': 0.05}")
        self.assertEqual((first[1]["step"], first[1]["max_steps"]), (10, 200))
        self.assertEqual(second[1]["max_steps"], 200)
        self.assertIsNone(validate_event(dict({"v": 1, "ts": 1.0, "type": "metrics"}, **first[1])))

    def test_no_bar_no_total(self):
        got = TrainerOutputParser().feed("{'loss': 1.0, 'epoch': 0.1}")
        self.assertEqual(got[1]["step"], 1)
        self.assertNotIn("max_steps", got[1])


if __name__ == "__main__":
    unittest.main()
