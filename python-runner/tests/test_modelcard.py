"""The Hub model card `publish` writes (stdlib only: no Hub, no torch)."""

import json
import os
import tempfile
import unittest

from remote_finetune.events import read_events
from remote_finetune.modelcard import is_hub_id, model_card, run_summary
from remote_finetune.publish import folder_files

SPEC = {"name": "demo", "method": "qlora", "model": {"id": "meta-llama/Llama-3.1-8B"}, "lora": {"r": 16, "alpha": 32, "dropout": 0.05,
        "target_modules": "all-linear"}, "trainer": {"learning_rate": 2e-4, "epochs": 3, "max_steps": -1}, "data": {"train": "./data/train.jsonl"}}


def front_matter(card: str) -> str:
    assert card.startswith("---\n")
    return card[4:card.index("\n---\n", 4)]


class ModelCard(unittest.TestCase):
    def test_front_matter_names_the_hub_base_model_and_peft(self):
        card = model_card(SPEC, [], {}, "adapter", "alice/demo-lora")
        fm = front_matter(card)
        self.assertIn('base_model: "meta-llama/Llama-3.1-8B"', fm)
        self.assertIn("library_name: peft", fm)
        self.assertIn('- "qlora"', fm)
        self.assertNotIn("license", fm)
        self.assertIn("AutoPeftModelForCausalLM", card)
        self.assertNotIn("Max steps", card, "max_steps -1 means 'use epochs' and is not shown")
        self.assertNotIn("train.jsonl", card, "a local dataset path is not published")

    def test_a_dpo_adapter_is_tagged_and_described_as_lora(self):
        card = model_card(dict(SPEC, method="dpo", preference={"base_method": "qlora"}), [], {}, "adapter", "alice/demo-dpo")
        fm = front_matter(card)
        self.assertIn('- "dpo"', fm)
        self.assertIn('- "lora"', fm)
        self.assertIn("LoRA r / alpha / dropout", card)

    def test_merged_model_is_transformers_with_a_license_when_known(self):
        fm = front_matter(model_card(SPEC, [], {}, "merged", "alice/demo-merged", license="llama3.1"))
        self.assertIn("library_name: transformers", fm)
        self.assertIn('license: "llama3.1"', fm)
        self.assertIn('- "merged"', fm)

    def test_a_local_base_model_is_never_named(self):
        with tempfile.TemporaryDirectory() as d:
            local = os.path.join(d, "org", "model")
            os.makedirs(local)
            self.assertFalse(is_hub_id(local))
            card = model_card(dict(SPEC, model={"id": local}), [], {}, "adapter", "alice/x")
            self.assertNotIn("base_model", front_matter(card))
            self.assertNotIn(d, card)

    def test_user_text_cannot_break_the_yaml_or_the_table(self):
        card = model_card(dict(SPEC, name='x"\n---\nlicense: mit'), [], {"run_name": "a | b\n<script>", "gpu": "A100\n| x"}, "adapter", "alice/x")
        fm = front_matter(card)
        self.assertNotIn("license", fm)
        self.assertIn(r"a \| b &lt;script>", card)
        self.assertIn(r"| GPU | A100 \| x |", card)

    def test_results_come_from_the_events_and_the_runners_runtime_wins(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "events.jsonl"), "w") as f:
                for ev in ({"type": "started", "run_id": "r", "model": "m", "method": "qlora", "trainable_params": 1000, "trainable_pct": 1.5},
                           {"type": "metrics", "step": 5, "loss": 1.5}, {"type": "eval", "step": 5, "eval_loss": 1.75}):
                    f.write(json.dumps(dict(ev, v=1, ts=1.0)) + "\n")
                f.write('{"v": 1, "ts": 2, "type": "finished", "status": "completed", "exit_code": 0, "runtime_s": 3725}\n{"cut')
            events = read_events(d).events
        self.assertEqual(run_summary(events)["final_loss"], 1.5)
        card = model_card(SPEC, events, {"duration_s": 9999}, "adapter", "alice/x")
        self.assertIn("| Final training loss | 1.5000 |", card)
        self.assertIn("| Final eval loss | 1.7500 |", card)
        self.assertIn("| Trainable parameters | 1,000 (1.50%) |", card)
        self.assertIn("| Training time | 1h 02m 05s |", card)

    def test_folder_files_skip_links_hidden_files_and_peft_s_template_card(self):
        with tempfile.TemporaryDirectory() as d:
            for n in ("adapter_config.json", "README.md", ".env", "adapter_model.safetensors"):
                open(os.path.join(d, n), "w").close()
            os.symlink("/etc/passwd", os.path.join(d, "passwd"))
            os.mkdir(os.path.join(d, "checkpoint-5"))
            self.assertEqual(folder_files(d), ["adapter_config.json", "adapter_model.safetensors"])


if __name__ == "__main__":
    unittest.main()
