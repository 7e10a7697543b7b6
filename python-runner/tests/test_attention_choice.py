"""`attn_implementation: auto` asks the model class (issue 31.5): FlashAttention-2 where flash-attn, the GPU, the
weights and the class all allow it, else sdpa where the class supports it, else eager. The support flags are the
ones transformers' own classes declare (tests_training/test_model_families.py reads them from the installed
library: Gemma-2 under transformers 5 and gpt-oss say `_supports_sdpa = False`)."""

import unittest

from remote_finetune import trainer_plan as plan
from remote_finetune.spec import normalise

NO_SDPA = {"flash_attention_2": True, "sdpa": False}
NO_FA2 = {"flash_attention_2": False, "sdpa": True}


def spec(attn="auto", method="lora-bf16"):
    return normalise({"version": 1, "model": {"id": "m", "attn_implementation": attn}, "method": method})


class Warnings(list):
    def __call__(self, message, code):
        self.append((code, message))


class AttentionByClass(unittest.TestCase):
    def test_auto_on_a_class_without_sdpa_is_eager(self):
        w = Warnings()
        self.assertEqual(plan.choose_attention(spec(), False, (8, 0), w, NO_SDPA), "eager")
        self.assertEqual(plan.choose_attention(spec(method="qlora"), True, (8, 0), w, NO_SDPA), "eager")
        self.assertEqual(w, [], "auto needs no warning")

    def test_auto_takes_fa2_when_the_class_and_the_gpu_have_it(self):
        self.assertEqual(plan.choose_attention(spec(), True, (8, 0), Warnings(), NO_SDPA), "flash_attention_2")
        self.assertEqual(plan.choose_attention(spec(), True, (8, 0), Warnings(), NO_FA2), "sdpa")
        self.assertEqual(plan.choose_attention(spec(), True, (7, 5), Warnings(), NO_SDPA), "eager")

    def test_explicit_sdpa_on_a_class_without_it_falls_back_with_a_warning(self):
        w = Warnings()
        self.assertEqual(plan.choose_attention(spec("sdpa"), False, None, w, NO_SDPA), "eager")
        self.assertEqual([c for c, _ in w], ["sdpa-unsupported"])

    def test_explicit_fa2_on_a_class_without_it_names_the_reason(self):
        w = Warnings()
        self.assertEqual(plan.choose_attention(spec("flash_attention_2"), True, (9, 0), w, NO_FA2), "sdpa")
        self.assertIn("this model class does not support it", w[0][1])

    def test_unknown_support_assumes_both(self):
        self.assertEqual(plan.choose_attention(spec(), False, (8, 0), Warnings(), None), "sdpa")


if __name__ == "__main__":
    unittest.main()
