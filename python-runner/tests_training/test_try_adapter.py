"""Try the adapter (issue 20.2): a real LoRA adapter trained here by `python -m remote_finetune run` on the tiny
model, then
- the final `eval` event's perplexity equals exp(mean token loss) computed here independently (the model's own
  labels= loss per example, weighted by its predicted tokens) on the base + adapter reloaded with PeftModel;
- `python -m remote_finetune generate` streams, for temperature 0, exactly what model.generate's greedy search
  gives, over several prompts in one process (one model load), with and without the chat template;
- a missing adapter is one fatal error line and exit 3.
"""

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from typing import Any, Dict, List, Optional

from tests_training import tiny
from tests_training.test_training import RUNNER_DIR, base_spec, read_events, tiny_model

PROMPTS = ["The capital of France is", "The capital of Peru", "What is the capital of Japan?"]


def env_for(tmp: str) -> Dict[str, str]:
    env = dict(os.environ)
    env.update(PYTHONPATH=RUNNER_DIR, PYTHONSAFEPATH="1", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               HF_HOME=os.path.join(tmp, "hf"), WANDB_DISABLED="true", TOKENIZERS_PARALLELISM="false")
    env.pop("WANDB_API_KEY", None)
    # As a host may export it (and trl 0.x's SFTConfig leaves it in a process that built one): the fp32 spec must
    # still train and evaluate in fp32, or the in-memory model's figure drifts from the saved adapter's.
    env["ACCELERATE_MIXED_PRECISION"] = "bf16"
    return env


class Generate:
    """The generate subprocess as the extension drives it: JSON lines both ways."""

    def __init__(self, adapter: str, env: Dict[str, str]) -> None:
        self.p = subprocess.Popen([sys.executable, "-m", "remote_finetune", "generate", "--adapter", adapter, "--device", "cpu"],
                                  cwd=tempfile.gettempdir(), env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, bufsize=1)

    def line(self) -> Dict[str, Any]:
        assert self.p.stdout is not None
        raw = self.p.stdout.readline()
        if not raw:
            raise AssertionError("generate ended: rc %s, stderr:\n%s" % (self.p.wait(), self.p.stderr.read()[-3000:] if self.p.stderr else ""))
        return json.loads(raw)

    def ask(self, rid: str, prompt: str, **kw: Any) -> List[Dict[str, Any]]:
        assert self.p.stdin is not None
        self.p.stdin.write(json.dumps(dict({"type": "generate", "id": rid, "prompt": prompt}, **kw)) + "\n")
        self.p.stdin.flush()
        out = []
        while True:
            ev = self.line()
            out.append(ev)
            if ev["type"] in ("done", "error"):
                return out

    def close(self) -> int:
        assert self.p.stdin is not None
        self.p.stdin.close()
        rc = self.p.wait(timeout=60)
        for f in (self.p.stdout, self.p.stderr):
            if f:
                f.close()
        return rc


class TryAdapterTest(unittest.TestCase):
    tmp = ""
    workdir = ""
    run_dir = ""
    events: List[Dict[str, Any]] = []

    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.mkdtemp(prefix="rft-try-")
        cls.workdir = os.path.join(cls.tmp, "ws")
        cls.run_dir = os.path.join(cls.tmp, "home", ".remote-finetune", "runs", "r-try")
        os.makedirs(cls.run_dir)
        tiny.write_data(os.path.join(cls.workdir, "data", "train.jsonl"), "text-jsonl", 64)
        # Another seed: the eval split holds different sentences of the same kind.
        os.makedirs(os.path.join(cls.workdir, "data"), exist_ok=True)
        with open(os.path.join(cls.workdir, "data", "eval.jsonl"), "w", encoding="utf-8") as f:
            for t in tiny.texts(10, seed=5):
                f.write(json.dumps({"text": t}) + "\n")
        spec = base_spec(tiny_model("llama"), data={"train": "data/train.jsonl", "eval": "data/eval.jsonl", "max_seq_length": 64},
                         trainer=dict(base_spec("x")["trainer"], max_steps=30, learning_rate=1e-2, precision="fp32", eval_strategy="no",
                                      save_steps=100))
        with open(os.path.join(cls.run_dir, "spec.json"), "w", encoding="utf-8") as f:
            json.dump(spec, f)
        p = subprocess.run([sys.executable, "-m", "remote_finetune", "run", "--run-dir", cls.run_dir, "--workdir", cls.workdir,
                            "--no-gpu-sampler", "--no-watchdog"], cwd=cls.run_dir, env=env_for(cls.tmp), stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
        cls.events = read_events(cls.run_dir)
        if p.returncode != 0:
            raise AssertionError("training failed (%s):\n%s" % (p.returncode, p.stdout.decode(errors="replace")[-4000:]))
        cls.adapter = os.path.join(cls.workdir, "outputs", os.path.basename(cls.run_dir), "adapter")

    @classmethod
    def tearDownClass(cls) -> None:
        if os.environ.get("RFT_KEEP_TRAINING") != "1":
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def reference(self) -> Any:
        """The base model + adapter loaded here, in float32 on the CPU, as generate loads them."""
        import torch
        from peft import PeftModel
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(self.adapter)
        base = AutoModelForCausalLM.from_pretrained(tiny_model("llama"), **{"dtype" if _hf5() else "torch_dtype": torch.float32})
        model = PeftModel.from_pretrained(base, self.adapter).eval()
        return model, tok

    def test_final_perplexity_is_exp_of_the_mean_token_loss(self) -> None:
        import torch

        evals = [e for e in self.events if e["type"] == "eval"]
        self.assertEqual(len(evals), 1, [e["type"] for e in self.events])
        ev = evals[0]
        self.assertEqual(ev["step"], 30)
        self.assertAlmostEqual(ev["perplexity"], math.exp(ev["eval_loss"]), delta=1e-9 * ev["perplexity"])
        model, tok = self.reference()

        def mean_nll() -> Any:
            nll, n = 0.0, 0
            for t in tiny.texts(10, seed=5):
                ids = tok(t + tok.eos_token, truncation=True, max_length=64, return_tensors="pt")["input_ids"]
                with torch.no_grad():
                    loss = model(input_ids=ids, labels=ids).loss  # transformers' own shifted mean over ids[1:]
                nll += float(loss) * (ids.shape[1] - 1)
                n += ids.shape[1] - 1
            return nll / n, n

        loss, n = mean_nll()
        self.assertEqual(ev["metrics"]["eval_tokens"], n)
        # fp32 training: the in-memory model the trainer evaluated has the saved adapter's weights exactly.
        self.assertAlmostEqual(ev["eval_loss"], loss, delta=1e-5)
        self.assertAlmostEqual(ev["perplexity"], math.exp(loss), delta=1e-5 * ev["perplexity"])
        # The adapter learnt something: the base model alone is more perplexed by the same split.
        with model.disable_adapter():
            base_loss, _ = mean_nll()
        self.assertLess(ev["perplexity"], math.exp(base_loss) * 0.9, (ev["perplexity"], math.exp(base_loss)))

    def test_evaluate_subcommand_appends_the_same_figure(self) -> None:
        before = [e for e in read_events(self.run_dir) if e["type"] == "eval"]
        p = subprocess.run([sys.executable, "-m", "remote_finetune", "evaluate", "--run-dir", self.run_dir, "--workdir", self.workdir],
                           cwd=self.run_dir, env=env_for(self.tmp), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        ev = json.loads(p.stdout.strip().splitlines()[-1])
        after = [e for e in read_events(self.run_dir) if e["type"] == "eval"]
        self.assertEqual(len(after), len(before) + 1)
        self.assertEqual(after[-1], ev)
        self.assertAlmostEqual(ev["eval_loss"], before[0]["eval_loss"], delta=1e-5)

    def greedy(self, model: Any, tok: Any, prompt: str, n: int, chat: bool) -> str:
        import torch
        if chat:
            text = tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True)
            ids = tok(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
        else:
            ids = tok(prompt, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=n,
                                 pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id)
        return tok.decode(out[0][ids.shape[1]:], skip_special_tokens=True)

    def test_generate_streams_greedy_tokens_equal_to_model_generate(self) -> None:
        model, tok = self.reference()
        g = Generate(self.adapter, env_for(self.tmp))
        try:
            ready = g.line()
            self.assertEqual(ready["type"], "ready", ready)
            self.assertEqual(ready["device"], "cpu")
            self.assertTrue(ready["chat_template"])
            self.assertEqual(ready["base"], tiny_model("llama"))
            counts: List[int] = []
            for i, prompt in enumerate(PROMPTS):
                for chat in (False, True):
                    rid = "%d-%s" % (i, chat)
                    out = g.ask(rid, prompt, temperature=0, max_new_tokens=16, chat=chat)
                    self.assertEqual(out[-1]["type"], "done", out)
                    self.assertEqual(out[-1]["id"], rid)
                    self.assertFalse(out[-1]["stopped"])
                    chunks = [e["text"] for e in out if e["type"] == "token"]
                    self.assertTrue(all(e["id"] == rid for e in out))
                    self.assertEqual("".join(chunks), self.greedy(model, tok, prompt, 16, chat), (prompt, chat, chunks))
                    counts.append(len(chunks))
            # Streamed token by token, not as one block (a generation may still end at EOS after one token).
            self.assertGreater(max(counts), 2, counts)
            # Sampling with a temperature draws other tokens; a bad request is an error line and the session goes on.
            bad = g.ask("bad", "x", temperature=-1)
            self.assertEqual(bad[-1]["type"], "error")
            self.assertIn("temperature", bad[-1]["message"])
            sampled = g.ask("s", "The capital of", temperature=1.5, max_new_tokens=8, seed=3)
            self.assertEqual(sampled[-1]["type"], "done")
        finally:
            rc = g.close()
        self.assertEqual(rc, 0)

    def test_a_missing_adapter_is_one_fatal_error(self) -> None:
        g = Generate(os.path.join(self.tmp, "no-such-adapter"), env_for(self.tmp))
        ev = g.line()
        rc = g.close()
        self.assertEqual(ev["type"], "error")
        self.assertTrue(ev["fatal"])
        self.assertIn("no-such-adapter", ev["message"])
        self.assertEqual(rc, 3)


def _hf5() -> bool:
    import transformers
    return int(transformers.__version__.split(".")[0]) >= 5


def main(argv: Optional[List[str]] = None) -> None:
    unittest.main(module=__name__, argv=argv)


if __name__ == "__main__":
    main()
