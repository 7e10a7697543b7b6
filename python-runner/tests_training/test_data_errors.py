"""Data that would teach nothing stops the run before the model loads, naming the file, row and column (issue 31.2).

The users' failure: ShareGPT rows whose roles the template cannot place rendered to the end-of-turn token alone,
and the run "completed" with loss 0.0. Each case below is data as people have it; the run must end with an
error event that names where the problem is, a non-zero exit and no completed run.
"""

import json
import os
import unittest
from typing import Any, Dict, List

from tests_training import chat_tokenizers as ct
from tests_training import tiny
from tests_training.test_training import Case, base_spec, shared_dir

_MODEL: Dict[str, str] = {}


def llama3_model() -> str:
    """A tiny Llama with the real Llama 3 chat template, shared by the module's cases."""
    if "dir" not in _MODEL:
        out = os.path.join(shared_dir(), "model-llama3-template")
        os.makedirs(out, exist_ok=True)
        _MODEL["dir"] = tiny.build_model(out, "llama", ct.tokenizer("llama3"))
    return _MODEL["dir"]


def write_jsonl(path: str, rows: List[Dict[str, Any]]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)


def good_sharegpt(n: int = 8) -> List[Dict[str, Any]]:
    return [{"conversations": [{"from": "human", "value": m[0]["content"]}, {"from": "gpt", "value": m[1]["content"]}]}
            for m in tiny.conversations(n)]


class TeachesNothingStopsTheRun(Case):
    def run_bad(self, rows: List[Dict[str, Any]], **data: Any) -> Dict[str, Any]:
        write_jsonl(os.path.join(self.workdir, "data/train.jsonl"), rows)
        spec = base_spec(llama3_model(), data=dict({"train": "data/train.jsonl", "chat_template": True}, **data))
        rc, events = self.run_spec(spec, timeout=300)
        msg = "exit %s, events %s\n%s" % (rc, events, self.output()[-3000:])
        self.assertNotEqual(rc, 0, msg)
        self.assertEqual([e for e in events if e["type"] in ("started", "metrics")], [], msg)
        self.assertNotIn("completed", [e.get("status") for e in events if e["type"] == "finished"], msg)
        named = [e for e in events if e["type"] == "error" and e.get("file") == "data/train.jsonl"]
        self.assertTrue(named, msg)
        return named[0]

    def test_a_role_no_template_renders(self):
        rows = good_sharegpt()
        rows[4]["conversations"][1]["from"] = "bot"
        err = self.run_bad(rows)
        self.assertEqual((err["row"], err["column"]), (5, "conversations"))
        self.assertIn("'bot'", err["message"])
        self.assertIn("data.roles", err["message"])

    def test_rows_that_render_to_special_tokens_only(self):
        rows = good_sharegpt()
        rows[2]["conversations"][1]["value"] = ""
        err = self.run_bad(rows)
        self.assertEqual((err["row"], err["column"]), (3, "conversations"))
        self.assertIn("nothing to learn", err["message"])


class TeachesNothingChecks(unittest.TestCase):
    """The same checks in process, for the cases that need no training run to show."""

    def prepare(self, rows: List[Dict[str, Any]], tok: Any = None, **data: Any) -> Any:
        import tempfile
        from remote_finetune.spec import normalise
        from remote_finetune.data_loading import load_raw_datasets
        from remote_finetune.data_prep import prepare_datasets
        from remote_finetune.trainer import Run
        ws = tempfile.mkdtemp(prefix="rft-bad-")
        write_jsonl(os.path.join(ws, "data/train.jsonl"), rows)
        spec = normalise({"version": 1, "method": "lora-bf16", "model": {"id": "x"},
                          "data": dict({"train": "data/train.jsonl", "chat_template": True}, **data)})
        run = Run(os.path.join(ws, "run"), ws)
        os.makedirs(run.run_dir)
        train, ev = load_raw_datasets(spec, ws)
        return prepare_datasets(spec, tok or ct.tokenizer("llama3"), train, ev, run)

    def assert_refused(self, row: Any, column: Any, words: str, rows: List[Dict[str, Any]], **kw: Any) -> None:
        from remote_finetune.data_formats import DataError
        with self.assertRaises(DataError) as cm:
            self.prepare(rows, **kw)
        e = cm.exception
        self.assertEqual((e.source, e.row, e.column), ("data/train.jsonl", row, column), str(e))
        self.assertIn(words, str(e))

    def test_a_missing_column(self):
        self.assert_refused(1, None, "no column this trainer reads", [{"question": "q", "answer": "a"}] * 4)
        rows: List[Dict[str, Any]] = [{"text": "The capital of %s is %s." % c} for c in tiny.CAPITALS[:3]] + [{"body": "x"}]
        self.assert_refused(4, "text", "missing or empty here", rows)

    def test_a_message_without_content(self):
        rows = good_sharegpt()
        del rows[6]["conversations"][0]["value"]
        self.assert_refused(7, "conversations", "neither role/content nor from/value", rows)

    def test_a_system_prompt_gemma_cannot_render(self):
        rows = [{"messages": m} for m in ct.samples(False)] + [{"messages": ct.samples(True)[0]}]
        self.assert_refused(3, "messages", "System role not supported", rows, tok=ct.tokenizer("gemma"))

    def test_rows_that_nearly_all_render_the_same(self):
        rows = good_sharegpt(2) + [{"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello!"}]}] * 30
        self.assert_refused(3, None, "30 of its 32 rows", rows)

    def test_empty_text_rows(self):
        self.assert_refused(2, "text", "special tokens only", [{"text": "The capital of Peru is Lima."}, {"text": ""}] * 3)


if __name__ == "__main__":
    unittest.main()
