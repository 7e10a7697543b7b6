"""The settings the plan makes from spec fields (issue 31.6), handed to the installed libraries, which are the
oracle: BitsAndBytesConfig takes the 8-bit and 4-bit arguments, peft's LoraConfig keeps a float alpha and the
modules to save, TrainingArguments/SFTConfig take every key the plan says it passes through (and the plan says
"ignored" exactly for the names these classes lack), the schedulers the plan refuses are the ones transformers
cannot build without their arguments, and checkpointing is asked for under the name that raises no deprecation."""

import dataclasses
import os
import shutil
import tempfile
import unittest
import warnings
from typing import Any, List

from remote_finetune import trainer_plan as plan
from remote_finetune.spec import normalise
from tests_training import tiny


def spec(method: str = "lora-bf16", **sections: Any) -> Any:
    raw = {"version": 1, "model": {"id": "m"}, "method": method}
    raw.update(sections)
    return normalise(raw)


def fields_of(cls: Any) -> List[str]:
    return [f.name for f in dataclasses.fields(cls)]


class Collect(list):
    def __call__(self, message: str, code: str) -> None:
        self.append((code, message))


def kwargs_for(s: Any, cls: Any, has_eval: bool = False, installed: Any = None) -> Any:
    w = Collect()
    kw = plan.training_args_kwargs(s, tempfile.mkdtemp(prefix="rft-args-"), fields_of(cls), has_eval=has_eval, report_to=[],
                                   bnb_installed=False, warn=w, installed=installed, args_class=cls.__name__)
    kw["use_cpu"] = True
    kw["bf16"] = False
    return kw, w


class Libraries(unittest.TestCase):
    def test_quantization_arguments_are_bitsandbytes_configs(self):
        import torch
        from transformers import BitsAndBytesConfig
        eight = BitsAndBytesConfig(**plan.quantization_kwargs(spec(quantization={"load_in_8bit": True})))
        self.assertTrue(eight.load_in_8bit)
        self.assertFalse(eight.load_in_4bit)
        q = plan.quantization_kwargs(spec("qlora", quantization={"quant_type": "fp4", "double_quant": False}))
        q["bnb_4bit_compute_dtype"] = getattr(torch, q["bnb_4bit_compute_dtype"])
        four = BitsAndBytesConfig(**q)
        self.assertTrue(four.load_in_4bit)
        self.assertEqual(four.bnb_4bit_quant_type, "fp4")
        self.assertIsNone(plan.quantization_kwargs(spec("qlora", quantization={"load_in_4bit": False})))

    def test_float_alpha_and_modules_to_save_reach_the_peft_model(self):
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModelForCausalLM
        tmp = tempfile.mkdtemp(prefix="rft-lora-")
        self.addCleanup(shutil.rmtree, tmp, True)
        tok = tiny.build_tokenizer(os.path.join(tmp, "tok"))
        model = AutoModelForCausalLM.from_pretrained(tiny.build_model(os.path.join(tmp, "m"), "llama", tok))
        lk = plan.lora_kwargs(spec(lora={"r": 8, "alpha": 12.5, "modules_to_save": ["lm_head"]}))
        peft_model = get_peft_model(model, LoraConfig(**lk))
        q = peft_model.base_model.model.model.layers[0].self_attn.q_proj
        self.assertAlmostEqual(q.scaling["default"], 12.5 / 8)
        trainable = [n for n, p in peft_model.named_parameters() if p.requires_grad]
        self.assertTrue(any("lm_head" in n and "modules_to_save" in n for n in trainable), trainable[-3:])

    def test_pass_through_claims_match_the_installed_argument_classes(self):
        from transformers import TrainingArguments
        classes: List[Any] = [TrainingArguments]
        try:
            from trl import SFTConfig
            classes.append(SFTConfig)
        except ImportError:
            pass
        for cls in classes:
            names = set(fields_of(cls))
            for key, value in (("torch_compile", False), ("dataloader_num_workers", 0), ("completion_only_loss", None),
                               ("not_a_field_anywhere", 1)):
                with self.subTest(cls=cls.__name__, key=key):
                    kw, w = kwargs_for(spec(trainer={key: value}), cls)
                    said = {c for c, m in w if "trainer.%s " % key in m}
                    if key in names:
                        self.assertEqual(said, {"trainer-key-passed-through"})
                        self.assertIn(key, kw)
                        cls(**kw)
                    else:
                        self.assertEqual(said, {"unknown-trainer-key"})
                        self.assertNotIn(key, kw)

    def test_refused_schedulers_are_the_ones_transformers_cannot_build(self):
        import torch
        from transformers import TrainingArguments, get_scheduler
        opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
        for name, kwargs in (("cosine_with_min_lr", {"min_lr_rate": 0.1}), ("warmup_stable_decay", {"num_decay_steps": 2})):
            with self.subTest(name=name):
                with self.assertRaises(Exception):
                    get_scheduler(name, opt, num_warmup_steps=1, num_training_steps=10)
                with self.assertRaises(plan.SpecRefused):
                    kwargs_for(spec(trainer={"lr_scheduler": name}), TrainingArguments)
                kw, _ = kwargs_for(spec(trainer={"lr_scheduler": name, "lr_scheduler_kwargs": kwargs}), TrainingArguments)
                args = TrainingArguments(**kw)
                get_scheduler(name, opt, num_warmup_steps=1, num_training_steps=10, scheduler_specific_kwargs=args.lr_scheduler_kwargs)
        with self.assertRaises(ValueError):
            TrainingArguments(output_dir=tempfile.mkdtemp(), lr_scheduler_type="reduce_lr_on_plateau", eval_strategy="no", use_cpu=True)
        with self.assertRaises(plan.SpecRefused):
            kwargs_for(spec(trainer={"lr_scheduler": "reduce_lr_on_plateau"}), TrainingArguments)

    def test_checkpointing_raises_no_deprecation(self):
        from transformers import TrainingArguments
        kw, _ = kwargs_for(spec(trainer={"gradient_checkpointing": True}), TrainingArguments)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            args = TrainingArguments(**kw)
        self.assertTrue(getattr(args, "activation_checkpointing", None) or args.gradient_checkpointing)
        self.assertEqual([str(c.message) for c in caught if "checkpointing" in str(c.message) and "deprecated" in str(c.message)], [])


if __name__ == "__main__":
    unittest.main()
