"""The budget stops the built-in trainer on its own (issue 32.6): real transformers/peft on CPU, a tiny llama,
a spec with `budget.max_hours` far below what its steps need and nobody attached. The runner warns at 80%, and
at 100% the trainer saves a checkpoint (the same StopFlag a SIGTERM sets) and ends; the checkpoint resumes."""

import os
import time

from tests_training.test_training import Case, base_spec, tiny_model

BUDGET_S = 45.0  # the tiny model loads in a few seconds here; the rest of the budget is spent training


class BudgetStop(Case):
    def test_a_tiny_budget_saves_a_checkpoint_and_stops_training(self):
        model = tiny_model("llama")
        self.data("text-jsonl", "data/train.jsonl")
        self.extra_env = {"RFT_BUDGET_POLL_S": "0.5"}
        spec = base_spec(model, trainer={"max_steps": 200000, "save_steps": 1000000, "logging_steps": 5},
                         budget={"max_hours": BUDGET_S / 3600.0})
        started = time.time()
        rc, events = self.run_spec(spec, timeout=BUDGET_S + 300)
        took = time.time() - started
        msg = "exit %s after %.0f s\n%s\n%s" % (rc, took, [(e["type"], e.get("code")) for e in events], self.output()[-3000:])
        codes = [e.get("code") for e in events if (e.get("code") or "").startswith("budget")]
        self.assertEqual(codes, ["budget-warning", "budget-stop"], msg)
        self.assertRegex(next(e["message"] for e in events if e.get("code") == "budget-stop"), r"^budget reached: 4\d s of 45 s; saving a checkpoint", msg)
        steps = [e["step"] for e in events if e["type"] == "metrics" and "loss" in e]
        self.assertTrue(steps, msg)
        ckpts = [e for e in events if e["type"] == "checkpoint"]
        self.assertEqual(len(ckpts), 1, msg)
        self.assertLess(ckpts[0]["step"], 200000)
        self.assertGreaterEqual(ckpts[0]["step"], max(steps), msg)
        self.assertTrue(os.path.isfile(os.path.join(self.workdir, ckpts[0]["path"], "trainer_state.json")), msg)
        self.assertEqual(events[-1]["type"], "finished")
        self.assertEqual(events[-1]["status"], "budget-stopped", msg)
        self.assertIn("stopped by signal 15 after saving a checkpoint", self.output())
        self.assertLess(took, BUDGET_S + 120, msg)
        # What the run used (issue 32.4), measured by the built-in trainer's callback and the runner: no GPU here,
        # so no memory figures, but the first step and the throughput after warm-up.
        measured = events[-1].get("measured") or {}
        self.assertGreater(measured.get("first_step_s", 0), 0, msg)
        self.assertLess(measured["first_step_s"], BUDGET_S, msg)
        self.assertGreater(measured.get("tokens_per_second", 0), 0, msg)
        print("budget stop: %.1f s budget, stopped at step %d, run took %.1f s; measured %s" % (BUDGET_S, ckpts[0]["step"], took, measured))
