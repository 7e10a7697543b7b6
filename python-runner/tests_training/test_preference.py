"""Preference tuning (issue 31.8) on the real stack, tiny llama on CPU, under `python -m remote_finetune run` as a
user's run goes: method dpo and orpo with prompt/chosen/rejected rows (plain text, and conversational with the
Llama 3 template), a LoRA adapter through TRL's own trainers; the metrics events carry the reward margins TRL
logs, a checkpoint is written, and the same run started again in its run dir resumes from that checkpoint.
DPO on a QLoRA base (preference.base_method: qlora) trains the same way on a 4-bit base: bitsandbytes quantises
on the CPU since 0.48, which both locks have."""

import json
import os
from typing import Any, Dict, List

from remote_finetune import trainer_plan as plan
from remote_finetune.spec import normalise
from tests_training import tiny
from tests_training.test_data_errors import llama3_model, write_jsonl
from tests_training.test_training import Case, base_spec, tiny_model

STEPS = 3


def plain_rows(n: int = 24) -> List[Dict[str, Any]]:
    rows = []
    for i, c in enumerate(tiny.conversations(n)):
        right = c[1]["content"]
        rows.append({"prompt": c[0]["content"] + " ", "chosen": right, "rejected": "I do not know %d." % i})
    return rows


def chat_rows(n: int = 24) -> List[Dict[str, Any]]:
    return [{"prompt": [{"role": "user", "content": r["prompt"].strip()}],
             "chosen": [{"role": "assistant", "content": r["chosen"]}],
             "rejected": [{"from": "gpt", "value": r["rejected"]}]}  # ShareGPT's keys, as chat rows may have them
            for r in plain_rows(n)]


def implicit_prompt_rows(n: int = 24) -> List[Dict[str, Any]]:
    """Anthropic HH's layout: no prompt column, the whole conversation in chosen and in rejected (TRL takes their
    shared start as the prompt)."""
    return [{"chosen": [{"role": "user", "content": r["prompt"].strip()}, {"role": "assistant", "content": r["chosen"]}],
             "rejected": [{"role": "user", "content": r["prompt"].strip()}, {"role": "assistant", "content": r["rejected"]}]}
            for r in plain_rows(n)]


def _metrics(events: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [e for e in events if e["type"] == "metrics" and "loss" in e]


class PreferenceTrains(Case):
    def spec(self, model: str, method: str, **over: Any) -> Dict[str, Any]:
        return base_spec(model, method=method, data={"train": "data/pref.jsonl", "max_seq_length": 64},
                         trainer={"max_steps": STEPS, "per_device_batch_size": 2, "gradient_accumulation": 1, "learning_rate": 5e-3,
                                  "lr_scheduler": "constant", "logging_steps": 1, "save_steps": 2, "precision": "bf16",
                                  "optimizer": "adamw_torch", "gradient_checkpointing": False, "seed": 7}, **over)

    def check(self, model: str, method: str, rows: List[Dict[str, Any]], reward_key: str, **over: Any) -> List[Dict[str, Any]]:
        write_jsonl(os.path.join(self.workdir, "data/pref.jsonl"), rows)
        spec = self.spec(model, method, **over)
        rc, events = self.run_spec(spec)
        tail = self.output()[-4000:]
        self.assertEqual(rc, 0, tail)
        metrics = _metrics(events)
        self.assertEqual([e["step"] for e in metrics], list(range(1, STEPS + 1)), tail)
        self.assertTrue(all(reward_key in e.get("extra", {}) for e in metrics), metrics)
        print("\n%s: %s per step %s" % (method, reward_key, [round(e["extra"][reward_key], 4) for e in metrics]))
        self.assertEqual([e["step"] for e in events if e["type"] == "checkpoint"], [2, 3], tail)
        finished = events[-1]
        self.assertEqual((finished["type"], finished["status"]), ("finished", "completed"), tail)
        adapter = os.path.join(self.workdir, "outputs", os.path.basename(self.run_dir), "adapter")
        self.assertTrue(os.path.isfile(os.path.join(adapter, "adapter_model.safetensors")), tail)

        # Resume: the same run started again with more steps goes on from its checkpoint-3, not from step 0.
        before = len(events)
        spec["trainer"]["max_steps"] = STEPS + 2
        rc, events = self.run_spec(spec)
        again = events[before:]
        self.assertEqual(rc, 0, self.output()[-4000:])
        self.assertIn("resumed", [e.get("code") for e in again if e["type"] == "warning"])
        self.assertEqual([e["step"] for e in _metrics(again)], [STEPS + 1, STEPS + 2], self.output()[-4000:])
        return metrics

    def test_dpo_lora_plain(self):
        self.check(tiny_model("llama"), "dpo", plain_rows(), "rewards/margins")

    def test_dpo_lora_conversational(self):
        self.check(llama3_model(), "dpo", chat_rows(), "rewards/margins")

    def test_dpo_lora_implicit_prompt(self):
        self.check(llama3_model(), "dpo", implicit_prompt_rows(), "rewards/margins")

    def test_dpo_qlora_plain(self):
        import bitsandbytes  # noqa: F401  (CPU 4-bit quantisation since bitsandbytes 0.48)
        self.check(tiny_model("llama"), "dpo", plain_rows(), "rewards/margins", preference={"base_method": "qlora"},
                   quantization={"load_in_4bit": True, "quant_type": "nf4", "double_quant": True, "compute_dtype": "bfloat16"})
        self.assertIn("(qlora, attn_implementation=sdpa, dtype=bfloat16)", self.output())
        with open(os.path.join(self.workdir, "outputs", os.path.basename(self.run_dir), "adapter", "adapter_config.json")) as f:
            self.assertEqual(json.load(f)["peft_type"], "LORA")

    def test_orpo_lora_plain(self):
        # ORPO logs its own rewards (beta-scaled log-probabilities) and their margin under the same names.
        metrics = self.check(tiny_model("llama"), "orpo", plain_rows(), "rewards/margins")
        self.assertTrue(all("log_odds_ratio" in e["extra"] for e in metrics), metrics)

    def test_sft_method_refuses_preference_rows(self):
        write_jsonl(os.path.join(self.workdir, "data/pref.jsonl"), plain_rows())
        rc, events = self.run_spec(self.spec(tiny_model("llama"), "lora-bf16"))
        self.assertEqual(rc, 2, self.output()[-3000:])
        errors = [e for e in events if e["type"] == "error"]
        self.assertIn("method dpo or orpo", errors[0]["message"])


class QloraPlan(Case):
    def test_dpo_on_a_4bit_base_loads_4bit_with_lora(self):
        spec = normalise({"version": 1, "method": "dpo", "model": {"id": "m"}, "data": {"train": "d"},
                          "preference": {"base_method": "qlora", "beta": 0.2}})
        base = plan.base_spec(spec)
        self.assertEqual(base["method"], "qlora")
        self.assertEqual(plan.quantization_kwargs(base)["load_in_4bit"], True)
        self.assertEqual(plan.lora_kwargs(base)["task_type"], "CAUSAL_LM")
        self.assertEqual(plan.model_dtype(base), "bfloat16")
        self.assertEqual(plan.preference_kwargs(spec, ["beta", "max_length"]), {"beta": 0.2, "max_length": 2048})
        # The default base is a 16-bit one: no quantisation unless asked.
        self.assertIsNone(plan.quantization_kwargs(plan.base_spec(normalise(dict(spec, preference={})))))
