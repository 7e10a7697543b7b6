"""trainer.backend: unsloth, wired into the runner (issue 34 item 1), on the CPU with the real transformers and peft.

Unsloth itself needs a CUDA GPU, so here `unsloth` is a STAND-IN module: its FastLanguageModel records the arguments
it is called with and builds the model with transformers and peft. What this shows is the runner's side: load_model
hands the spec to Unsloth's documented API (model name, max_seq_length, dtype, load_in_4bit, r, alpha, dropout, the
all-linear modules by name, Unsloth's checkpointing, the seed), the returned adapters train, and the Trainer's own
checkpointing is off because Unsloth's is on. Whether Unsloth then runs as fast as its claims is the GPU benchmark's
(bench/gpu/throughput.py, variant unsloth); the speed plan's refusals on this CPU are test_speed.py's."""

import os
import shutil
import sys
import tempfile
import types
import unittest
from typing import Any, Dict, List

from remote_finetune import trainer, trainer_plan, unsloth_backend
from tests_training import test_training as tt


def standin_unsloth(calls: List[Dict[str, Any]]) -> types.ModuleType:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    class FastLanguageModel:
        @staticmethod
        def from_pretrained(**kw: Any) -> Any:
            calls.append(dict(kw, call="from_pretrained"))
            model = AutoModelForCausalLM.from_pretrained(kw["model_name"], **{tt._dtype_name(): kw["dtype"]})
            return model, AutoTokenizer.from_pretrained(kw["model_name"])

        @staticmethod
        def get_peft_model(model: Any, **kw: Any) -> Any:
            calls.append(dict(kw, call="get_peft_model"))
            return get_peft_model(model, LoraConfig(r=kw["r"], lora_alpha=kw["lora_alpha"], lora_dropout=kw["lora_dropout"],
                                                    target_modules=kw["target_modules"], bias=kw["bias"], task_type="CAUSAL_LM"))

    module = types.ModuleType("unsloth")
    module.FastLanguageModel = FastLanguageModel  # type: ignore[attr-defined]
    module.__version__ = "stand-in"  # type: ignore[attr-defined]
    return module


class UnslothBackend(unittest.TestCase):
    def setUp(self) -> None:
        self.calls: List[Dict[str, Any]] = []
        self.saved = sys.modules.get("unsloth")
        sys.modules["unsloth"] = standin_unsloth(self.calls)
        self.tmp = tempfile.mkdtemp(prefix="rft-unsloth-")

    def tearDown(self) -> None:
        if self.saved is None:
            sys.modules.pop("unsloth", None)
        else:
            sys.modules["unsloth"] = self.saved
        shutil.rmtree(self.tmp, True)

    def test_load_model_hands_the_spec_to_unsloths_api_and_the_adapters_train(self):
        import torch
        model_dir = tt.tiny_model("llama")
        spec = tt.base_spec(model_dir, trainer={"backend": "unsloth", "seed": 11, "gradient_checkpointing": True})
        run = trainer.Run(os.path.join(self.tmp, "run"), self.tmp)
        os.makedirs(run.run_dir)
        tokenizer = trainer.load_tokenizer(spec)
        model, attn = trainer.load_model(spec, tokenizer, run, None)
        self.assertEqual(attn, "unsloth")
        self.assertEqual([c["call"] for c in self.calls], ["from_pretrained", "get_peft_model"])
        load, peft = self.calls
        self.assertEqual((load["model_name"], load["max_seq_length"], load["dtype"], load["load_in_4bit"]),
                         (model_dir, 64, getattr(torch, trainer_plan.model_dtype(spec)), False))
        self.assertEqual((peft["r"], peft["lora_alpha"], peft["lora_dropout"], peft["bias"]), (8, 16, 0.0, "none"))
        self.assertEqual(peft["target_modules"], unsloth_backend.ALL_LINEAR, "all-linear named module by module")
        self.assertEqual((peft["use_gradient_checkpointing"], peft["random_state"], peft["max_seq_length"]), ("unsloth", 11, 64))
        self.assertEqual(model.config.pad_token_id, tokenizer.pad_token_id)
        trainable = [p for n, p in model.named_parameters() if p.requires_grad]
        self.assertTrue(trainable and all("lora_" in n for n, p in model.named_parameters() if p.requires_grad))
        ids = torch.tensor([[1, 2, 3, 4, 5, 6]])
        model(input_ids=ids, labels=ids).loss.backward()
        self.assertTrue(all(p.grad is not None and torch.isfinite(p.grad).all() for p in trainable), "the adapters get no gradient")

    def test_qlora_asks_unsloth_for_4_bit_and_the_trainer_does_not_checkpoint_a_second_time(self):
        spec = tt.base_spec(tt.tiny_model("llama"), method="qlora", trainer={"backend": "unsloth", "gradient_checkpointing": True}, lora={"r": 4, "alpha": 8, "dropout": 0.0,
                            "target_modules": ["q_proj", "v_proj"]}, quantization={"load_in_4bit": True, "quant_type": "nf4"})
        run = trainer.Run(os.path.join(self.tmp, "run"), self.tmp)
        os.makedirs(run.run_dir)
        trainer.load_model(spec, trainer.load_tokenizer(spec), run, None)
        self.assertTrue(self.calls[0]["load_in_4bit"])
        self.assertEqual(self.calls[1]["target_modules"], ["q_proj", "v_proj"])
        from transformers import TrainingArguments
        fields = list(TrainingArguments.__dataclass_fields__)
        kw = trainer_plan.training_args_kwargs(spec, self.tmp, fields, has_eval=False, report_to=[], bnb_installed=True, warn=lambda m, c: None)
        self.assertFalse(any(kw.get(n) for n in ("activation_checkpointing", "gradient_checkpointing")), kw)
        builtin = dict(spec, trainer=dict(spec["trainer"], backend="builtin"))
        kw = trainer_plan.training_args_kwargs(builtin, self.tmp, fields, has_eval=False, report_to=[], bnb_installed=True, warn=lambda m, c: None)
        self.assertTrue(any(kw.get(n) for n in ("activation_checkpointing", "gradient_checkpointing")), "the built-in backend keeps the Trainer's")


if __name__ == "__main__":
    unittest.main()
