"""Spec fields the runner used to drop or mangle, each honoured or refused (issue 31.6), decided with the stdlib;
tests_training/test_spec_libraries.py hands the same settings to the installed libraries."""

import unittest

from remote_finetune import tracking
from remote_finetune import trainer_plan as plan
from remote_finetune.spec import normalise

FIELDS = ["output_dir", "max_steps", "learning_rate", "lr_scheduler_type", "lr_scheduler_kwargs", "bf16", "fp16", "optim",
          "gradient_checkpointing", "gradient_checkpointing_kwargs", "eval_strategy", "report_to", "logging_first_step",
          "save_safetensors", "remove_unused_columns", "torch_compile", "use_liger_kernel", "num_train_epochs",
          "per_device_train_batch_size", "per_device_eval_batch_size", "gradient_accumulation_steps", "warmup_ratio",
          "weight_decay", "logging_steps", "eval_steps", "save_strategy", "save_steps", "save_total_limit", "seed"]
FIELDS_5 = [f for f in FIELDS if not f.startswith("gradient_checkpointing")] + ["activation_checkpointing", "activation_checkpointing_kwargs",
                                                                                "gradient_checkpointing", "gradient_checkpointing_kwargs"]


def spec(method="lora-bf16", **sections):
    raw = {"version": 1, "model": {"id": "m"}, "method": method}
    raw.update(sections)
    return normalise(raw)


class Warnings(list):
    def __call__(self, message, code):
        self.append((code, message))

    def codes(self):
        return [c for c, _ in self]


def args(s, fields=FIELDS, has_eval=False, installed=None):
    w = Warnings()
    kw = plan.training_args_kwargs(s, "/out", fields, has_eval=has_eval, report_to=[], bnb_installed=True, warn=w, installed=installed)
    return kw, w


class LoraAndQuantization(unittest.TestCase):
    def test_float_alpha_is_kept(self):
        self.assertEqual(plan.lora_kwargs(spec(lora={"r": 8, "alpha": 12.5}))["lora_alpha"], 12.5)
        self.assertEqual(plan.lora_kwargs(spec(lora={"r": 8, "alpha": 16}))["lora_alpha"], 16)

    def test_modules_to_save_reach_the_lora_config(self):
        self.assertEqual(plan.lora_kwargs(spec(lora={"modules_to_save": ["lm_head", "embed_tokens"]}))["modules_to_save"],
                         ["lm_head", "embed_tokens"])
        self.assertNotIn("modules_to_save", plan.lora_kwargs(spec()))

    def test_8bit_loading(self):
        self.assertEqual(plan.quantization_kwargs(spec(quantization={"load_in_8bit": True})), {"load_in_8bit": True})
        self.assertEqual(plan.quantization_kwargs(spec("qlora", quantization={"load_in_8bit": True, "load_in_4bit": False})),
                         {"load_in_8bit": True})
        self.assertIsNone(plan.quantization_kwargs(spec("full", quantization={"load_in_8bit": True})))

    def test_qlora_with_load_in_4bit_false_loads_16_bit(self):
        self.assertTrue(plan.quantization_kwargs(spec("qlora"))["load_in_4bit"])
        self.assertIsNone(plan.quantization_kwargs(spec("qlora", quantization={"load_in_4bit": False})))

    def test_quantised_weights_never_get_flash_attention(self):
        w = Warnings()
        s = spec(quantization={"load_in_8bit": True}, model={"id": "m", "attn_implementation": "flash_attention_2"})
        self.assertEqual(plan.choose_attention(s, True, (8, 0), w), "sdpa")
        self.assertEqual(w.codes(), ["fa2-qlora"])


class Schedulers(unittest.TestCase):
    def test_scheduler_kwargs_pass_through(self):
        kw, _ = args(spec(trainer={"lr_scheduler": "cosine_with_min_lr", "lr_scheduler_kwargs": {"min_lr_rate": 0.1}}))
        self.assertEqual(kw["lr_scheduler_type"], "cosine_with_min_lr")
        self.assertEqual(kw["lr_scheduler_kwargs"], {"min_lr_rate": 0.1})

    def test_schedulers_without_their_required_arguments_are_refused(self):
        for name, fix in (("cosine_with_min_lr", "min_lr or min_lr_rate"), ("warmup_stable_decay", "num_decay_steps")):
            with self.assertRaises(plan.SpecRefused) as e:
                args(spec(trainer={"lr_scheduler": name}))
            self.assertIn(fix, str(e.exception))

    def test_reduce_on_plateau_needs_an_eval_set_and_strategy(self):
        with self.assertRaises(plan.SpecRefused):
            args(spec(trainer={"lr_scheduler": "reduce_lr_on_plateau"}))
        with self.assertRaises(plan.SpecRefused):
            args(spec(trainer={"lr_scheduler": "reduce_lr_on_plateau", "eval_strategy": "steps"}), has_eval=False)
        kw, _ = args(spec(trainer={"lr_scheduler": "reduce_lr_on_plateau", "eval_strategy": "steps"}), has_eval=True)
        self.assertEqual(kw["lr_scheduler_type"], "reduce_lr_on_plateau")


class UnknownTrainerKeys(unittest.TestCase):
    def test_a_training_arguments_field_is_passed_and_said_to_be(self):
        kw, w = args(spec(trainer={"torch_compile": True}))
        self.assertIs(kw["torch_compile"], True)
        self.assertEqual(w.codes(), ["trainer-key-passed-through"])
        self.assertIn("trainer.torch_compile is not a run-spec field: passed to TrainingArguments", w[0][1])

    def test_a_key_no_field_has_is_dropped_and_said_to_be(self):
        kw, w = args(spec(trainer={"torch_compiel": True}))
        self.assertNotIn("torch_compiel", kw)
        self.assertEqual(w.codes(), ["unknown-trainer-key"])

    def test_use_liger_kernel_without_liger_is_not_passed(self):
        kw, w = args(spec(trainer={"use_liger_kernel": True}), installed=lambda name: name != "liger_kernel")
        self.assertNotIn("use_liger_kernel", kw)
        self.assertEqual(w.codes(), ["trainer-key-package-missing"])
        kw, w = args(spec(trainer={"use_liger_kernel": True}), installed=lambda name: True)
        self.assertIs(kw["use_liger_kernel"], True)


class CheckpointingAndPacking(unittest.TestCase):
    def test_checkpointing_uses_the_name_this_transformers_has(self):
        kw5, _ = args(spec(), fields=FIELDS_5)
        self.assertIs(kw5["activation_checkpointing"], True)
        self.assertEqual(kw5["activation_checkpointing_kwargs"], {"use_reentrant": False})
        self.assertNotIn("gradient_checkpointing", kw5, "the deprecated alias is not set beside the new name")
        kw4, _ = args(spec())
        self.assertIs(kw4["gradient_checkpointing"], True)

    def test_packing_uses_trls_padding_free_packing(self):
        s = spec(data={"train": "d.jsonl", "packing": True, "max_seq_length": 128})
        self.assertTrue(plan.uses_sft(s, True))
        fields = ["dataset_text_field", "max_length", "packing", "packing_strategy", "padding_free"]
        self.assertEqual(plan.sft_kwargs(s, fields), {"dataset_text_field": "text", "max_length": 128, "packing": True,
                                                      "packing_strategy": "bfd", "padding_free": True})
        with self.assertRaises(plan.SpecRefused):
            plan.uses_sft(s, False)
        self.assertFalse(plan.sft_kwargs(spec(), fields)["packing"])


class WandbTags(unittest.TestCase):
    def test_tags_reach_wandb_through_its_environment(self):
        got = tracking.tracking_settings({"wandb": {"tags": ["qlora", "seed 3"]}}, {}, "/runs/r1")
        self.assertEqual(got["WANDB_TAGS"], "qlora,seed 3")
        self.assertNotIn("WANDB_TAGS", tracking.tracking_settings({"wandb": {"tags": ["a"]}}, {"WANDB_TAGS": "mine"}, "/runs/r1"))


if __name__ == "__main__":
    unittest.main()
