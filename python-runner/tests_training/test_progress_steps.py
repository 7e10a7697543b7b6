"""Issue 39.3 with the real transformers Trainer on the CPU: every metrics event of a built-in run carries the
Trainer's planned optimizer steps (`max_steps`), also when the spec sets epochs instead of max_steps (the Trainer
works the total out from the data), so the extension can say "step N of M, ≈ T left" (src/core/runs/view/runProgress.ts).
"""

import unittest

from tests_training import test_training as tt


class StepsOfTotal(tt.Case):
    def test_metrics_events_carry_the_trainers_planned_steps_from_epochs(self):
        self.data("text-jsonl", "data/train.jsonl")
        spec = tt.base_spec(tt.tiny_model("llama"), trainer={"max_steps": -1, "epochs": 1, "save_steps": 1000, "precision": "fp32"})
        rc, events = self.run_spec(spec)
        self.assert_trained(rc, events, expect_checkpoint=False)
        metrics = [e for e in events if e["type"] == "metrics"]
        self.assertTrue(metrics, events)
        totals = {e.get("max_steps") for e in metrics}
        self.assertEqual(len(totals), 1, metrics)
        total = totals.pop()
        self.assertIsInstance(total, int, metrics[0])
        # One epoch ran to its end: the last logged step is the planned total.
        self.assertEqual(max(e["step"] for e in metrics), total)


if __name__ == "__main__":
    unittest.main()
