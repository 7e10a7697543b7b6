"""Dataset layouts and files as users have them, read and converted by the trainer's data path (issue 31.1).

Each layout is written in the file formats people keep it in (JSONL, JSON, CSV, Parquet, a save_to_disk folder,
a Hub dataset repo with configs). The oracle for a conversion is the same conversation written in OpenAI form
(`messages` with role/content) and masked by TRL's marker version of the real Llama 3 template, what TRL's
assistant_only_loss would train on: the ShareGPT twin must give the same tokens and the same labels.
"""

import json
import os
import shutil
import tempfile
import unittest
from typing import Any, Dict, List, Tuple

from tests_training import chat_tokenizers as ct

SHAREGPT_ROLE = {"system": "system", "user": "human", "assistant": "gpt"}


def openai_rows() -> List[Dict[str, Any]]:
    return [{"messages": m} for m in ct.samples(True) * 3] + [{"messages": m} for m in ct.samples(False) * 3]


def sharegpt(rows: List[Dict[str, Any]], roles: Dict[str, str] = SHAREGPT_ROLE) -> List[Dict[str, Any]]:
    return [{"conversations": [{"from": roles[m["role"]], "value": m["content"]} for m in r["messages"]]} for r in rows]


def alpaca_rows() -> List[Dict[str, str]]:
    return [{"instruction": "Give the capital of %s." % c, "input": "" if i % 2 else "Answer in one word.", "output": city}
            for i, (c, city) in enumerate([("France", "Paris"), ("Japan", "Tokyo"), ("Peru", "Lima"), ("Chile", "Santiago")])]


def oracle(tok_training: Any, messages: List[Dict[str, str]]) -> Tuple[List[int], List[int]]:
    out = tok_training.apply_chat_template(messages, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    ids = list(out["input_ids"])
    return ids, [t if m else -100 for t, m in zip(ids, out["assistant_masks"])]


class Formats(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.mkdtemp(prefix="rft-formats-")
        cls.tok = ct.tokenizer("llama3")
        cls.tok.pad_token = cls.tok.eos_token
        cls.ref = ct.tokenizer("llama3", training=True)

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def path(self, rel: str) -> str:
        p = os.path.join(self.tmp, "ws", rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        return p

    def jsonl(self, rel: str, rows: List[Dict[str, Any]]) -> str:
        with open(self.path(rel), "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
        return rel

    def prepare(self, data: Dict[str, Any], run_dir: str = "") -> Tuple[Any, Any]:
        from remote_finetune.spec import normalise
        from remote_finetune.data_loading import load_raw_datasets
        from remote_finetune.data_prep import prepare_datasets
        from remote_finetune.trainer import Run
        spec = normalise({"version": 1, "method": "lora-bf16", "model": {"id": "x"}, "data": dict({"max_seq_length": 512}, **data),
                          "trainer": {"seed": 7}})
        run_dir = run_dir or tempfile.mkdtemp(prefix="run-", dir=self.tmp)
        run = Run(run_dir, os.path.join(self.tmp, "ws"))
        train, ev = load_raw_datasets(spec, run.workdir, run_dir)
        return prepare_datasets(spec, self.tok, train, ev, run)

    def rows(self, ds: Any) -> List[Tuple[List[int], List[int]]]:
        return [(list(r["input_ids"]), list(r["labels"])) for r in ds]

    def test_openai_and_sharegpt_in_jsonl_parquet_and_save_to_disk_are_the_same_conversations(self):
        import pyarrow as pa
        import pyarrow.parquet as pq
        from datasets import Dataset
        rows = openai_rows()
        want = [oracle(self.ref, r["messages"]) for r in rows]
        self.jsonl("chat/openai.jsonl", rows)
        self.jsonl("chat/sharegpt.jsonl", sharegpt(rows))
        pq.write_table(pa.Table.from_pylist(sharegpt(rows)), self.path("chat/sharegpt.parquet"))
        Dataset.from_list(rows).save_to_disk(self.path("chat/openai_saved"))
        with open(self.path("chat/openai.json"), "w", encoding="utf-8") as f:
            json.dump(rows, f)
        for rel in ("chat/openai.jsonl", "chat/sharegpt.jsonl", "chat/sharegpt.parquet", "chat/openai_saved", "chat/openai.json"):
            train, _ = self.prepare({"train": rel, "chat_template": True})
            self.assertEqual(self.rows(train), want, rel)

    def test_sharegpt_role_names_and_a_roles_override(self):
        rows = openai_rows()[:4]
        want = [oracle(self.ref, r["messages"]) for r in rows]
        variants = {"model": {"system": "system", "user": "user", "assistant": "model"},
                    "custom": {"system": "system", "user": "patient", "assistant": "doctor"}}
        self.jsonl("roles/model.jsonl", sharegpt(rows, variants["model"]))
        self.jsonl("roles/custom.jsonl", sharegpt(rows, variants["custom"]))
        self.assertEqual(self.rows(self.prepare({"train": "roles/model.jsonl", "chat_template": True})[0]), want)
        for roles in ({"patient": "user", "doctor": "assistant"}, {"user": ["patient"], "assistant": ["doctor"]}):
            got = self.prepare({"train": "roles/custom.jsonl", "chat_template": True, "roles": roles})[0]
            self.assertEqual(self.rows(got), want, roles)

    def test_alpaca_in_json_and_csv_trains_on_the_output(self):
        import csv
        rows = alpaca_rows()
        with open(self.path("alpaca/train.json"), "w", encoding="utf-8") as f:
            json.dump(rows, f)
        with open(self.path("alpaca/train.csv"), "w", encoding="utf-8", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["instruction", "input", "output"])
            w.writeheader()
            w.writerows(rows)
        for rel in ("alpaca/train.json", "alpaca/train.csv"):
            # With the template: a user turn (instruction, then input on the next line) and the assistant's output.
            got = self.rows(self.prepare({"train": rel, "chat_template": True})[0])
            for r, (ids, labels) in zip(rows, got):
                user = r["instruction"] + ("\n" + r["input"] if r["input"] else "")
                self.assertEqual((ids, labels), oracle(self.ref, [{"role": "user", "content": user}, {"role": "assistant", "content": r["output"]}]), rel)
            # Without it: the Alpaca prompt, the loss on the output and EOS.
            got = self.rows(self.prepare({"train": rel})[0])
            for r, (ids, labels) in zip(rows, got):
                text = self.tok.decode(ids)
                self.assertIn("### Instruction:\n" + r["instruction"], text)
                self.assertEqual(self.tok.decode([t for t in labels if t != -100]), r["output"] + self.tok.eos_token, rel)

    def test_prompt_completion_and_plain_text(self):
        self.jsonl("pc/train.jsonl", [{"prompt": "Q: capital of %s?\nA:" % c, "completion": " " + city} for c, city in
                                      [("France", "Paris"), ("Japan", "Tokyo"), ("Peru", "Lima"), ("Chile", "Santiago")]])
        for (_ids, labels), city in zip(self.rows(self.prepare({"train": "pc/train.jsonl"})[0]), ["Paris", "Tokyo", "Lima", "Santiago"]):
            self.assertEqual(self.tok.decode([t for t in labels if t != -100]).strip(), city + self.tok.eos_token)
        with open(self.path("text/train.csv"), "w", encoding="utf-8") as f:
            f.write("id,body\n" + "".join('%d,"The capital of %s is %s."\n' % (i, c, city) for i, (c, city) in
                                          enumerate([("France", "Paris"), ("Japan", "Tokyo"), ("Peru", "Lima"), ("Chile", "Santiago")])))
        for ids, labels in self.rows(self.prepare({"train": "text/train.csv", "text_field": "body"})[0]):
            self.assertEqual(labels, ids)
            self.assertEqual(ids[-1], self.tok.eos_token_id)

    def test_hub_dataset_repo_with_a_config_and_split(self):
        """A Hub dataset repo (its README's configs), copied to the host as the bootstrap stages hf:// data."""
        repo = self.path("hub/org-chat")
        os.makedirs(repo, exist_ok=True)
        with open(os.path.join(repo, "README.md"), "w", encoding="utf-8") as f:
            f.write("---\nconfigs:\n- config_name: sharegpt\n  data_files:\n  - split: train\n    path: sharegpt/train.jsonl\n"
                    "  - split: test\n    path: sharegpt/test.jsonl\n- config_name: alpaca\n  data_files:\n  - split: train\n"
                    "    path: alpaca/train.jsonl\n---\n")
        rows = openai_rows()
        for rel, data in (("sharegpt/train.jsonl", sharegpt(rows)), ("sharegpt/test.jsonl", sharegpt(rows[:2])),
                          ("alpaca/train.jsonl", alpaca_rows())):
            self.jsonl(os.path.join("hub/org-chat", rel), data)
        run_dir = tempfile.mkdtemp(prefix="run-", dir=self.tmp)
        with open(os.path.join(run_dir, "staged.json"), "w", encoding="utf-8") as f:
            json.dump({"hf://datasets/org/chat": repo}, f)
        train, ev = self.prepare({"train": "hf://datasets/org/chat", "config": "sharegpt", "split": "train", "eval": "test",
                                  "chat_template": True}, run_dir)
        self.assertEqual(self.rows(train), [oracle(self.ref, r["messages"]) for r in rows])
        self.assertEqual(self.rows(ev), [oracle(self.ref, r["messages"]) for r in rows[:2]])
        train, _ = self.prepare({"train": "hf://datasets/org/chat", "config": "alpaca"}, run_dir)
        self.assertEqual(len(train), len(alpaca_rows()))

    def test_weighted_sources_and_a_seeded_eval_ratio(self):
        rows = openai_rows()  # 12 rows
        self.jsonl("mix/a.jsonl", rows)
        self.jsonl("mix/b.jsonl", sharegpt(rows[:8]))
        train, ev = self.prepare({"train": [{"path": "mix/a.jsonl", "weight": 2}, {"path": "mix/b.jsonl", "weight": 0.5}], "chat_template": True})
        self.assertEqual(len(train), 2 * 12 + 4)
        self.assertIsNone(ev)
        train, ev = self.prepare({"train": "mix/a.jsonl", "eval_ratio": 0.25, "chat_template": True})
        again, ev2 = self.prepare({"train": "mix/a.jsonl", "eval_ratio": 0.25, "chat_template": True})
        self.assertEqual((len(train), len(ev)), (9, 3))
        self.assertEqual(self.rows(ev), self.rows(ev2), "the eval split is not seeded")
        everything = sorted(self.rows(train) + self.rows(ev))
        self.assertEqual(everything, sorted(oracle(self.ref, r["messages"]) for r in rows))

    def test_trl_sft_trainer_trains_on_these_labels(self):
        """On the TRL path the prepared rows go to SFTTrainer as input_ids + labels, which it keeps as they are."""
        import dataclasses
        from transformers import AutoModelForCausalLM, LlamaConfig
        from trl import SFTConfig, SFTTrainer
        self.jsonl("sft/sharegpt.jsonl", sharegpt(openai_rows()))
        train, _ = self.prepare({"train": "sft/sharegpt.jsonl", "chat_template": True})
        fields = {f.name for f in dataclasses.fields(SFTConfig)}
        kw = dict(output_dir=os.path.join(self.tmp, "sft-out"), report_to=[], max_length=512, max_seq_length=512, use_cpu=True)
        model = AutoModelForCausalLM.from_config(LlamaConfig(vocab_size=len(self.tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                                             num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512))
        trainer = SFTTrainer(model=model, args=SFTConfig(**{k: v for k, v in kw.items() if k in fields}), train_dataset=train,
                             processing_class=self.tok)
        batch = trainer.data_collator([trainer.train_dataset[i] for i in range(3)])
        for i in range(3):
            want = train[i]["labels"]
            self.assertEqual(batch["labels"][i][: len(want)].tolist(), want)


if __name__ == "__main__":
    unittest.main()
