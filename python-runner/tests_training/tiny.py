"""A tiny causal LM and its tokenizer, made here from configs with the real libraries (no hub access):
Llama- and Qwen2-shaped models of a few small layers, a byte-level BPE trained with `tokenizers` on the
test's own text, saved as a PreTrainedTokenizerFast with BOS added (as Llama's tokenizers do), no pad token
(as most base models ship) and a chat template that starts with BOS and ends turns with <|eot_id|>."""

import json
import os
import random
from typing import Any, Dict, List, Optional

CAPITALS = [("France", "Paris"), ("Japan", "Tokyo"), ("Italy", "Rome"), ("Spain", "Madrid"), ("Egypt", "Cairo"),
            ("Peru", "Lima"), ("Kenya", "Nairobi"), ("Chile", "Santiago"), ("Norway", "Oslo"), ("Cuba", "Havana")]

CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
    "{{ m['content'] }}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
            "<|finetune_right_pad_id|>"]


def texts(n: int = 64, seed: int = 0) -> List[str]:
    rnd = random.Random(seed)
    return ["The capital of %s is %s." % CAPITALS[rnd.randrange(len(CAPITALS))] for _ in range(n)]


def conversations(n: int = 64, seed: int = 0) -> List[List[Dict[str, str]]]:
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        country, city = CAPITALS[rnd.randrange(len(CAPITALS))]
        out.append([{"role": "user", "content": "What is the capital of %s?" % country},
                    {"role": "assistant", "content": "The capital of %s is %s." % (country, city)}])
    return out


def build_tokenizer(out_dir: str, with_pad_candidate: bool = True) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = SPECIALS if with_pad_candidate else SPECIALS[:-1]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = texts(200) + [m["content"] for c in conversations(200) for m in c] + ["user assistant system The quick brown fox"]
    tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=300, special_tokens=specials,
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
                                                       special_tokens=[("<|begin_of_text|>", bos)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>",
                                   additional_special_tokens=specials[2:])
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out_dir)
    return fast


def build_model(out_dir: str, arch: str, tokenizer: Any) -> str:
    """Saves a randomly initialised model of the given architecture's shape with the tokenizer next to it."""
    common = dict(model_type="llama" if arch == "llama" else "qwen2", vocab_size=len(tokenizer), hidden_size=64,
                  intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  max_position_embeddings=256, tie_word_embeddings=False)
    return build_model_from_config(out_dir, common, tokenizer)


def build_model_from_config(out_dir: str, config: Dict[str, Any], tokenizer: Any, device: str = "cpu",
                            dtype: Optional[str] = None) -> str:
    """Saves a randomly initialised model of a config.json's shape (a released model's, for bench/gpu) with the
    tokenizer next to it. Keys starting with "_" are notes, not config. BOS/EOS are the tokenizer's: a released
    config's ids (128000, ...) name tokens this tokenizer does not have, while its vocab_size is kept, so the
    embedding, the output head and the logits are as large as the real model's. `device` "cuda" initialises on
    the GPU (seconds for 8B parameters instead of minutes on the CPU); `dtype` None keeps float32."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    fields = {k: v for k, v in config.items() if not k.startswith("_") and k not in ("architectures", "torch_dtype", "dtype")}
    if fields.get("vocab_size", 0) < len(tokenizer):
        raise ValueError("vocab_size %s is smaller than the tokenizer (%d tokens)" % (fields.get("vocab_size"), len(tokenizer)))
    fields.update(bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    cfg = AutoConfig.for_model(fields.pop("model_type"), **fields)
    torch.manual_seed(0)
    kwargs: Dict[str, Any] = {}
    if dtype is not None:
        import transformers
        kwargs["dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"] = getattr(torch, dtype)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, **kwargs)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    del model
    return out_dir


def write_data(path: str, form: str, n: int = 64) -> str:
    """form: text-jsonl, messages-jsonl, csv, parquet."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if form == "text-jsonl":
        with open(path, "w", encoding="utf-8") as f:
            for t in texts(n):
                f.write(json.dumps({"text": t}) + "\n")
    elif form == "messages-jsonl":
        with open(path, "w", encoding="utf-8") as f:
            for c in conversations(n):
                f.write(json.dumps({"messages": c}) + "\n")
    elif form == "csv":
        import csv
        with open(path, "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f)
            w.writerow(["id", "text"])
            for i, t in enumerate(texts(n)):
                w.writerow([i, t])
    elif form == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq
        pq.write_table(pa.table({"text": texts(n), "id": list(range(n))}), path)
    else:
        raise ValueError(form)
    return path


def main(argv: List[str]) -> int:
    """`python -m tests_training.tiny OUT_DIR [llama|qwen2]`: the demo's built-in example and the e2e suite build
    their local model with the same code as the training tests (no hub at run time, nothing binary in git)."""
    if not argv or argv[0].startswith("-"):
        print("usage: python -m tests_training.tiny OUT_DIR [llama|qwen2]")
        return 2
    out, arch = argv[0], (argv[1] if len(argv) > 1 else "llama")
    if arch not in ("llama", "qwen2"):
        print("arch must be llama or qwen2, not %r" % arch)
        return 2
    os.makedirs(out, exist_ok=True)
    build_model(out, arch, build_tokenizer(out))
    print("tiny %s model in %s" % (arch, out))
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
