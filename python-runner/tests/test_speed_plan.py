"""speed.py's decisions (issue 34 item 1), stdlib only: what `speed: auto` picks per host, what `speed: off` leaves,
which options asked for by name are refused and with which reason, and when `attn_implementation: auto` picks
FlashAttention-2 (only where flash-attn imports, the GPU is Ampere or newer, the weights are 16-bit and the model
class supports it). The real libraries' side is tests_training/test_speed.py."""

import unittest
from typing import Any, Dict, List, Optional, Tuple

from remote_finetune import speed
from remote_finetune import trainer_plan as plan
from remote_finetune.spec import normalise

ALL = {"liger_kernel": True, "unsloth": True, "bitsandbytes": True}


def spec(method: str = "lora-bf16", **over: Any) -> Dict[str, Any]:
    raw: Dict[str, Any] = {"version": 1, "model": {"id": "org/m"}, "method": method, "data": {"train": "d.jsonl"},
                           "target": {"provider": "ssh"}, "trainer": {"optimizer": "adamw_torch"}}
    for key, value in over.items():
        raw[key] = dict(raw.get(key) or {}, **value) if isinstance(value, dict) else value
    return normalise(raw)


def h100(family: Optional[str] = "llama", installed: Optional[Dict[str, bool]] = None, **kw: Any) -> speed.Host:
    return speed.Host(True, (9, 0), family, ALL if installed is None else installed, **kw)


CPU = speed.Host(False, None, "llama", ALL)


class Auto(unittest.TestCase):
    def test_on_a_cuda_gpu_auto_turns_on_liger_and_fused_adamw_and_says_why(self):
        chosen = speed.plan(spec(), h100())
        self.assertEqual((chosen["speed"], chosen["backend"], chosen["liger"], chosen["optimizer"], chosen["compile"], chosen["packing"]),
                         ("auto", "builtin", True, "adamw_torch_fused", False, False))
        line = speed.describe(chosen, "flash_attention_2", "flash-attn imports")
        self.assertIn("liger on (speed auto: liger-kernel imports, a CUDA GPU, and it patches llama)", line)
        self.assertIn("optimizer adamw_torch_fused (speed auto:", line)
        self.assertIn("torch.compile off (", line)
        args = plan.training_args_kwargs(speed.apply(spec(), chosen), "/o", ["use_liger_kernel", "torch_compile", "optim"],
                                         has_eval=False, report_to=[], bnb_installed=True, warn=lambda m, c: None)
        self.assertEqual(args, {"use_liger_kernel": True, "optim": "adamw_torch_fused"})

    def test_on_the_cpu_auto_changes_nothing_and_says_why(self):
        chosen = speed.plan(spec(), CPU)
        self.assertEqual((chosen["liger"], chosen["optimizer"]), (False, "adamw_torch"))
        self.assertIn("need a CUDA GPU", chosen["why"]["liger"])

    def test_a_family_liger_does_not_patch_stays_without_it(self):
        chosen = speed.plan(spec(), h100("gpt2"))
        self.assertFalse(chosen["liger"])
        self.assertIn("liger-kernel has no kernels for model type gpt2", chosen["why"]["liger"])

    def test_liger_not_installed_stays_off(self):
        chosen = speed.plan(spec(), h100(installed={}))
        self.assertFalse(chosen["liger"])
        self.assertIn("not installed", chosen["why"]["liger"])

    def test_speed_off_keeps_the_spec(self):
        chosen = speed.plan(spec(speed="off"), h100())
        self.assertEqual((chosen["liger"], chosen["optimizer"]), (False, "adamw_torch"))
        self.assertEqual(chosen["why"]["liger"], "speed is off")

    def test_the_spec_s_own_false_wins(self):
        self.assertFalse(speed.plan(spec(trainer={"liger": False}), h100())["liger"])

    def test_paged_8bit_stays_as_asked(self):
        chosen = speed.plan(spec("qlora", trainer={"optimizer": "paged_adamw_8bit"}), h100())
        self.assertEqual(chosen["optimizer"], "paged_adamw_8bit")

    def test_paged_8bit_without_bitsandbytes_is_replaced_with_the_reason(self):
        warnings: List[Tuple[str, str]] = []
        kw = plan.training_args_kwargs(spec("qlora", trainer={"optimizer": "paged_adamw_8bit"}), "/o", ["optim"], has_eval=False,
                                       report_to=[], bnb_installed=False, warn=lambda m, c: warnings.append((c, m)))
        self.assertEqual(kw["optim"], "adamw_torch")
        self.assertEqual([w for w in warnings if w[0] == "bnb-missing"], [("bnb-missing", "optimizer paged_adamw_8bit needs bitsandbytes, which is not installed; using adamw_torch")])

    def test_fused_adamw_on_an_old_cpu_torch_falls_back_with_the_reason(self):
        old = speed.Host(False, None, "llama", {}, torch_version=(2, 3))
        chosen = speed.plan(spec(trainer={"optimizer": "adamw_torch_fused"}), old)
        self.assertEqual(chosen["optimizer"], "adamw_torch")
        self.assertIn("torch 2.4 or newer on the CPU (this torch is 2.3)", chosen["why"]["optimizer"])
        self.assertEqual(speed.plan(spec(trainer={"optimizer": "adamw_torch_fused"}), CPU)["optimizer"], "adamw_torch_fused")

    def test_compile_is_only_taken_when_asked(self):
        self.assertFalse(speed.plan(spec(), h100())["compile"])
        chosen = speed.plan(spec(trainer={"compile": True}), CPU)
        self.assertTrue(chosen["compile"])
        kw = plan.training_args_kwargs(speed.apply(spec(trainer={"compile": True}), chosen), "/o", ["torch_compile"], has_eval=False,
                                       report_to=[], bnb_installed=True, warn=lambda m, c: None)
        self.assertEqual(kw, {"torch_compile": True})


class Refused(unittest.TestCase):
    def refused(self, s: Dict[str, Any], host: speed.Host) -> str:
        with self.assertRaises(plan.SpecRefused) as cm:
            speed.plan(s, host)
        return str(cm.exception)

    def test_liger_asked_for_on_the_cpu(self):
        self.assertEqual(self.refused(spec(trainer={"liger": True}), CPU),
                         "trainer.liger: Liger's kernels are Triton kernels and need a CUDA GPU; this host has none. "
                         "Remove trainer.liger (or set it to false) to train without it.")

    def test_liger_asked_for_an_unsupported_family(self):
        self.assertIn("liger-kernel has no kernels for model type gpt2 (it patches", self.refused(spec(trainer={"liger": True}), h100("gpt2")))

    def test_liger_asked_for_but_not_installed(self):
        self.assertIn("liger-kernel is not installed", self.refused(spec(trainer={"liger": True}), h100(installed={})))

    def test_unsloth_where_it_cannot_run(self):
        cases = [
            (spec(trainer={"backend": "unsloth"}), CPU, "Unsloth runs on CUDA GPUs only; this host has none"),
            (spec("full", trainer={"backend": "unsloth"}), h100(), "LoRA adapters (method qlora or lora-bf16), not method full"),
            (spec(trainer={"backend": "unsloth"}), h100(world_size=2), "trains on one GPU; this run has 2 processes"),
            (spec(trainer={"backend": "unsloth"}), h100("gpt2"), "Unsloth does not support model type gpt2"),
            (spec(trainer={"backend": "unsloth"}), h100(installed={}), "unsloth is not installed"),
            # Installed but broken (train() imports it first and hands the error on): refused with Unsloth's message,
            # never a traceback at model load.
            (spec(trainer={"backend": "unsloth"}), h100(import_errors={"unsloth": "ImportError: no xformers"}),
             "unsloth is installed but does not import (ImportError: no xformers)"),
            (spec(trainer={"backend": "unsloth", "liger": True}), h100(), "keep one"),
        ]
        for s, host, words in cases:
            with self.subTest(words=words):
                self.assertIn(words, self.refused(s, host))

    def test_unsloth_where_it_can(self):
        chosen = speed.plan(spec("qlora", trainer={"backend": "unsloth"}), h100())
        self.assertEqual((chosen["backend"], chosen["liger"]), ("unsloth", False))


class FlashAttentionAuto(unittest.TestCase):
    def test_auto_picks_fa2_only_where_it_can_run(self):
        quiet = lambda m, c: None  # noqa: E731
        bf16 = spec("lora-bf16")
        cases = [
            (bf16, True, (8, 0), None, "flash_attention_2"),
            (bf16, False, (8, 0), None, "sdpa"),  # not importable
            (bf16, True, (7, 5), None, "sdpa"),  # T4: older than Ampere
            (bf16, True, None, None, "sdpa"),  # no GPU
            (spec("qlora"), True, (9, 0), None, "sdpa"),  # 4-bit weights
            (bf16, True, (9, 0), {"flash_attention_2": False, "sdpa": True}, "sdpa"),  # the model class lacks it
        ]
        for s, fa2, cap, supports, want in cases:
            with self.subTest(method=s["method"], fa2=fa2, cap=cap, supports=supports):
                self.assertEqual(plan.choose_attention(s, fa2, cap, quiet, supports), want)
                reason = speed.attention_reason(want, fa2, cap, plan.quantization_kwargs(s) is not None,
                                                plan.model_dtype(s) in ("bfloat16", "float16"), (supports or {}).get("flash_attention_2", True))
                self.assertTrue(reason)
        self.assertEqual(speed.attention_reason("sdpa", False, (8, 0), False, True, True), "flash-attn is not installed or does not load")


if __name__ == "__main__":
    unittest.main()
