"""`python -m remote_finetune merge` with the real torch, transformers and peft on a tiny model (tiny.py): the
merged model's logits equal the base model's with the adapter applied (peft's unmerged forward), it reloads with
plain AutoModelForCausalLM (no peft), and the dtype asked for is the dtype saved. The adapter's LoRA B matrices
are random (init_lora_weights=False), so an adapter that changed nothing, or a merge that dropped it, fails.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest
from typing import Any, Dict, List, Tuple

from tests_training.merge_fixture import make_run

RUNNER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = ["The capital of France is Paris.", "What is the capital of Japan?"]


def run_merge(run_dir: str, ws: str, *extra: str) -> Tuple[int, List[Dict[str, Any]], str]:
    env = dict(os.environ, PYTHONPATH=RUNNER_DIR, HF_HUB_OFFLINE="1")
    p = subprocess.run([sys.executable, "-m", "remote_finetune", "merge", "--run-dir", run_dir, "--workdir", ws, *extra],
                       cwd=run_dir, env=env, input="", capture_output=True, text=True, timeout=300)
    lines = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]  # every stdout line must be JSON
    return p.returncode, lines, p.stderr


def logits(model: Any, tokenizer: Any) -> Any:
    import torch
    batch = tokenizer(PROBE, return_tensors="pt", padding=True)
    model.eval()
    with torch.no_grad():
        return model(**batch).logits.float()


class Merge(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.root = tempfile.mkdtemp(prefix="rft-merge-")
        cls.ws, cls.run_dir, cls.base = make_run(cls.root)

    def reference(self) -> Tuple[Any, Any, Any]:
        """Base alone and base+adapter (unmerged) logits, with the adapter's tokenizer."""
        from peft import PeftModel
        from transformers import AutoModelForCausalLM, AutoTokenizer
        tok = AutoTokenizer.from_pretrained(os.path.join(self.ws, "outputs", "adapter"))
        tok.pad_token = tok.pad_token or "<|finetune_right_pad_id|>"
        base = AutoModelForCausalLM.from_pretrained(self.base)
        plain = logits(base, tok)
        with_adapter = logits(PeftModel.from_pretrained(base, os.path.join(self.ws, "outputs", "adapter")), tok)
        return tok, plain, with_adapter

    def test_fp32_merge_equals_base_plus_adapter_and_reloads_without_peft(self):
        import torch
        from transformers import AutoModelForCausalLM
        code, lines, err = run_merge(self.run_dir, self.ws, "--dtype", "fp32", "--device", "cpu")
        self.assertEqual(code, 0, err[-3000:])
        stages = [ln["stage"] for ln in lines]
        self.assertEqual(stages, ["loading-base", "loading-adapter", "merging", "saving", "done"])
        done = lines[-1]
        self.assertEqual(done["path"], os.path.join("outputs", "merged"))
        self.assertEqual(done["dtype"], "fp32")
        merged_dir = os.path.join(self.ws, "outputs", "merged")
        names = os.listdir(merged_dir)
        self.assertIn("model.safetensors", names)
        self.assertIn("tokenizer.json", names)
        self.assertNotIn("adapter_config.json", names)
        self.assertGreater(done["bytes"], 0)

        tok, plain, with_adapter = self.reference()
        merged = AutoModelForCausalLM.from_pretrained(merged_dir)  # plain transformers: no peft involved
        self.assertFalse(any("lora" in n for n, _ in merged.named_parameters()), "LoRA modules left in the merged model")
        out = logits(merged, tok)
        diff = (out - with_adapter).abs().max().item()
        print("merge fp32: max |merged - (base+adapter)| = %.3g; adapter's effect max |base+adapter - base| = %.3g"
              % (diff, (with_adapter - plain).abs().max().item()))
        self.assertGreater((with_adapter - plain).abs().max().item(), 1e-2, "the adapter must change the logits for this test to mean anything")
        self.assertTrue(torch.allclose(out, with_adapter, atol=1e-4, rtol=0), "max diff %g" % diff)

    def test_bf16_merge_saves_bf16_weights(self):
        import torch
        from safetensors import safe_open
        out_dir = os.path.join(self.root, "merged-bf16")
        code, lines, err = run_merge(self.run_dir, self.ws, "--dtype", "bf16", "--out", out_dir)
        self.assertEqual(code, 0, err[-3000:])
        self.assertEqual(lines[-1]["device"], "cpu")  # auto: no CUDA here
        with safe_open(os.path.join(out_dir, "model.safetensors"), "pt") as f:
            dtypes = {f.get_tensor(k).dtype for k in f.keys()}
        self.assertEqual(dtypes, {torch.bfloat16})
        from transformers import AutoModelForCausalLM
        tok, _plain, with_adapter = self.reference()
        out = logits(AutoModelForCausalLM.from_pretrained(out_dir, dtype=torch.float32), tok)
        # bf16 keeps 8 bits of mantissa: close, not equal.
        self.assertLess((out - with_adapter).abs().max().item(), 0.1)

    def test_no_adapter_is_an_error_line_not_a_traceback_on_stdout(self):
        empty_ws = os.path.join(self.root, "empty-ws")
        os.makedirs(empty_ws, exist_ok=True)
        code, lines, _err = run_merge(self.run_dir, empty_ws, "--dtype", "fp32")
        self.assertEqual(code, 1)
        self.assertEqual(lines[-1]["stage"], "error")
        self.assertIn("no LoRA adapter", lines[-1]["message"])


if __name__ == "__main__":
    unittest.main()
