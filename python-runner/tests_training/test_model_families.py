"""Attention chosen by what the model class supports (issue 31.5): a tiny random model of each family, built from
its config with the installed transformers, trains 3 LoRA steps on all linear layers through `python -m
remote_finetune run` with the default `attn_implementation: auto`, saves, reloads with peft and generates. The
attention the runner picks is checked against the class's own flags (`_supports_sdpa`, `_supports_flash_attn` /
`_supports_flash_attn_2`): Gemma-2 under transformers 5 and gpt-oss refuse sdpa and must load with eager.
A family this transformers does not know is skipped, named as such."""

import os
import re
import unittest
from typing import Any, Dict

from remote_finetune import signatures
from tests_training import test_training as tt
from tests_training import tiny

SMALL = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             max_position_embeddings=256, tie_word_embeddings=False)
FAMILIES: Dict[str, Dict[str, Any]] = {
    "llama": {},  # Llama 3
    "qwen2": {},  # Qwen 2.5
    "qwen3": {"head_dim": 16},
    "mistral": {"head_dim": 16},
    "gemma2": {"head_dim": 16, "query_pre_attn_scalar": 16, "sliding_window": 32},
    "gemma3_text": {"head_dim": 16, "query_pre_attn_scalar": 16, "sliding_window": 32},
    "phi3": {"pad_token_id": 0},  # its default pad id (32000) lies past this vocabulary
    "mixtral": {"num_local_experts": 4, "num_experts_per_tok": 2},
    "qwen2_moe": {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 32},
    "gpt_oss": {"head_dim": 16, "num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 32, "intermediate_size": 64},
}


def model_class(model_type: str) -> Any:
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING
    return MODEL_FOR_CAUSAL_LM_MAPPING[type(AutoConfig.for_model(model_type))]


def expected_attention(model_type: str) -> str:
    """What auto must pick on a CPU (no flash-attn, no Ampere): sdpa where the class declares it, else eager."""
    return "sdpa" if getattr(model_class(model_type), "_supports_sdpa", False) else "eager"


def known(model_type: str) -> bool:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    return model_type in CONFIG_MAPPING_NAMES


class ModelFamilies(tt.Case):
    def build(self, model_type: str) -> str:
        tok = tiny.build_tokenizer(os.path.join(self.tmp, "tok"))
        config = dict(SMALL, model_type=model_type, vocab_size=len(tok), **FAMILIES[model_type])
        return tiny.build_model_from_config(os.path.join(self.tmp, "model-" + model_type), config, tok)

    def train_one(self, model_type: str) -> None:
        import torch
        from peft import PeftModel
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model_dir = self.build(model_type)
        self.data("text-jsonl", "data/train.jsonl")
        spec = tt.base_spec(model_dir, model={"id": model_dir, "attn_implementation": "auto"},
                            trainer={"max_steps": 3, "save_steps": 3, "gradient_checkpointing": True})
        rc, events = self.run_spec(spec)
        log = self.output()
        msg = "exit %s\noutput.log tail:\n%s" % (rc, log[-3000:])
        self.assertEqual(rc, 0, msg)
        self.assertEqual(events[-1].get("status"), "completed", msg)
        self.assertEqual([e for e in events if e["type"] == "error"], [], msg)
        self.assertEqual(sum(1 for e in events if e["type"] == "metrics" and "loss" in e), 3, msg)
        picked = re.search(r"attn_implementation=(\w+)", log)
        self.assertEqual(picked and picked.group(1), expected_attention(model_type), msg)
        # transformers 5 deprecates gradient_checkpointing* for removal in 6: the runner must use the new name.
        self.assertNotRegex(log, r"`gradient_checkpointing\w*` is deprecated", msg)

        adapter = os.path.join(self.workdir, events[-1]["adapter_path"])
        tokenizer = AutoTokenizer.from_pretrained(adapter)
        base = AutoModelForCausalLM.from_pretrained(model_dir, **{tt._dtype_name(): torch.float32})
        model = PeftModel.from_pretrained(base, adapter).eval()
        targeted = {n.split(".lora_A")[0].split(".")[-1] for n, _ in model.named_parameters() if "lora_A" in n}
        self.assertTrue(targeted, "all-linear put LoRA on no module")
        ids = {k: v for k, v in tokenizer("The capital of France is", return_tensors="pt").items() if k in ("input_ids", "attention_mask")}
        with torch.no_grad():
            out = model.generate(**ids, max_new_tokens=4, min_new_tokens=4, do_sample=False, pad_token_id=tokenizer.pad_token_id)
        self.assertEqual(out.shape[1], ids["input_ids"].shape[1] + 4)
        print("family %s: attention %s, LoRA on %s, generated %r" % (
            model_type, picked.group(1) if picked else None, sorted(targeted),
            tokenizer.decode(out[0, ids["input_ids"].shape[1]:])), flush=True)


def _family_test(model_type: str) -> Any:
    def test(self: ModelFamilies) -> None:
        if not known(model_type):
            self.skipTest("this transformers does not know %s" % model_type)
        self.train_one(model_type)
    test.__name__ = "test_" + model_type
    return test


for _t in FAMILIES:
    setattr(ModelFamilies, "test_" + _t, _family_test(_t))


class LoadFailureSignature(tt.Case):
    def test_a_class_refusing_sdpa_is_a_recognised_failure_with_its_fix(self):
        from transformers import AutoModelForCausalLM
        refusing = next((t for t in ("gpt_oss", "gemma2") if known(t) and expected_attention(t) == "eager"), None)
        if refusing is None:
            self.skipTest("no family refuses sdpa in this transformers")
        model_dir = ModelFamilies.build(self, refusing)  # type: ignore[arg-type]
        with self.assertRaises(Exception) as e:
            AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="sdpa")
        line = "%s: %s" % (type(e.exception).__name__, e.exception)
        sig = signatures.match_line(line)
        self.assertIsNotNone(sig, line)
        self.assertEqual(sig.id, "attn-unsupported", line)
        self.assertIn("attn_implementation: auto", sig.hint)


if __name__ == "__main__":
    unittest.main()
