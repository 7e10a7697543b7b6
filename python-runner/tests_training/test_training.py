"""The runner trains for real: `python -m remote_finetune run` in a run dir with spec.json, exactly as a GPU
host runs it, with the real torch, transformers, peft, trl, datasets, accelerate and bitsandbytes on CPU, on a
tiny model and tokenizer built here (tiny.py). No hub access: HF_HUB_OFFLINE=1 and HF_DATASETS_OFFLINE=1.

Run by `npm run test:training` (scripts/test-training.sh) inside a venv made from one of the runner's lock
files; never by the stdlib-only `test:runner` suite.
"""

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from typing import Any, Dict, List, Optional, Tuple

from tests_training import tiny

RUNNER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SHARED: Dict[str, str] = {}


def shared_dir() -> str:
    if "root" not in _SHARED:
        _SHARED["root"] = tempfile.mkdtemp(prefix="rft-training-")
    return _SHARED["root"]


def tiny_model(arch: str) -> str:
    """One model dir per architecture for the whole module (building takes a second; training changes none)."""
    key = "model-" + arch
    if key not in _SHARED:
        tok = tiny.build_tokenizer(os.path.join(shared_dir(), "tok-" + arch))
        _SHARED[key] = tiny.build_model(os.path.join(shared_dir(), key), arch, tok)
    return _SHARED[key]


def base_spec(model_dir: str, **over: Any) -> Dict[str, Any]:
    spec: Dict[str, Any] = {
        "version": 1, "name": "tiny", "method": "lora-bf16",
        "model": {"id": model_dir, "attn_implementation": "sdpa"},
        "data": {"train": "data/train.jsonl", "max_seq_length": 64},
        "lora": {"r": 8, "alpha": 16, "dropout": 0.0, "target_modules": "all-linear"},
        "trainer": {"max_steps": 12, "per_device_batch_size": 4, "gradient_accumulation": 1, "learning_rate": 5e-3,
                    "lr_scheduler": "constant", "logging_steps": 1, "save_steps": 6, "save_total_limit": 3,
                    "precision": "bf16", "optimizer": "adamw_torch", "gradient_checkpointing": False, "seed": 7},
        "target": {"provider": "ssh", "host": "gpu-box"},
        "outputs": {"dir": "outputs", "download": ["adapter"]},
    }
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(spec.get(key), dict):
            spec[key] = dict(spec[key], **value)
        else:
            spec[key] = value
    return spec


def read_events(run_dir: str) -> List[Dict[str, Any]]:
    path = os.path.join(run_dir, "events.jsonl")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


class Case(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="rft-case-")
        self.workdir = os.path.join(self.tmp, "ws")
        self.run_dir = os.path.join(self.tmp, "home", ".remote-finetune", "runs", "r-" + self._testMethodName[-20:].strip("_"))
        os.makedirs(self.workdir)
        os.makedirs(self.run_dir)

    def tearDown(self) -> None:
        if os.environ.get("RFT_KEEP_TRAINING") != "1":
            shutil.rmtree(self.tmp, ignore_errors=True)

    def env(self) -> Dict[str, str]:
        env = dict(os.environ)
        env.update(PYTHONPATH=RUNNER_DIR, PYTHONSAFEPATH="1", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
                   TRANSFORMERS_OFFLINE="1", HF_HOME=os.path.join(self.tmp, "hf"), WANDB_DISABLED="true",
                   RFT_SELFCHECK_LOGITS=os.path.join(self.run_dir, "selfcheck.json"), TOKENIZERS_PARALLELISM="false")
        env.pop("WANDB_API_KEY", None)
        env.update(getattr(self, "extra_env", {}))
        return env

    def argv(self) -> List[str]:
        return [sys.executable, "-m", "remote_finetune", "run", "--run-dir", self.run_dir, "--workdir", self.workdir,
                "--no-gpu-sampler", "--no-watchdog", "--grace-seconds", "60"]

    def start(self, spec: Dict[str, Any]) -> subprocess.Popen:
        with open(os.path.join(self.run_dir, "spec.json"), "w", encoding="utf-8") as f:
            json.dump(spec, f)
        # As the extension's command.sh does: from the run dir, so the workspace is not on sys.path.
        return subprocess.Popen(self.argv(), cwd=self.run_dir, env=self.env(), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def run_spec(self, spec: Dict[str, Any], timeout: float = 600) -> Tuple[int, List[Dict[str, Any]]]:
        p = self.start(spec)
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, read_events(self.run_dir)

    def output(self) -> str:
        path = os.path.join(self.run_dir, "output.log")
        return open(path, encoding="utf-8", errors="replace").read() if os.path.exists(path) else ""

    def data(self, form: str, rel: str) -> str:
        return tiny.write_data(os.path.join(self.workdir, rel), form)

    # ---- what every training case shows ---------------------------------------------------------------

    def assert_trained(self, rc: int, events: List[Dict[str, Any]], *, expect_checkpoint: bool = True) -> Dict[str, Any]:
        msg = "exit %s\nevents: %s\noutput.log tail:\n%s" % (rc, [e["type"] for e in events], self.output()[-4000:])
        self.assertEqual(rc, 0, msg)
        types = [e["type"] for e in events if e["type"] in ("started", "metrics", "checkpoint", "finished")]
        self.assertEqual(types[0], "started", msg)
        self.assertEqual(types[-1], "finished", msg)
        first_metrics = types.index("metrics")
        self.assertGreater(first_metrics, 0)
        if expect_checkpoint:
            self.assertIn("checkpoint", types[first_metrics:], msg)
        finished = events[-1]
        self.assertEqual(finished["type"], "finished")
        self.assertEqual(finished["status"], "completed", msg)
        self.assertEqual([e for e in events if e["type"] == "error"], [], msg)
        # Every key of the spec's trainer section reached this transformers (e.g. the default warmup_ratio,
        # which transformers 5 no longer has as a field).
        self.assertEqual([e["message"] for e in events if e.get("code") == "unknown-trainer-key"], [], msg)
        metrics = [e for e in events if e["type"] == "metrics" and "loss" in e]
        losses = [e["loss"] for e in metrics]
        self.assertGreaterEqual(len(losses), 6, msg)
        self.assertTrue(all(math.isfinite(x) for x in losses), losses)
        head, tail = sum(losses[:3]) / 3, sum(losses[-3:]) / 3
        self.assertLess(tail, head - 0.1, "loss did not fall: %s" % losses)
        grads = [e["grad_norm"] for e in metrics if e.get("grad_norm") is not None]
        self.assertTrue(grads, "no grad_norm was logged")
        self.assertTrue(all(g > 0 and math.isfinite(g) for g in grads), grads)
        return next(e for e in events if e["type"] == "started")

    def assert_adapter_reloads(self, started: Dict[str, Any], model_dir: str, adapter_dir: str, *, qlora: bool = False,
                               dtype: str = "bfloat16") -> None:
        """Reloaded with PeftModel.from_pretrained: the trainable count equals peft's own and the logits equal
        the in-memory model's (written by the trainer after saving, RFT_SELFCHECK_LOGITS)."""
        import torch
        from peft import PeftModel
        from transformers import AutoModelForCausalLM, BitsAndBytesConfig

        kw: Dict[str, Any] = {}
        if qlora:
            kw["quantization_config"] = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                                           bnb_4bit_compute_dtype=getattr(torch, dtype))
            kw["device_map"] = {"": "cpu"}
        base = AutoModelForCausalLM.from_pretrained(model_dir, **{_dtype_name(): getattr(torch, dtype)}, **kw)
        trainable_model = PeftModel.from_pretrained(base, adapter_dir, is_trainable=True)
        trainable, total = trainable_model.get_nb_trainable_parameters()
        self.assertEqual(started.get("trainable_params"), trainable)
        self.assertEqual(started.get("total_params"), total)
        base = AutoModelForCausalLM.from_pretrained(model_dir, **{_dtype_name(): getattr(torch, dtype)}, **kw)
        reloaded = PeftModel.from_pretrained(base, adapter_dir).eval()
        with reloaded.disable_adapter():
            untrained = self.logits(reloaded)
        self.assert_same_logits(reloaded, untrained)

    def logits(self, model: Any) -> Any:
        import torch
        with open(os.path.join(self.run_dir, "selfcheck.json"), encoding="utf-8") as f:
            ids = json.load(f)["input_ids"]
        with torch.no_grad():
            return model(input_ids=torch.tensor(ids)).logits.float()

    def assert_same_logits(self, model: Any, untrained: Any) -> None:
        """Equal within bf16's rounding (8 bits of mantissa: a kernel's order of operations moves the last bit),
        and the training moved the logits by far more than that, so a lost or unapplied adapter cannot pass."""
        import torch
        with open(os.path.join(self.run_dir, "selfcheck.json"), encoding="utf-8") as f:
            want = torch.tensor(json.load(f)["logits"])
        got = self.logits(model)
        self.assertEqual(tuple(got.shape), tuple(want.shape))
        tol = 2 ** -6 * max(1.0, want.abs().max().item())
        diff = (got - want).abs().max().item()
        moved = (untrained - want).abs().max().item()
        self.assertLess(diff, tol, "reloaded logits differ by %g" % diff)
        self.assertGreater(moved, 10 * tol, "training did not change the logits (moved %g)" % moved)


def _dtype_name() -> str:
    import transformers
    return "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"


class BuiltInTrainer(Case):
    def test_bf16_lora_llama_on_jsonl_text(self):
        model = tiny_model("llama")
        self.data("text-jsonl", "data/train.jsonl")
        rc, events = self.run_spec(base_spec(model, trainer={"gradient_checkpointing": True}))
        started = self.assert_trained(rc, events)
        self.assertEqual(started["method"], "lora-bf16")
        ckpts = [e for e in events if e["type"] == "checkpoint"]
        run_id = os.path.basename(self.run_dir)
        self.assertEqual(ckpts[0]["path"], os.path.join("outputs", "checkpoints", run_id, "checkpoint-6"))
        self.assertTrue(os.path.isfile(os.path.join(self.workdir, ckpts[0]["path"], "trainer_state.json")))
        self.assertEqual(events[-1].get("adapter_path"), os.path.join("outputs", os.path.basename(self.run_dir), "adapter"))
        self.assert_adapter_reloads(started, model, os.path.join(self.workdir, "outputs", os.path.basename(self.run_dir), "adapter"))
        args = json.load(open(os.path.join(self.run_dir, "training_args.json")))
        self.assertTrue(args["bf16"])
        self.assertEqual(args["optim"], "adamw_torch")
        self.assertFalse(os.path.exists(os.path.join(self.workdir, "outputs", "checkpoint-6")), "checkpoint outside the run's folder")
        import transformers
        freeze = open(os.path.join(self.run_dir, "pip-freeze.txt")).read().splitlines()
        self.assertIn("transformers==%s" % transformers.__version__, freeze)

    def test_qlora_nf4_llama_on_csv(self):
        import bitsandbytes  # noqa: F401  (the suite's venv has it; CPU 4-bit quantisation since bitsandbytes 0.48)
        model = tiny_model("llama")
        self.data("csv", "data/train.csv")
        spec = base_spec(model, method="qlora", data={"train": "data/train.csv"},
                         quantization={"load_in_4bit": True, "quant_type": "nf4", "double_quant": True, "compute_dtype": "bfloat16"})
        rc, events = self.run_spec(spec)
        started = self.assert_trained(rc, events)
        self.assertEqual(started["method"], "qlora")
        self.assertIn("(qlora, attn_implementation=sdpa, dtype=bfloat16)", self.output())
        self.assert_adapter_reloads(started, model, os.path.join(self.workdir, "outputs", os.path.basename(self.run_dir), "adapter"), qlora=True)

    def test_full_finetune_qwen2_on_chat_messages(self):
        model = tiny_model("qwen2")
        self.data("messages-jsonl", "data/chat.jsonl")
        spec = base_spec(model, method="full", data={"train": "data/chat.jsonl", "chat_template": True},
                         trainer={"learning_rate": 1e-3}, outputs={"dir": "outputs", "download": ["model"]})
        rc, events = self.run_spec(spec)
        started = self.assert_trained(rc, events)
        import torch
        from transformers import AutoModelForCausalLM
        reloaded = AutoModelForCausalLM.from_pretrained(os.path.join(self.workdir, "outputs", os.path.basename(self.run_dir), "model"), **{_dtype_name(): torch.bfloat16}).eval()
        n = sum(p.numel() for p in reloaded.parameters())
        self.assertEqual(started["trainable_params"], n)
        self.assertEqual(started["total_params"], n)
        untrained = self.logits(AutoModelForCausalLM.from_pretrained(model, **{_dtype_name(): torch.bfloat16}).eval())
        self.assert_same_logits(reloaded, untrained)
        self.assertEqual(events[-1].get("adapter_path"), os.path.join("outputs", os.path.basename(self.run_dir), "model"))

    def test_sft_via_trl_on_chat_messages(self):
        import trl  # noqa: F401
        model = tiny_model("llama")
        self.data("messages-jsonl", "data/chat.jsonl")
        spec = base_spec(model, data={"train": "data/chat.jsonl", "chat_template": True}, trainer={"use_sft_trainer": True})
        rc, events = self.run_spec(spec)
        started = self.assert_trained(rc, events)
        self.assert_adapter_reloads(started, model, os.path.join(self.workdir, "outputs", os.path.basename(self.run_dir), "adapter"))
        args = json.load(open(os.path.join(self.run_dir, "training_args.json")))
        # SFTConfig's own field (max_length in trl >= 0.20, max_seq_length before): these were trl's arguments.
        self.assertEqual(args.get("max_length", args.get("max_seq_length")), 64)

    def test_lora_qwen2_on_parquet_with_sgd(self):
        model = tiny_model("qwen2")
        self.data("parquet", "data/train.parquet")
        spec = base_spec(model, data={"train": "data/train.parquet"}, trainer={"optimizer": "sgd", "learning_rate": 0.5})
        rc, events = self.run_spec(spec)
        started = self.assert_trained(rc, events)
        args = json.load(open(os.path.join(self.run_dir, "training_args.json")))
        self.assertEqual(args["optim"], "sgd", "the spec's optimizer was replaced")
        self.assert_adapter_reloads(started, model, os.path.join(self.workdir, "outputs", os.path.basename(self.run_dir), "adapter"))

    def test_training_arguments_exist_before_the_model_loads(self):
        # ZeRO-3 (zero3_init) needs the HfDeepSpeedConfig that TrainingArguments create before from_pretrained.
        order_log = os.path.join(self.tmp, "order.log")
        spy = os.path.join(os.path.dirname(os.path.abspath(__file__)), "order_spy", "sitecustomize.py")
        # The built-in trainer's PYTHONPATH is the runner's own folder and nothing else (control_env.py), so the spy
        # goes beside a copy of the runner, which then runs as the runner does.
        runner = os.path.join(self.tmp, "runner-with-spy")
        shutil.copytree(os.path.join(RUNNER_DIR, "remote_finetune"), os.path.join(runner, "remote_finetune"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(os.path.join(RUNNER_DIR, "remote_finetune_entry.py"), runner)
        shutil.copy(spy, runner)
        self.extra_env = {"RFT_TEST_ORDER_LOG": order_log, "PYTHONPATH": runner}
        self.data("text-jsonl", "data/train.jsonl")
        rc, events = self.run_spec(base_spec(tiny_model("llama"), trainer={"max_steps": 2, "save_steps": 2}))
        self.assertEqual(rc, 0, self.output()[-3000:])
        with open(order_log, encoding="utf-8") as f:
            order = f.read().split()
        self.assertIn("from_pretrained", order, order)
        self.assertIn("TrainingArguments", order[:order.index("from_pretrained")], order)


OWN_SCRIPT = r'''
import sys
from datasets import load_dataset
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer, TrainingArguments
model_dir = sys.argv[1]
tok = AutoTokenizer.from_pretrained(model_dir)
tok.pad_token = "<|finetune_right_pad_id|>"
model = get_peft_model(AutoModelForCausalLM.from_pretrained(model_dir), LoraConfig(r=8, lora_alpha=16, target_modules="all-linear", task_type="CAUSAL_LM"))
ds = load_dataset("json", data_files="data/train.jsonl", split="train").map(lambda b: tok(b["text"]), batched=True, remove_columns=["text"])
args = TrainingArguments(output_dir="outputs/vqa-run", max_steps=12, per_device_train_batch_size=4, learning_rate=5e-3,
                         lr_scheduler_type="constant", logging_steps=1, save_steps=6, report_to=[], seed=7)
Trainer(model=model, args=args, train_dataset=ds, data_collator=DataCollatorForLanguageModeling(tok, mlm=False)).train()
model.save_pretrained("outputs/vqa-run/final")
'''


class OwnScript(Case):
    def test_own_script_trains_and_its_adapter_is_found(self):
        model = tiny_model("llama")
        self.data("text-jsonl", "data/train.jsonl")
        with open(os.path.join(self.workdir, "train_own.py"), "w") as f:
            f.write(OWN_SCRIPT)
        spec = {"version": 1, "name": "own", "command": "python train_own.py %s" % model, "target": {"provider": "ssh"},
                "outputs": {"dir": "outputs", "download": ["adapter"]}}
        rc, events = self.run_spec(spec)
        started = self.assert_trained(rc, events)
        self.assertEqual(started["method"], "own-script")
        ckpts = [e for e in events if e["type"] == "checkpoint"]
        self.assertEqual([c["step"] for c in ckpts], [6, 12])
        # The script saved its adapter where the seed's train_vqa.py does: under its own output folder.
        self.assertEqual(events[-1].get("adapter_path"), os.path.join("outputs", "vqa-run", "final"))


class StopAndResume(Case):
    def test_sigterm_leaves_a_checkpoint_and_a_rerun_resumes_to_the_last_step(self):
        model = tiny_model("llama")
        self.data("text-jsonl", "data/train.jsonl")
        spec = base_spec(model, trainer={"max_steps": 150, "save_steps": 1000})
        p = self.start(spec)
        deadline = time.time() + 300
        step = 0
        while time.time() < deadline and p.poll() is None:
            step = max([e.get("step", 0) for e in read_events(self.run_dir) if e["type"] == "metrics"] or [0])
            if step >= 4:
                break
            time.sleep(0.2)
        self.assertGreaterEqual(step, 4, self.output()[-3000:])
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=120)
        events = read_events(self.run_dir)
        finished = [e for e in events if e["type"] == "finished"]
        self.assertEqual(finished[-1]["status"], "interrupted", self.output()[-3000:])
        ckpts = [e for e in events if e["type"] == "checkpoint"]
        self.assertEqual(len(ckpts), 1, events)
        stopped_at = ckpts[0]["step"]
        self.assertGreaterEqual(stopped_at, 4)
        self.assertLess(stopped_at, 150)
        self.assertTrue(os.path.isfile(os.path.join(self.workdir, ckpts[0]["path"], "trainer_state.json")))

        n_before = len(events)
        rc, events = self.run_spec(spec)
        again = events[n_before:]
        self.assertEqual(rc, 0, self.output()[-4000:])
        self.assertIn("resumed", [e.get("code") for e in again if e["type"] == "warning"])
        steps = [e["step"] for e in again if e["type"] == "metrics"]
        self.assertGreater(min(steps), stopped_at, "the rerun started again from step %d" % min(steps))
        self.assertEqual(max(steps), 150)
        self.assertEqual(again[-1]["status"], "completed")
        self.assertNotIn("UnpicklingError", self.output())


class Collator(unittest.TestCase):
    def test_eos_keeps_its_label_when_the_tokenizer_pads_with_eos(self):
        """transformers' DataCollatorForLanguageModeling masks every pad id, so with pad = EOS the EOS label is
        lost (shown first, so this test fails if the library ever changes); ours labels by the attention mask."""
        from transformers import DataCollatorForLanguageModeling
        from remote_finetune.data_prep import CausalCollator
        from remote_finetune.trainer import choose_pad_token
        tok = tiny.build_tokenizer(tempfile.mkdtemp(prefix="rft-tok-"), with_pad_candidate=False)
        self.assertIsNone(choose_pad_token(tok))
        tok.pad_token = tok.eos_token
        feats = [tok("The capital of Peru is Lima." + tok.eos_token), tok("The capital of Cuba is Havana, " * 2 + tok.eos_token)]
        eos = tok.eos_token_id
        lib = DataCollatorForLanguageModeling(tok, mlm=False)([dict(f) for f in feats])
        self.assertTrue(all(lib["labels"][i][lib["input_ids"][i] == eos].eq(-100).all() for i in range(2)))
        ours = CausalCollator(tok)([dict(f) for f in feats])
        for i, f in enumerate(feats):
            n = len(f["input_ids"])
            self.assertEqual(ours["labels"][i][n - 1].item(), eos, "EOS lost its label")
            self.assertTrue(ours["labels"][i][n:].eq(-100).all())

    def test_a_free_pad_token_is_chosen_over_eos(self):
        from remote_finetune.trainer import choose_pad_token
        tok = tiny.build_tokenizer(tempfile.mkdtemp(prefix="rft-tok-"))
        self.assertIsNone(tok.pad_token)
        self.assertEqual(choose_pad_token(tok), "<|finetune_right_pad_id|>")

    def test_templated_chat_has_one_bos(self):
        from remote_finetune.data_formats import encode
        tok = tiny.build_tokenizer(tempfile.mkdtemp(prefix="rft-tok-"))
        text = tok.apply_chat_template(tiny.conversations(1)[0], tokenize=False)
        self.assertTrue(text.startswith(tok.bos_token))
        ids, _labels = encode(tok, {"messages": tiny.conversations(1)[0]}, train_on_prompt=False)
        self.assertEqual(ids.count(tok.bos_token_id), 1)
        self.assertEqual(tok(text)["input_ids"].count(tok.bos_token_id), 2, "the double-BOS this guards against")


if __name__ == "__main__":
    unittest.main()
