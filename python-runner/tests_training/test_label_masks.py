"""The loss mask, token for token against TRL's own (issue 31.3).

Our trainer masks chat rows by rendering prefix by prefix with the model's own template (no {% generation %}
markers needed). The oracle is TRL's SFTTrainer itself: given the same conversations, `assistant_only_loss=True`
and TRL's marker version of the same real template, the labels it builds (trl 1.x) or the assistant_masks it
keeps (trl 0.x); for prompt/completion rows, the completion mask of its own tokenization.
"""

import os
import shutil
import tempfile
import unittest
from typing import Any, Dict, List, Tuple

from tests_training import chat_tokenizers as ct
from tests_training import tiny

FAMILIES = ("llama3", "qwen2_5", "phi3", "gemma", "gemma3")


def trl_masks(tok: Any, rows: List[Dict[str, Any]], **config: Any) -> List[Tuple[List[int], List[int]]]:
    """(input_ids, 1 where TRL takes the loss) for each row, from SFTTrainer's own dataset preparation."""
    import dataclasses
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer
    from transformers import AutoModelForCausalLM, LlamaConfig
    tmp = tempfile.mkdtemp(prefix="rft-trl-")
    try:
        model = AutoModelForCausalLM.from_config(LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                                             num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512))
        fields = {f.name for f in dataclasses.fields(SFTConfig)}
        kw = dict(output_dir=tmp, report_to=[], max_length=None, max_seq_length=None, use_cpu=True, **config)
        args = SFTConfig(**{k: v for k, v in kw.items() if k in fields})
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tok)
        out = []
        for ex in trainer.train_dataset:
            ids = list(ex["input_ids"])
            if "labels" in ex:  # trl >= 1: labels built from the masks during preparation
                out.append((ids, [int(t != -100) for t in ex["labels"]]))
            else:  # trl 0.x: the collator applies these masks
                mask = ex.get("assistant_masks") or ex.get("completion_mask")
                out.append((ids, list(mask)))
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def ours(tok: Any, rows: List[Dict[str, Any]]) -> List[Tuple[List[int], List[int]]]:
    from remote_finetune import data_formats
    out = []
    for row in rows:
        ids, labels = data_formats.encode(tok, row, train_on_prompt=False)
        out.append((ids, [int(t != -100) for t in labels]))
    return out


class ChatMaskEqualsTrl(unittest.TestCase):
    def test_assistant_turns_of_four_real_templates(self):
        counted: Dict[str, int] = {}
        for family in FAMILIES:
            rows = [{"messages": m} for m in ct.samples(family in ct.WITH_SYSTEM)]
            got = ours(ct.tokenizer(family), rows)
            want = trl_masks(ct.tokenizer(family, training=True), rows, assistant_only_loss=True)
            for (ids, mask), (wids, wmask) in zip(got, want):
                self.assertEqual(ids, wids, family)
                differ = [i for i, (a, b) in enumerate(zip(mask, wmask)) if a != b]
                if family == "qwen2_5":
                    # TRL's qwen2_5_training.jinja opens {% generation %} before the "\n" that ends the header
                    # "<|im_start|>assistant\n", which is also the end of the generation prompt the model is given
                    # at inference; that token alone, once per assistant turn, differs (LLaMA-Factory and Axolotl
                    # leave it out too).
                    tok = ct.tokenizer(family)
                    header = tok("<|im_start|>assistant", add_special_tokens=False)["input_ids"]
                    after_header = [i for i in range(len(ids)) if ids[max(0, i - len(header)):i] == header]
                    self.assertEqual(differ, after_header, "%s: %s" % (family, [tok.decode([ids[i]]) for i in differ]))
                    self.assertEqual(len(differ), sum(1 for m in rows[0]["messages"] if m["role"] == "assistant"))
                    self.assertTrue(all(wmask[i] == 1 and mask[i] == 0 and tok.decode([ids[i]]) == "\n" for i in differ))
                else:
                    self.assertEqual(differ, [], "%s: tokens %s differ" % (family, differ))
                self.assertGreater(sum(mask), 0)
                counted[family] = counted.get(family, 0) + len(ids)
        print("\nchat masks compared on %s tokens" % counted)

    def test_a_template_with_generation_markers_is_read_through_them(self):
        from remote_finetune import data_formats
        tok = ct.tokenizer("qwen2_5", training=True)
        conv = ct.samples(True)[0]
        ids, mask = data_formats.assistant_mask(tok, conv)
        ref = tok.apply_chat_template(conv, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
        self.assertEqual((ids, mask), (list(ref["input_ids"]), list(ref["assistant_masks"])))

    def test_our_copies_are_trl_s_templates(self):
        """The committed templates are the installed TRL's, where that TRL ships them (trl >= 1)."""
        import trl
        shipped = os.path.join(os.path.dirname(trl.__file__), "chat_templates")
        if not os.path.isdir(shipped):
            self.skipTest("trl %s ships no chat_templates folder" % trl.__version__)
        for family in FAMILIES:
            for name in (family, family + "_training"):
                with open(os.path.join(shipped, name + ".jinja"), encoding="utf-8") as f:
                    self.assertEqual(ct.template(name), f.read(), name)


class CompletionMaskEqualsTrl(unittest.TestCase):
    def test_prompt_completion_text_and_conversational(self):
        tok = ct.tokenizer("llama3")
        convs = ct.samples(True)
        conversational = [{"prompt": c[:-1], "completion": c[-1:]} for c in convs]
        text = [{"prompt": "Question: What is the capital of %s?\nAnswer:" % c, "completion": " %s." % city}
                for c, city in tiny.CAPITALS[:4]]
        for rows in (conversational, text):
            got = ours(tok, rows)
            want = trl_masks(ct.tokenizer("llama3"), rows, completion_only_loss=True)
            self.assertEqual(got, want)
            self.assertTrue(all(0 < sum(m) < len(m) for _, m in got))


class TrainOnPrompt(unittest.TestCase):
    def test_opting_out_trains_every_token(self):
        from remote_finetune import data_formats
        tok = ct.tokenizer("llama3")
        ids, labels = data_formats.encode(tok, {"messages": ct.samples(True)[0]}, train_on_prompt=True)
        self.assertEqual(labels, ids)


if __name__ == "__main__":
    unittest.main()
