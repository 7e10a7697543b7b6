"""Each run owns its outputs (stdlib only, no torch): the built-in trainer's adapter goes to
<outputs.dir>/<run id>/adapter, the run's finish, Merge and Push find that run's own adapter (never whichever run
wrote <outputs.dir>/adapter last), the merged model goes beside it, and a run from before the per-run folders
still finds <outputs.dir>/adapter. Also trainer.resume_from_checkpoint: this run's newest checkpoint first, then
a named checkpoint folder or `latest`, and a path that is not a checkpoint refused."""

import json
import os
import tempfile
import time
import unittest

from remote_finetune import trainer_plan as plan
from remote_finetune.merge import merged_dir_of, resolve_adapter
from remote_finetune.outputs import find_adapter

SPEC = {"method": "lora-bf16", "outputs": {"dir": "outputs"}}


def _adapter(path: str) -> str:
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "adapter_config.json"), "w", encoding="utf-8") as f:
        json.dump({"base_model_name_or_path": "m"}, f)
    return path


def _checkpoint(path: str) -> str:
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "trainer_state.json"), "w", encoding="utf-8") as f:
        f.write("{}")
    return path


class RunOutputs(unittest.TestCase):
    def setUp(self) -> None:
        self.ws = tempfile.mkdtemp(prefix="rft-outs-")

    def test_the_trainer_saves_into_the_runs_own_folder(self):
        out = os.path.join(self.ws, "outputs")
        self.assertEqual(plan.final_model_dir(out, "rft-a", "lora-bf16"), os.path.join(out, "rft-a", "adapter"))
        self.assertEqual(plan.final_model_dir(out, "rft-a", "full"), os.path.join(out, "rft-a", "model"))
        # A run id that names a shared folder of outputs.dir never lands on it.
        self.assertEqual(plan.run_outputs_dir(out, "checkpoints"), os.path.join(out, "run-checkpoints"))

    def test_each_run_finds_its_own_adapter_whoever_wrote_last(self):
        a = _adapter(os.path.join(self.ws, "outputs", "rft-a", "adapter"))
        time.sleep(0.02)
        b = _adapter(os.path.join(self.ws, "outputs", "rft-b", "adapter"))
        self.assertEqual(find_adapter(SPEC, self.ws, 0.0, "rft-a"), os.path.join("outputs", "rft-a", "adapter"))
        self.assertEqual(find_adapter(SPEC, self.ws, 0.0, "rft-b"), os.path.join("outputs", "rft-b", "adapter"))
        # Merge and Push without a folder named: the run's own (run id = the run dir's name).
        self.assertEqual(resolve_adapter(SPEC, self.ws, None, "rft-a"), a)
        self.assertEqual(resolve_adapter(SPEC, self.ws, None, "rft-b"), b)
        self.assertEqual(merged_dir_of(a), os.path.join(self.ws, "outputs", "rft-a", "merged"))

    def test_a_run_from_before_the_per_run_folders_still_finds_the_shared_one(self):
        old = _adapter(os.path.join(self.ws, "outputs", "adapter"))
        self.assertEqual(resolve_adapter(SPEC, self.ws, None, "rft-old"), old)
        self.assertEqual(merged_dir_of(old), os.path.join(self.ws, "outputs", "merged"))

    def test_at_the_end_of_a_run_an_older_shared_adapter_is_not_taken_for_its_own(self):
        _adapter(os.path.join(self.ws, "outputs", "adapter"))
        started = time.time() + 5  # the shared adapter was written before this run started
        self.assertIsNone(find_adapter(SPEC, self.ws, started, "rft-new"))


class ResumeFromCheckpoint(unittest.TestCase):
    def setUp(self) -> None:
        self.ws = tempfile.mkdtemp(prefix="rft-resume-")
        self.out = os.path.join(self.ws, "outputs")

    def spec(self, value):
        return {"method": "lora-bf16", "trainer": {} if value is None else {"resume_from_checkpoint": value}}

    def test_the_runs_own_newest_checkpoint_comes_first(self):
        own = _checkpoint(os.path.join(self.out, "checkpoints", "rft-me", "checkpoint-8"))
        _checkpoint(os.path.join(self.out, "checkpoints", "rft-me", "checkpoint-4"))
        other = _checkpoint(os.path.join(self.out, "checkpoints", "rft-other", "checkpoint-2"))
        for value in (None, "latest", other):
            self.assertEqual(plan.resume_checkpoint(self.spec(value), self.out, "rft-me", self.ws)[0], own)

    def test_a_named_folder_relative_to_the_workspace(self):
        ck = _checkpoint(os.path.join(self.out, "checkpoints", "rft-old", "checkpoint-6"))
        got, why = plan.resume_checkpoint(self.spec("outputs/checkpoints/rft-old/checkpoint-6"), self.out, "rft-new", self.ws)
        self.assertEqual(got, ck)
        self.assertEqual(why, "trainer.resume_from_checkpoint")

    def test_latest_is_the_newest_checkpoint_any_run_left(self):
        _checkpoint(os.path.join(self.out, "checkpoints", "rft-1", "checkpoint-30"))
        time.sleep(0.05)
        newer = _checkpoint(os.path.join(self.out, "checkpoints", "rft-2", "checkpoint-5"))
        self.assertEqual(plan.resume_checkpoint(self.spec("latest"), self.out, "rft-3", self.ws)[0], newer)
        self.assertEqual(plan.resume_checkpoint(self.spec(True), self.out, "rft-3", self.ws)[0], newer)
        got, why = plan.resume_checkpoint(self.spec("latest"), os.path.join(self.ws, "empty"), "rft-3", self.ws)
        self.assertIsNone(got)
        self.assertIn("no run has left a complete checkpoint", why)

    def test_not_a_checkpoint_is_refused(self):
        os.makedirs(os.path.join(self.out, "half", "checkpoint-3"))  # no trainer_state.json: cut short
        for value in ("outputs/half/checkpoint-3", "outputs/nowhere", 5):
            with self.assertRaises(ValueError):
                plan.resume_checkpoint(self.spec(value), self.out, "rft-x", self.ws)

    def test_unset_or_false_starts_at_step_0_without_a_checkpoint_of_this_run(self):
        _checkpoint(os.path.join(self.out, "checkpoints", "rft-other", "checkpoint-2"))
        for value in (None, False, ""):
            self.assertIsNone(plan.resume_checkpoint(self.spec(value), self.out, "rft-x", self.ws)[0])


if __name__ == "__main__":
    unittest.main()
