"""A finished run to merge and publish, made with the real torch and peft on the tiny model (tiny.py): a
workspace holding outputs/adapter (a LoRA adapter whose B matrices are random, init_lora_weights=False, so it
changes the logits) and a run dir with spec.json and the events a built-in run leaves.

`python -m tests_training.merge_fixture <root> [model-id-for-the-spec]` prints {"ws", "run_dir", "model_dir"}
as JSON (the TypeScript integration tests use it); the Python tests import make_run."""

import json
import os
import sys
from typing import Optional, Tuple

from tests_training import tiny

EVENTS = [
    {"v": 1, "type": "started", "ts": 1767225600.0, "run_id": "fixture", "model": "tiny", "method": "lora-bf16",
     "total_params": 123456, "trainable_params": 4096, "trainable_pct": 3.32},
    {"v": 1, "type": "metrics", "ts": 1767225610.0, "step": 6, "epoch": 0.5, "loss": 3.25},
    {"v": 1, "type": "metrics", "ts": 1767225620.0, "step": 12, "epoch": 1.0, "loss": 2.125},
    {"v": 1, "type": "eval", "ts": 1767225621.0, "step": 12, "eval_loss": 2.5},
    {"v": 1, "type": "finished", "ts": 1767225622.0, "status": "completed", "exit_code": 0, "runtime_s": 754.0,
     "adapter_path": "outputs/adapter"},
]


def make_adapter(model_dir: str, tok, adapter_dir: str) -> None:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(3)
    base = AutoModelForCausalLM.from_pretrained(model_dir)
    peft_model = get_peft_model(base, LoraConfig(r=8, lora_alpha=16, target_modules="all-linear", init_lora_weights=False, task_type="CAUSAL_LM"))
    peft_model.save_pretrained(adapter_dir)
    tok.save_pretrained(adapter_dir)


def make_run(root: str, spec_model: Optional[str] = None) -> Tuple[str, str, str]:
    tok = tiny.build_tokenizer(os.path.join(root, "tok"))
    model_dir = tiny.build_model(os.path.join(root, "base"), "llama", tok)
    ws, run_dir = os.path.join(root, "ws"), os.path.join(root, "run")
    os.makedirs(run_dir, exist_ok=True)
    make_adapter(model_dir, tok, os.path.join(ws, "outputs", "adapter"))
    spec = {"version": 1, "name": "tiny-merge", "method": "lora-bf16", "model": {"id": spec_model or model_dir},
            "data": {"train": "data/train.jsonl", "max_seq_length": 64}, "lora": {"r": 8, "alpha": 16, "dropout": 0.0},
            "trainer": {"max_steps": 12, "learning_rate": 5e-3, "precision": "bf16"}, "outputs": {"dir": "outputs"}}
    with open(os.path.join(run_dir, "spec.json"), "w", encoding="utf-8") as f:
        json.dump(spec, f)
    with open(os.path.join(run_dir, "events.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(json.dumps(e) + "\n" for e in EVENTS)
    return ws, run_dir, model_dir


if __name__ == "__main__":
    ws, run_dir, model_dir = make_run(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
    print(json.dumps({"ws": ws, "run_dir": run_dir, "model_dir": model_dir}))
