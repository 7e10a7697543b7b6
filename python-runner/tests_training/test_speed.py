"""The speed plan (speed.py) with the real torch, transformers, peft and trl on the CPU (issue 34 item 1):

- a run's first events say what `speed: auto` chose and why (here: no CUDA GPU, so no Liger and no fused AdamW);
- trainer.liger and trainer.backend: unsloth are refused before the model loads, with the reason, on a host that
  cannot run them (this one has no CUDA GPU): exit 2 and an error event, never a crash at the first step;
- fused AdamW and torch.compile, each turned on through the spec, train the tiny model to the same losses as the
  plain path (the option really is on: the optimizer's `fused` flag, a compiled module), so each is correct
  before it is fast. Packing's correctness is test_packing.py's.
"""

import os
import shutil
import tempfile
import unittest
from typing import Any, Dict, List

from remote_finetune import trainer
from tests_training import test_training as tt
from tests_training import tiny

STEPS = 6
ROW = 12


class FirstEvents(tt.Case):
    def test_speed_auto_says_what_it_chose_and_why_in_the_first_event(self):
        self.data("text-jsonl", "data/train.jsonl")
        rc, events = self.run_spec(tt.base_spec(tt.tiny_model("llama"), trainer={"max_steps": 6, "save_steps": 100}))
        self.assert_trained(rc, events, expect_checkpoint=False)
        first = [e for e in events if e["type"] in ("warning", "started", "metrics")][0]
        self.assertEqual(first.get("code"), "speed-plan", events[:3])
        chosen = first["speed"]
        self.assertEqual((chosen["speed"], chosen["backend"], chosen["liger"], chosen["optimizer"], chosen["compile"], chosen["attention"]),
                         ("auto", "builtin", False, "adamw_torch", False, "sdpa"))
        self.assertIn("liger off (Liger's kernels are Triton kernels and need a CUDA GPU", first["message"])
        self.assertIn("attention sdpa (model.attn_implementation is sdpa)", first["message"])
        self.assertIn("[remote-finetune] speed auto: ", self.output())


class Refusals(tt.Case):
    def refused(self, trainer_over: Dict[str, Any]) -> Dict[str, Any]:
        self.data("text-jsonl", "data/train.jsonl")
        rc, events = self.run_spec(tt.base_spec(tt.tiny_model("llama"), trainer=trainer_over))
        self.assertEqual(rc, 2, self.output()[-3000:])
        errors = [e for e in events if e["type"] == "error"]
        self.assertTrue(errors, events)
        self.assertFalse([e for e in events if e["type"] in ("started", "metrics")], "refused before training")
        self.assertNotIn("loading ", self.output(), "refused before the model loads")
        return errors[0]

    def test_liger_is_refused_without_a_cuda_gpu(self):
        err = self.refused({"liger": True})
        self.assertEqual(err.get("signature"), "spec-refused")
        self.assertIn("trainer.liger: Liger's kernels are Triton kernels and need a CUDA GPU; this host has none", err["message"])

    def test_unsloth_backend_is_refused_without_a_cuda_gpu(self):
        err = self.refused({"backend": "unsloth"})
        self.assertIn("trainer.backend unsloth: Unsloth runs on CUDA GPUs only; this host has none", err["message"])


class TrlPathCheckpointing(unittest.TestCase):
    """TRL's configs default gradient checkpointing to on; the spec's `false` must reach SFTConfig as off (it did not:
    the TRL path recomputed every activation, the cause of its 0.68x of a plain TRL script in bench/trainer-overhead)."""

    def test_the_spec_s_checkpointing_reaches_sft_config(self):
        from remote_finetune.spec import normalise
        tmp = tempfile.mkdtemp(prefix="rft-speed-trl-")
        self.addCleanup(shutil.rmtree, tmp, True)
        run = trainer.Run(os.path.join(tmp, "run"), tmp)
        os.makedirs(run.run_dir)
        for on in (False, True):
            spec = normalise(tt.base_spec("/nonexistent", trainer={"use_sft_trainer": True, "gradient_checkpointing": on}))
            args = trainer.training_arguments(spec, os.path.join(tmp, "out"), has_eval=False, sft=True, run=run)
            self.assertEqual(type(args).__name__, "SFTConfig")
            got = (args.gradient_checkpointing, getattr(args, "activation_checkpointing", args.gradient_checkpointing))
            self.assertEqual(got, (on, on), "trainer.gradient_checkpointing %s" % on)


class SameTraining(unittest.TestCase):
    """The same tiny LoRA run, in process, with and without an option; losses step by step."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.mkdtemp(prefix="rft-speed-")
        cls.tok = tiny.build_tokenizer(os.path.join(cls.tmp, "tok"))
        cls.model_dir = tiny.build_model(os.path.join(cls.tmp, "model"), "llama", cls.tok)
        os.environ.pop("WANDB_API_KEY", None)

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.tmp, True)

    def train(self, name: str, **trainer_over: Any) -> Any:
        from datasets import Dataset
        from transformers import set_seed
        from remote_finetune.spec import normalise

        rows = []
        for text in tiny.texts(64):
            # One length for every row: torch.compile then builds one graph instead of one per batch shape.
            ids = self.tok(text + self.tok.eos_token)["input_ids"][:ROW]
            if len(ids) == ROW:
                rows.append({"input_ids": ids, "attention_mask": [1] * len(ids), "labels": list(ids)})
        run = trainer.Run(os.path.join(self.tmp, "run-" + name), self.tmp)
        os.makedirs(run.run_dir, exist_ok=True)
        raw = tt.base_spec(self.model_dir, trainer=dict({"max_steps": STEPS, "save_strategy": "no", "precision": "fp32"}, **trainer_over))
        spec = trainer.speed_plan(normalise(raw), None, run)
        trainer.pin_accelerate_env(spec)  # as the runner's main does before the arguments are built
        args = trainer.training_arguments(spec, os.path.join(self.tmp, "out-" + name), has_eval=False, sft=False, run=run)
        set_seed(7)
        model, _ = trainer.load_model(spec, self.tok, run, None)
        t = trainer.build_trainer(spec, args, model, self.tok, Dataset.from_list(rows), None, [], run, False)
        t.train()
        return t

    @staticmethod
    def losses(t: Any) -> List[float]:
        return [h["loss"] for h in t.state.log_history if "loss" in h]

    def assert_same(self, a: List[float], b: List[float], tol: float) -> None:
        self.assertEqual(len(a), STEPS)
        self.assertEqual(len(a), len(b))
        worst = max(abs(x - y) for x, y in zip(a, b))
        print("losses %s vs %s: largest difference %.2e" % (["%.5f" % x for x in a], ["%.5f" % x for x in b], worst), flush=True)
        self.assertLess(worst, tol)
        self.assertLess(b[-1], b[0], "it trained")

    def test_fused_adamw_trains_as_adamw_torch(self):
        plain = self.train("adamw", optimizer="adamw_torch")
        fused = self.train("fused", optimizer="adamw_torch_fused")
        self.assertEqual(fused.args.optim.value if hasattr(fused.args.optim, "value") else fused.args.optim, "adamw_torch_fused")
        opt = fused.optimizer.optimizer if hasattr(fused.optimizer, "optimizer") else fused.optimizer
        self.assertTrue(opt.defaults.get("fused"), "the optimizer is torch's fused AdamW")
        self.assertFalse((plain.optimizer.optimizer if hasattr(plain.optimizer, "optimizer") else plain.optimizer).defaults.get("fused"))
        self.assert_same(self.losses(plain), self.losses(fused), 1e-4)

    def test_torch_compile_trains_as_eager(self):
        import torch
        plain = self.train("eager")
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
        try:
            compiled = self.train("compiled", compile=True)
        finally:
            # TrainingArguments(torch_compile=True) wrote these into this process (transformers 4.x): later cases
            # run here, and their subprocesses inherit the environment.
            os.environ.pop("ACCELERATE_DYNAMO_BACKEND", None)
            os.environ.pop("ACCELERATE_DYNAMO_MODE", None)
        self.assertTrue(compiled.args.torch_compile)
        self.assertGreater(torch._dynamo.utils.counters["stats"]["unique_graphs"], 0, "the model ran compiled")
        self.assert_same(self.losses(plain), self.losses(compiled), 1e-3)

    def test_a_dynamo_backend_in_the_environment_compiles_nothing_the_spec_left_eager(self):
        # Exported on a host, or left by TrainingArguments(torch_compile=True) in this very process (transformers
        # 4.x writes it there): accelerate would compile every model while it is set.
        import torch
        saved = {k: os.environ.get(k) for k in ("ACCELERATE_DYNAMO_BACKEND", "ACCELERATE_DYNAMO_MODE")}
        os.environ["ACCELERATE_DYNAMO_BACKEND"] = "inductor"
        try:
            torch._dynamo.reset()
            torch._dynamo.utils.counters.clear()
            t = self.train("inherited-backend")
            self.assertFalse(t.args.torch_compile)
            self.assertEqual(torch._dynamo.utils.counters["stats"]["unique_graphs"], 0, "a spec without compile ran compiled")
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


if __name__ == "__main__":
    unittest.main()
