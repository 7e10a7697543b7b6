"""The built-in trainer's decisions, made with the stdlib from spec.json (the library objects are
built from them in trainer.py; the GPU smoke test exercises that part)."""

import os
import time
import unittest

from remote_finetune import trainer_plan as plan
from remote_finetune.callback import EventsCallbackCore, StopFlag
from remote_finetune.events import EventWriter, parse_event_line
from remote_finetune.spec import load_spec, normalise
from tests.helpers import FIXTURES, TempDirTest, read

RUNSPEC = os.path.join(FIXTURES, "runspec")
FIELDS = ["output_dir", "num_train_epochs", "max_steps", "per_device_train_batch_size", "per_device_eval_batch_size",
          "gradient_accumulation_steps", "learning_rate", "lr_scheduler_type", "warmup_ratio", "weight_decay", "bf16", "fp16",
          "optim", "gradient_checkpointing", "gradient_checkpointing_kwargs", "logging_steps", "eval_strategy", "eval_steps",
          "save_strategy", "save_steps", "save_total_limit", "seed", "report_to", "run_name", "logging_first_step",
          "save_safetensors", "remove_unused_columns", "include_num_input_tokens_seen", "load_best_model_at_end", "metric_for_best_model", "deepspeed"]


def spec(method="lora-bf16", **sections):
    raw = {"version": 1, "model": {"id": "m"}, "method": method}
    raw.update(sections)
    return normalise(raw)


class Warnings:
    def __init__(self):
        self.items = []

    def __call__(self, message, code):
        self.items.append((code, message))

    @property
    def codes(self):
        return [c for c, _ in self.items]


class Attention(unittest.TestCase):
    def test_bf16_lora_uses_fa2_when_installed_on_ampere(self):
        w = Warnings()
        self.assertEqual(plan.choose_attention(spec(), True, (8, 0), w), "flash_attention_2")
        self.assertEqual(plan.choose_attention(spec(), False, (8, 0), w), "sdpa")
        self.assertEqual(plan.choose_attention(spec(), True, (7, 5), w), "sdpa")  # T4
        self.assertEqual(w.items, [])

    def test_never_4bit_with_fa2(self):
        w = Warnings()
        s = spec("qlora", model={"id": "m", "attn_implementation": "flash_attention_2"})
        self.assertEqual(plan.choose_attention(s, True, (8, 0), w), "sdpa")
        self.assertEqual(w.codes, ["fa2-qlora"])
        self.assertEqual(plan.choose_attention(spec("qlora"), True, (9, 0), w), "sdpa")

    def test_asked_fa2_unavailable_falls_back_with_a_reason(self):
        w = Warnings()
        s = spec(model={"id": "m", "attn_implementation": "flash_attention_2"})
        self.assertEqual(plan.choose_attention(s, False, (8, 0), w), "sdpa")
        self.assertIn("not installed", w.items[0][1])
        self.assertEqual(plan.choose_attention(spec(model={"id": "m", "attn_implementation": "eager"}), True, (8, 0), w), "eager")


class ModelSettings(unittest.TestCase):
    def test_qlora_quantization(self):
        s = spec("qlora", quantization={"quant_type": "fp4", "compute_dtype": "float16", "double_quant": False})
        self.assertEqual(plan.quantization_kwargs(s), {"load_in_4bit": True, "bnb_4bit_quant_type": "fp4",
                                                       "bnb_4bit_use_double_quant": False, "bnb_4bit_compute_dtype": "float16"})
        self.assertEqual(plan.model_dtype(s), "float16")
        self.assertEqual(plan.quantization_kwargs(spec("qlora"))["bnb_4bit_quant_type"], "nf4")
        self.assertIsNone(plan.quantization_kwargs(spec()))

    def test_lora_config(self):
        self.assertEqual(plan.lora_kwargs(spec()), {"r": 16, "lora_alpha": 32, "lora_dropout": 0.05, "target_modules": "all-linear",
                                                    "bias": "none", "task_type": "CAUSAL_LM"})
        s = spec(lora={"r": 8, "alpha": 16, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"]})
        self.assertEqual(plan.lora_kwargs(s)["target_modules"], ["q_proj", "v_proj"])
        self.assertIsNone(plan.lora_kwargs(spec("full")))
        self.assertEqual(plan.model_dtype(spec("full", trainer={"precision": "fp32"})), "float32")


# transformers' OptimizerNames values the tests need (the trainer reads the real enum at run time).
OPTIM_NAMES = ["adamw_torch", "adamw_torch_fused", "adamw_bnb_8bit", "adamw_8bit", "paged_adamw_8bit", "paged_adamw_32bit",
               "sgd", "adafactor", "lion_8bit"]


class DeviceMap(unittest.TestCase):
    def test_each_rank_its_gpu_deepspeed_places_16_bit_weights_4_bit_keeps_its_map(self):
        self.assertEqual(plan.device_map(True, False, False, 0), {"": 0})
        self.assertEqual(plan.device_map(True, False, True, 2), {"": 2})
        self.assertIsNone(plan.device_map(True, True, False, 3))  # ZeRO-2/3: the engine places them
        self.assertEqual(plan.device_map(True, True, True, 3), {"": 3})  # QLoRA under DeepSpeed: rank 3's GPU
        self.assertEqual(plan.device_map(False, False, True, 0), {"": "cpu"})
        self.assertIsNone(plan.device_map(False, False, False, 0))


class TrainingArgs(unittest.TestCase):
    def kwargs(self, s, **kw):
        w = Warnings()
        opts = dict(has_eval=True, report_to=[], bnb_installed=True, warn=w, optimizers=OPTIM_NAMES)
        opts.update(kw)
        return plan.training_args_kwargs(s, "/out", FIELDS, **opts), w

    def test_qlora_t4_fixture(self):
        s, errs = load_spec(os.path.join(RUNSPEC, "qlora_t4.json"))
        self.assertEqual(errs, [])
        kw, w = self.kwargs(plan.resolved_spec(s, (7, 5), Warnings()))
        self.assertEqual((kw["num_train_epochs"], kw["per_device_train_batch_size"], kw["gradient_accumulation_steps"]), (3, 1, 16))
        self.assertEqual((kw["fp16"], kw["bf16"], kw["optim"]), (True, False, "paged_adamw_8bit"))
        self.assertEqual(kw["eval_strategy"], "steps")
        self.assertEqual(kw["gradient_checkpointing_kwargs"], {"use_reentrant": False})
        self.assertTrue(kw["include_num_input_tokens_seen"])
        self.assertEqual(w.items, [])

    def test_bf16_is_decided_by_compute_capability_and_dtypes_follow(self):
        # torch.cuda.is_bf16_supported() says True on a T4 (7.5) and a V100 (7.0): bf16 is emulated there.
        for cap in ((7, 5), (7, 0)):
            w = Warnings()
            s = plan.resolved_spec(spec("qlora", trainer={"precision": "bf16"}, quantization={"compute_dtype": "bfloat16"}), cap, w)
            self.assertEqual(w.codes, ["bf16-fallback"])
            kw, _ = self.kwargs(s)
            self.assertEqual((kw["bf16"], kw["fp16"]), (False, True))
            self.assertEqual(plan.quantization_kwargs(s)["bnb_4bit_compute_dtype"], "float16")
            self.assertEqual(plan.model_dtype(s), "float16")
            lora = plan.resolved_spec(spec("lora-bf16", trainer={"precision": "bf16"}), cap, Warnings())
            self.assertEqual(plan.model_dtype(lora), "float16")
        for cap in ((8, 0), (8, 6), (9, 0), None):  # A100, A10G/L4-class, H100, CPU
            w = Warnings()
            s = plan.resolved_spec(spec("lora-bf16", trainer={"precision": "bf16"}), cap, w)
            self.assertEqual((w.codes, plan.model_dtype(s)), ([], "bfloat16"), cap)

    def test_full_fine_tune_in_fp16_keeps_fp32_master_weights(self):
        self.assertEqual(plan.model_dtype(spec("full", trainer={"precision": "fp16"})), "float32")
        self.assertEqual(plan.model_dtype(spec("full", trainer={"precision": "bf16"})), "bfloat16")
        self.assertEqual(plan.model_dtype(spec("lora-bf16", trainer={"precision": "fp16"})), "float16")

    def test_optimizers_pass_through_and_only_unknown_ones_are_replaced(self):
        for name in ("adamw_torch_fused", "adamw_bnb_8bit", "sgd", "paged_adamw_8bit", "adafactor"):
            kw, w = self.kwargs(spec(trainer={"optimizer": name}))
            self.assertEqual((kw["optim"], w.codes), (name, []), name)
        kw, w = self.kwargs(spec(trainer={"optimizer": "adamw_8bit"}))
        self.assertEqual(kw["optim"], "adamw_bnb_8bit")
        kw, w = self.kwargs(spec(trainer={"optimizer": "no_such_optim"}))
        self.assertEqual((kw["optim"], w.codes), ("adamw_torch", ["unknown-optimizer"]))

    def test_remove_unused_columns_only_for_our_own_tokenized_columns(self):
        self.assertFalse(self.kwargs(spec())[0]["remove_unused_columns"])
        self.assertNotIn("remove_unused_columns", self.kwargs(spec(), pretokenized=False)[0], "forced on the SFT path")

    def test_deepspeed_config_reaches_the_training_arguments(self):
        self.assertEqual(self.kwargs(spec(), deepspeed="/ws/ds_config.json")[0]["deepspeed"], "/ws/ds_config.json")
        self.assertNotIn("deepspeed", self.kwargs(spec())[0])

    def test_8bit_optimizer_without_bitsandbytes(self):
        kw, w = self.kwargs(spec(trainer={"optimizer": "adamw_8bit"}), bnb_installed=False)
        self.assertEqual(kw["optim"], "adamw_torch")
        self.assertEqual(w.codes, ["bnb-missing"])
        self.assertEqual(self.kwargs(spec(trainer={"optimizer": "adamw_8bit"}))[0]["optim"], "adamw_bnb_8bit")

    def test_eval_without_data_and_pass_through_and_old_field_names(self):
        s = spec(trainer={"eval_strategy": "steps", "load_best_model_at_end": True, "max_grad_norm": 0.3})
        kw, w = self.kwargs(s, has_eval=False)
        self.assertEqual(kw["eval_strategy"], "no")
        self.assertNotIn("load_best_model_at_end", kw)
        self.assertEqual(w.codes, ["unknown-trainer-key", "no-eval-set"])  # max_grad_norm is not in FIELDS here
        old = [f if f != "eval_strategy" else "evaluation_strategy" for f in FIELDS]
        kw = plan.training_args_kwargs(spec(data={"train": "a", "eval": "b"}), "/o", old, has_eval=True, report_to=["wandb"],
                                       bnb_installed=True, warn=Warnings())
        self.assertEqual(kw["evaluation_strategy"], "steps")
        self.assertEqual(kw["report_to"], ["wandb"])
        self.assertTrue(set(kw) <= set(old))

    def test_warmup_ratio_becomes_a_fractional_warmup_steps_where_transformers_5_dropped_it(self):
        v5 = [f for f in FIELDS if f != "warmup_ratio"] + ["warmup_steps"]
        for trainer, want, codes in (({"warmup_ratio": 0.1}, 0.1, []),
                                     ({}, 0.03, []),  # the spec's default ratio is kept, not dropped with a warning
                                     ({"warmup_ratio": 0.1, "warmup_steps": 20}, 20, []),  # explicit steps win, as in 4.x
                                     ({"warmup_ratio": 1.5}, None, ["bad-warmup-ratio"])):
            w = Warnings()
            kw = plan.training_args_kwargs(spec(trainer=trainer), "/o", v5, has_eval=False, report_to=[], bnb_installed=True, warn=w)
            self.assertEqual(kw.get("warmup_steps"), want, trainer)
            self.assertNotIn("warmup_ratio", kw)
            self.assertEqual(w.codes, codes, trainer)
        kw, w = self.kwargs(spec(trainer={"warmup_ratio": 0.1}))  # 4.x keeps its own field
        self.assertEqual((kw["warmup_ratio"], kw.get("warmup_steps")), (0.1, None))

    def test_every_shared_fixture_maps_cleanly(self):
        for name in sorted(os.listdir(RUNSPEC)):
            if name.endswith(".json") and not name.startswith("invalid"):
                s, errs = load_spec(os.path.join(RUNSPEC, name))
                self.assertEqual(errs, [], name)
                kw, w = self.kwargs(s)
                self.assertEqual([c for c in w.codes if c == "unknown-trainer-key"], [], name)
                self.assertIn(kw["optim"], OPTIM_NAMES)
                self.assertEqual([c for c in w.codes if c == "unknown-optimizer"], [], name)


class DataAndResume(TempDirTest):
    def test_newest_complete_checkpoint(self):
        out = self.path("outputs")
        self.assertIsNone(plan.find_resume_checkpoint(out))
        for step, complete in ((50, True), (100, True), (150, False), (9, True)):
            self.write("outputs/checkpoint-%d/%s" % (step, "trainer_state.json" if complete else "partial.bin"), "{}")
        self.write("outputs/checkpoint-x/trainer_state.json", "{}")
        self.assertEqual(plan.find_resume_checkpoint(out), os.path.join(out, "checkpoint-100"))

    def test_checkpoints_live_in_a_folder_of_their_run(self):
        out = self.path("outputs")
        self.write("outputs/checkpoints/run-a/checkpoint-500/trainer_state.json", "{}")
        self.write("outputs/checkpoint-900/trainer_state.json", "{}")  # another run's, in the shared folder
        self.assertIsNone(plan.find_resume_checkpoint(plan.checkpoint_dir(out, "run-b")))
        self.assertEqual(plan.find_resume_checkpoint(plan.checkpoint_dir(out, "run-a")), os.path.join(out, "checkpoints", "run-a", "checkpoint-500"))
        self.assertEqual(plan.checkpoint_dir(out, "../x"), os.path.join(out, "checkpoints", ".._x"))

    def test_dataset_source(self):
        self.write("work/data/train.jsonl", "{}\n")
        self.write("work/data/eval.csv", "text\nx\n")
        self.write("work/data/t.parquet", "")
        self.write("work/data/t.tsv.gz", "")
        s = spec(data={"train": "data/train.jsonl", "eval": "data/eval.csv"})
        src = plan.dataset_source(s, self.path("work"))
        self.assertEqual(src["kind"], "local")
        self.assertEqual(src["train"], ("json", self.path("work/data/train.jsonl")))
        self.assertEqual(src["eval"], ("csv", self.path("work/data/eval.csv")), "CSV read with the json loader")
        self.assertEqual(plan.dataset_source(spec(data={"train": "data/t.parquet"}), self.path("work"))["train"][0], "parquet")
        self.assertEqual(plan.loader_for(self.path("work/data/t.tsv.gz")), "csv")
        hub = plan.dataset_source(spec(data={"train": "tatsu-lab/alpaca", "split": "train[:1%]"}), self.path("work"))
        self.assertEqual(hub, {"kind": "hub", "id": "tatsu-lab/alpaca", "split": "train[:1%]", "eval": None})

    def test_text_field_and_chat_template(self):
        ex = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}], "text": "plain"}
        self.assertEqual(plan.format_text(ex, "text", False, None), "plain")
        self.assertEqual(plan.format_text(ex, "text", True, lambda m: "<t>%d</t>" % len(m)), "<t>2</t>")
        self.assertEqual(plan.format_text(ex, "text", True, None), "user: hi\nassistant: hello")
        self.assertIsNone(plan.format_text({"other": 1}, "text", False, None))


class CallbackCore(TempDirTest):
    """The events the TrainerCallback writes, driven the way Trainer drives it."""

    def test_started_metrics_eval_checkpoint_and_stop(self):
        w = EventWriter(self.path("events.jsonl"))
        t = [1000.0]
        stop = StopFlag()
        core = EventsCallbackCore(w, run_id="r1", model="tiny-llama", method="lora-bf16", world_size=2, samples_per_step=8,
                                  peak_memory_mb=lambda: 1234.56, clock=lambda: t[0], stop=stop, marker_dir=self.tmp)
        core.train_begin(True, 1000, 10, 0, 0)
        t[0] += 10
        core.log(True, {"loss": 2.5, "grad_norm": 0.7, "learning_rate": 2e-4, "epoch": 0.1, "custom": 3}, 10, 20480)
        core.log(True, {"eval_loss": 2.4, "eval_runtime": 1.5, "epoch": 0.1}, 10, 20480)
        core.save(True, 10, "outputs/checkpoint-10")
        core.log(False, {"loss": 9.0}, 11, None)  # other ranks write nothing
        self.assertFalse(core.step_end())
        stop.signum = 15
        self.assertTrue(core.step_end())
        evs = [parse_event_line(l) for l in read(self.path("events.jsonl")).splitlines()]
        self.assertTrue(all(err is None for _, err in evs), evs)
        evs = [e for e, _ in evs]
        self.assertEqual([e["type"] for e in evs], ["started", "metrics", "eval", "checkpoint"])
        self.assertEqual((evs[0]["trainable_params"], evs[0]["total_params"], evs[0]["trainable_pct"], evs[0]["world_size"]), (10, 1000, 1.0, 2))
        m = evs[1]
        self.assertEqual((m["step"], m["loss"], m["grad_norm"], m["epoch"]), (10, 2.5, 0.7, 0.1))
        self.assertEqual((m["samples_per_second"], m["tokens_per_second"], m["peak_gpu_memory_mb"]), (8.0, 2048.0, 1234.6))
        self.assertEqual(m["extra"], {"custom": 3.0})
        self.assertEqual((evs[2]["eval_loss"], evs[2]["metrics"]), (2.4, {"eval_runtime": 1.5}))
        self.assertEqual(evs[3]["path"], "outputs/checkpoint-10")
        self.assertTrue(os.path.exists(self.path(".callback_active")))

    def test_own_script_callback_does_not_repeat_started(self):
        w = EventWriter(self.path("events.jsonl"))
        EventsCallbackCore(w, run_id="r", model="m", method="own-script", marker_dir=self.tmp).train_begin(True, 1, 1, 0, None)
        self.assertFalse(os.path.exists(self.path("events.jsonl")))
        self.assertTrue(os.path.exists(self.path(".callback_active")))


if __name__ == "__main__":
    unittest.main()
