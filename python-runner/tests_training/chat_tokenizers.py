"""Local tokenizers carrying the real chat templates of Llama 3, Qwen 2.5 (ChatML), Phi-3, Gemma / Gemma 2 and
Gemma 3, and the same templates with TRL's {% generation %} markers.

chat_templates/<name>.jinja are the templates as the models ship them and <name>_training.jinja TRL's patched
versions, copied byte for byte from the trl 1.16.0 package (trl/chat_templates/, whose README says each original
is the one shipped by the model's repo and is compared against it weekly by TRL's CI). They are kept here because
trl 0.x, in the older lock, does not ship them. The vocabulary is a small BPE trained on the samples; each family
gets its own special tokens, BOS and EOS as its tokenizer_config.json names them.
"""

import os
from typing import Any, Dict, List, Optional

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "chat_templates")

# name -> (BOS, EOS, the family's special tokens)
FAMILIES: Dict[str, Any] = {
    "llama3": ("<|begin_of_text|>", "<|eot_id|>", ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]),
    "qwen2_5": (None, "<|im_end|>", ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]),
    "phi3": ("<s>", "<|endoftext|>", ["<s>", "</s>", "<|endoftext|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]),
    "gemma": ("<bos>", "<eos>", ["<bos>", "<eos>", "<pad>", "<start_of_turn>", "<end_of_turn>"]),
    "gemma3": ("<bos>", "<eos>", ["<bos>", "<eos>", "<pad>", "<start_of_turn>", "<end_of_turn>"]),
}
# Families whose template takes a system message (Gemma 1 and 2 raise "System role not supported").
WITH_SYSTEM = ("llama3", "qwen2_5", "phi3", "gemma3")


def template(name: str) -> str:
    with open(os.path.join(HERE, name + ".jinja"), encoding="utf-8") as f:
        return f.read()


def samples(system: bool) -> List[List[Dict[str, str]]]:
    """Multi-turn conversations (three exchanges), with a system prompt where asked."""
    sys_msg = [{"role": "system", "content": "You are a terse geography tutor. Answer in one sentence."}] if system else []
    convs = [
        [("What is the capital of France?", "The capital of France is Paris."),
         ("And of Japan?", "Tokyo is the capital of Japan."),
         ("Which of the two is larger?", " Tokyo, by population, is far larger than Paris. ")],
        [("Name a city in Peru.", "Lima is the capital of Peru."),
         ("Is it on the coast?", "Yes, Lima lies on the Pacific coast."),
         ("Thanks!", "You are welcome.")],
    ]
    out = []
    for conv in convs:
        msgs = list(sys_msg)
        for q, a in conv:
            msgs += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
        out.append(msgs)
    return out


_VOCAB: Dict[str, Any] = {}


def _bpe() -> Any:
    """One BPE for all families, trained on the samples; the families' special tokens are added per tokenizer."""
    if "bpe" not in _VOCAB:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        corpus = [m["content"] for c in samples(True) for m in c] * 4 + ["user assistant system model tool The quick brown fox"]
        tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
        _VOCAB["bpe"] = tok.to_str()
    from tokenizers import Tokenizer
    return Tokenizer.from_str(_VOCAB["bpe"])


def tokenizer(family: str, training: bool = False, out_dir: Optional[str] = None) -> Any:
    """A PreTrainedTokenizerFast with the family's template (TRL's marker version when `training`)."""
    from transformers import PreTrainedTokenizerFast
    bos, eos, specials = FAMILIES[family]
    tok = PreTrainedTokenizerFast(tokenizer_object=_bpe(), bos_token=bos, eos_token=eos,
                                  additional_special_tokens=[s for s in specials if s not in (bos, eos)])
    tok.add_special_tokens({"additional_special_tokens": [s for s in specials if s not in (bos, eos)]})
    tok.chat_template = template(family + ("_training" if training else ""))
    if out_dir:
        tok.save_pretrained(out_dir)
    return tok
