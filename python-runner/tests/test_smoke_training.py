"""Real training smoke test: a tiny randomly initialised Llama built from a LlamaConfig (no hub
download), a few BF16 LoRA steps through `python -m remote_finetune run`, events written,
adapter saved and reloadable, then a resumed run. Runs only where torch, transformers and peft
import and a CUDA GPU is present; elsewhere it reports itself skipped with the reason.
Set RFT_SMOKE_REPORT=<file> to get the measured figures (step time, peak memory) as JSON.
"""

import importlib.util
import json
import os
import random
import subprocess
import unittest

from remote_finetune.events import parse_event_line
from remote_finetune.gpu import parse_gpu_csv_line
from tests.helpers import PYTHON, TempDirTest, read, runner_env


def _why_skip():
    for mod in ("torch", "transformers", "peft", "datasets"):
        if importlib.util.find_spec(mod) is None:
            return "%s is not importable here (the smoke test needs torch, transformers, peft, datasets and a CUDA GPU)" % mod
    import torch
    if not torch.cuda.is_available():
        return "no CUDA GPU visible to torch %s" % torch.__version__
    if not torch.cuda.is_bf16_supported():
        return "this GPU has no bf16 (the smoke test trains BF16 LoRA)"
    return None


SKIP = _why_skip()
WORDS = "the quick brown fox jumps over a lazy dog while seven tiny models learn to count words on remote gpus".split()


@unittest.skipIf(SKIP is not None, "GPU smoke test skipped: %s" % SKIP)
class TinyLlamaBf16Lora(TempDirTest):
    def make_model(self, path):
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers
        from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

        tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        tok.train_from_iterator([" ".join(WORDS)], trainers.WordLevelTrainer(special_tokens=["[UNK]", "[PAD]", "<s>", "</s>"]))
        fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", bos_token="<s>", eos_token="</s>")
        fast.save_pretrained(path)
        cfg = LlamaConfig(vocab_size=len(fast), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                          num_key_value_heads=2, max_position_embeddings=128, pad_token_id=fast.pad_token_id,
                          bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id)
        LlamaForCausalLM(cfg).save_pretrained(path)

    def run_spec(self, run_dir, work, max_steps):
        os.makedirs(run_dir, exist_ok=True)
        spec = {"version": 1, "name": "smoke", "model": {"id": os.path.join(work, "tiny-llama")}, "method": "lora-bf16",
                "lora": {"r": 8, "alpha": 16, "dropout": 0.0, "target_modules": "all-linear"},
                "data": {"train": "data/train.jsonl", "text_field": "text", "max_seq_length": 64},
                "trainer": {"max_steps": max_steps, "per_device_batch_size": 4, "gradient_accumulation": 1, "learning_rate": 1e-3,
                            "precision": "bf16", "optimizer": "adamw_torch", "logging_steps": 1, "save_strategy": "steps",
                            "save_steps": 3, "save_total_limit": 3, "eval_strategy": "no", "gradient_checkpointing": True},
                "outputs": {"dir": "out"}}
        with open(os.path.join(run_dir, "spec.json"), "w") as f:
            json.dump(spec, f)
        r = subprocess.run([PYTHON, "-m", "remote_finetune", "run", "--run-dir", run_dir, "--workdir", work, "--no-watchdog",
                            "--gpu-interval-ms", "200"], env=runner_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
        log = read(os.path.join(run_dir, "output.log")) if os.path.exists(os.path.join(run_dir, "output.log")) else ""
        self.assertEqual(r.returncode, 0, log[-4000:])
        evs = []
        for line in read(os.path.join(run_dir, "events.jsonl")).splitlines():
            ev, err = parse_event_line(line)
            self.assertIsNone(err, line)
            evs.append(ev)
        return evs, log

    def test_bf16_lora_steps_events_adapter_resume(self):
        work = self.path("work")
        os.makedirs(os.path.join(work, "data"))
        self.make_model(os.path.join(work, "tiny-llama"))
        rnd = random.Random(0)
        with open(os.path.join(work, "data", "train.jsonl"), "w") as f:
            for _ in range(64):
                f.write(json.dumps({"text": " ".join(rnd.choice(WORDS) for _ in range(24))}) + "\n")

        evs, log = self.run_spec(self.path("home", "runs", "smoke-1"), work, 6)
        started = [e for e in evs if e["type"] == "started"]
        self.assertEqual(len(started), 1)
        self.assertGreater(started[0]["trainable_params"], 0)
        self.assertLess(started[0]["trainable_pct"], 100)
        metrics = [e for e in evs if e["type"] == "metrics" and "loss" in e]
        self.assertGreaterEqual(len(metrics), 6)
        self.assertTrue(all(m["peak_gpu_memory_mb"] > 0 for m in metrics))
        self.assertEqual([e["step"] for e in evs if e["type"] == "checkpoint"], [3, 6])
        fin = evs[-1]
        self.assertEqual((fin["type"], fin["status"], fin["exit_code"], fin["adapter_path"]), ("finished", "completed", 0, "out/smoke-1/adapter"))
        gpu_rows = [parse_gpu_csv_line(l) for l in read(self.path("home", "runs", "smoke-1", "gpu.csv")).splitlines()]
        self.assertTrue(gpu_rows and all(r is not None for r in gpu_rows))

        # the adapter reloads onto the base model and changes nothing about its shape
        import torch
        from peft import PeftModel
        from transformers import AutoModelForCausalLM
        base = AutoModelForCausalLM.from_pretrained(os.path.join(work, "tiny-llama"), torch_dtype=torch.bfloat16).cuda()
        model = PeftModel.from_pretrained(base, os.path.join(work, "out", "smoke-1", "adapter"))
        out = model(input_ids=torch.tensor([[2, 5, 6, 7]], device="cuda"))
        self.assertEqual(out.logits.shape[-1], base.config.vocab_size)

        # a second run with more steps resumes from checkpoint-6
        evs2, log2 = self.run_spec(self.path("home", "runs", "smoke-2"), work, 8)
        self.assertIn("resumed", [e.get("code") for e in evs2 if e["type"] == "warning"])
        self.assertEqual(min(e["step"] for e in evs2 if e["type"] == "metrics"), 7)

        summary = [e for e in evs if e["type"] == "metrics" and "train_runtime" in e.get("extra", {})]
        figures = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "steps": 6,
                   "step_time_s": round(summary[0]["extra"]["train_runtime"] / 6, 4) if summary else None,
                   "peak_gpu_memory_mb": max(m["peak_gpu_memory_mb"] for m in metrics),
                   "attn": "flash_attention_2" if "flash_attention_2" in log else "sdpa"}
        print("\nsmoke figures: " + json.dumps(figures))
        if os.environ.get("RFT_SMOKE_REPORT"):
            with open(os.environ["RFT_SMOKE_REPORT"], "w") as f:
                json.dump(figures, f, indent=2)


class SkipIsReported(unittest.TestCase):
    def test_the_reason_is_known(self):
        # Either the smoke test runs, or there is a printed reason for skipping it.
        if SKIP is not None:
            print("\nGPU smoke test skipped: " + SKIP)
        self.assertTrue(SKIP is None or len(SKIP) > 10)


if __name__ == "__main__":
    unittest.main()
