"""ShareGPT data trains, on the assistant's tokens only, on both trainers (issues 31.1 and 31.3).

The users' file: `conversations` of from/value turns (system, human, gpt) with `chat_template: true`, which used to
render to the end-of-turn token alone and "complete" with loss 0.0. Here a tiny Llama carrying the real Llama 3
template trains on it under `python -m remote_finetune run`; the loss is real and falls, and the number of tokens
in the loss equals what TRL's marker version of the template marks as the assistant's.
"""

import os
import re
from typing import Any, Dict, List

from tests_training import chat_tokenizers as ct
from tests_training import tiny
from tests_training.test_data_errors import llama3_model, write_jsonl
from tests_training.test_training import Case, base_spec

SYSTEM = "You are a terse geography tutor. Answer in one sentence."


def sharegpt_rows(n: int = 64) -> List[Dict[str, Any]]:
    return [{"conversations": [{"from": "system", "value": SYSTEM}, {"from": "human", "value": c[0]["content"]},
                               {"from": "gpt", "value": c[1]["content"]}]} for c in tiny.conversations(n)]


def assistant_tokens(rows: List[Dict[str, Any]], max_len: int) -> Dict[str, int]:
    """Tokens and assistant tokens of the OpenAI-form twins, by TRL's marker template (the oracle)."""
    ref = ct.tokenizer("llama3", training=True)
    roles = {"system": "system", "human": "user", "gpt": "assistant"}
    total = marked = 0
    for r in rows:
        msgs = [{"role": roles[m["from"]], "content": m["value"]} for m in r["conversations"]]
        out = ref.apply_chat_template(msgs, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
        total += min(len(out["input_ids"]), max_len)
        marked += sum(out["assistant_masks"][:max_len])
    return {"tokens": total, "assistant": marked}


class ShareGptTrains(Case):
    def check(self, **trainer: Any) -> None:
        rows = sharegpt_rows()
        write_jsonl(os.path.join(self.workdir, "data/chat.jsonl"), rows)
        spec = base_spec(llama3_model(), data={"train": "data/chat.jsonl", "chat_template": True, "max_seq_length": 128},
                         trainer=dict({"max_steps": 8, "save_steps": 8}, **trainer))
        rc, events = self.run_spec(spec, timeout=600)
        self.assert_trained(rc, events)
        losses = [e["loss"] for e in events if e["type"] == "metrics" and "loss" in e]
        self.assertGreater(min(losses), 0.05, losses)
        m = re.search(r"\[remote-finetune\] data: (\d+) rows, (\d+) tokens, (\d+) of them in the loss", self.output())
        self.assertIsNotNone(m, self.output()[-3000:])
        n, tokens, in_loss = (int(g) for g in m.groups())
        want = assistant_tokens(rows, 128)
        self.assertEqual((n, tokens, in_loss), (len(rows), want["tokens"], want["assistant"]))
        print("\n%s: %d tokens, %d in the loss; prompt share of trained tokens %.0f%% when every token trained, 0%% now" % (
            "sft" if trainer else "trainer", tokens, in_loss, 100.0 * (tokens - in_loss) / tokens))

    def test_plain_trainer(self):
        self.check()

    def test_trl_sft_trainer(self):
        import trl  # noqa: F401
        self.check(use_sft_trainer=True)
