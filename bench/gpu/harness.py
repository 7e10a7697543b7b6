"""What the GPU smoke test (smoke.py) and the VRAM measurements (vram_measure.py) share: a model of a released
model's shape with random weights, data of an exact sequence length, and one training run through the real
runner, `python -m remote_finetune run` in a run dir with spec.json, exactly as a GPU host runs it.

This process never imports torch: the model is built, the host probed and every run trained in child processes,
so the GPU holds nothing of ours between runs and nvidia-smi's reading is the run's own. The tokenizer, the model
builder and the spec come from python-runner/tests_training (tiny.py, test_training.base_spec), the code the CPU
training suite already trusts.
"""

import datetime
import hashlib
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNER_DIR = os.path.join(REPO, "python-runner")
CONFIGS = os.path.join(REPO, "bench", "gpu", "configs")
STANDINS = os.path.join(REPO, "test", "support", "standins")
sys.path.insert(0, RUNNER_DIR)

from remote_finetune.events import parse_event_line  # noqa: E402  (stdlib only)
from remote_finetune.gpu import parse_gpu_csv_line  # noqa: E402
from tests_training.test_training import base_spec  # noqa: E402  (imports no heavy library at module level)

METHODS = ("qlora", "lora-bf16", "full")
GPU_INTERVAL_MS = 200  # the runner's sampler (default 2 s) would miss a short peak
LIBRARIES = ("torch", "transformers", "peft", "trl", "datasets", "accelerate", "bitsandbytes")

PROBE = r"""
import json, platform, sys
out = {"python": platform.python_version()}
for name in %r:
    try:
        out[name] = __import__(name).__version__
    except Exception as e:
        out[name] = None
        out[name + "_error"] = "%%s: %%s" %% (type(e).__name__, str(e).splitlines()[0][:200] if str(e) else "")
try:
    import torch
    out["cuda"] = bool(torch.cuda.is_available())
    out["cuda_version"] = torch.version.cuda
    if out["cuda"]:
        p = torch.cuda.get_device_properties(0)
        out.update(gpu_name=p.name, gpu_capability="%%d.%%d" %% (p.major, p.minor), gpu_total_memory_mib=round(p.total_memory / 2 ** 20, 1),
                   gpu_count=torch.cuda.device_count())
except Exception as e:
    out["cuda"] = False
    out["cuda_error"] = "%%s: %%s" %% (type(e).__name__, e)
print("RFT_PROBE " + json.dumps(out))
""" % (LIBRARIES,)


class HarnessError(Exception):
    """A problem to report in one line (no traceback): no GPU, a missing library, a bad argument."""


def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()


def today() -> str:
    return datetime.date.today().isoformat()


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown"


def probe(python: str) -> Dict[str, Any]:
    """Library versions and the GPU as the training interpreter sees them."""
    r = subprocess.run([python, "-c", PROBE], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    line = next((l for l in r.stdout.splitlines() if l.startswith("RFT_PROBE ")), None)
    if line is None:
        raise HarnessError("could not probe %s (exit %s): %s" % (python, r.returncode, r.stdout.strip()[-300:]))
    return json.loads(line[len("RFT_PROBE "):])


def nvidia_smi_used_mib() -> Optional[float]:
    """memory.used of GPU 0 now (before a run: what others hold), or None without nvidia-smi."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        r = subprocess.run([exe, "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=30)
        return float(r.stdout.strip().splitlines()[0])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None


def load_config(name: str) -> Tuple[str, Dict[str, Any]]:
    path = os.path.join(CONFIGS, name + ".json")
    if not os.path.isfile(path):
        have = sorted(f[:-5] for f in os.listdir(CONFIGS) if f.endswith(".json"))
        raise HarnessError("no model config %s (have: %s)" % (os.path.relpath(path, REPO), ", ".join(have)))
    with open(path, encoding="utf-8") as f:
        return os.path.relpath(path, REPO), json.load(f)


def params_of(config: Dict[str, Any]) -> int:
    """Parameters of a Llama-style decoder (the same formula as src/core/gpu/models.ts paramsFromShape)."""
    h, layers, inter, vocab = config["hidden_size"], config["num_hidden_layers"], config["intermediate_size"], config["vocab_size"]
    heads = config["num_attention_heads"]
    kv = config.get("num_key_value_heads", heads) * config.get("head_dim", h // heads)
    per_layer = 2 * h * h + 2 * h * kv + 3 * h * inter + 2 * h
    return int(layers * per_layer + vocab * h * (1 if config.get("tie_word_embeddings") else 2))


class Workspace:
    """One working folder: the tokenizer, cached models, the synced workspace (data, outputs) and the run dirs."""

    def __init__(self, root: str, python: str, *, dry_run: bool, keep_models: bool = False) -> None:
        self.root = os.path.abspath(root)
        self.python = python
        self.dry_run = dry_run
        self.keep_models = keep_models
        self.workdir = os.path.join(self.root, "ws")
        self.runs = os.path.join(self.root, "home", ".remote-finetune", "runs")
        self.models = os.path.join(self.root, "models")
        for d in (self.workdir, self.runs, self.models):
            os.makedirs(d, exist_ok=True)

    def child_env(self, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
        env = dict(os.environ)
        env.update(PYTHONPATH=RUNNER_DIR, PYTHONSAFEPATH="1", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                   HF_HOME=os.path.join(self.root, "hf"), WANDB_DISABLED="true", TOKENIZERS_PARALLELISM="false", PYTHONUNBUFFERED="1")
        env.pop("WANDB_API_KEY", None)
        if self.dry_run:
            # No GPU here: the runner's sampler reads the nvidia-smi STAND-IN of the test suites, so the gpu.csv path is
            # exercised; its figures are labelled as such in the output and never compared with anything.
            env["PATH"] = STANDINS + os.pathsep + env.get("PATH", "")
        if extra:
            env.update(extra)
        return env

    def _python(self, code: str, timeout: float) -> str:
        r = subprocess.run([self.python, "-c", code], cwd=RUNNER_DIR, env=self.child_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=timeout)
        if r.returncode != 0:
            raise HarnessError("building failed (exit %d): %s" % (r.returncode, r.stdout.strip()[-1500:]))
        return r.stdout

    def tokenizer_dir(self) -> str:
        path = os.path.join(self.root, "tokenizer")
        if not os.path.isfile(os.path.join(path, "tokenizer.json")):
            self._python("from tests_training import tiny; tiny.build_tokenizer(%r)" % path, 300)
        return path

    def model(self, name: str) -> Tuple[str, str, Dict[str, Any], float]:
        """(model dir, config path, config, seconds spent building). Real shapes are built on the GPU in bf16 (as
        released checkpoints are) in a child process; one is kept at a time, since 8B parameters are 16 GB of disk."""
        cfg_path, config = load_config(name)
        dtype = None if self.dry_run else "bfloat16"
        key = hashlib.sha256(json.dumps([config, dtype], sort_keys=True).encode()).hexdigest()[:10]
        path = os.path.join(self.models, "%s-%s" % (name, key))
        if os.path.isfile(os.path.join(path, ".complete")):
            return path, cfg_path, config, 0.0
        if not self.keep_models:
            for other in os.listdir(self.models):
                shutil.rmtree(os.path.join(self.models, other), ignore_errors=True)
        start = time.time()
        code = ("import json; from tests_training import tiny; from transformers import AutoTokenizer\n"
                "tok = AutoTokenizer.from_pretrained(%r)\n"
                "tiny.build_model_from_config(%r, json.load(open(%r)), tok, device=%r, dtype=%r)\n"
                % (self.tokenizer_dir(), path, os.path.join(REPO, cfg_path), "cpu" if self.dry_run else "cuda", dtype))
        self._python(code, 1800)
        open(os.path.join(path, ".complete"), "w").close()
        return path, cfg_path, config, time.time() - start

    def data(self, seq_len: int, examples: int) -> str:
        """JSONL of `examples` texts, each longer than `seq_len` tokens: truncated to data.max_seq_length, every
        example is exactly seq_len tokens, so tokens per step is batch × seq_len with no padding."""
        rel = os.path.join("data", "train-s%d-n%d.jsonl" % (seq_len, examples))
        path = os.path.join(self.workdir, rel)
        if not os.path.isfile(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            code = ("import json; from tests_training import tiny; from transformers import AutoTokenizer\n"
                    "tok = AutoTokenizer.from_pretrained(%r)\n"
                    "with open(%r, 'w') as f:\n"
                    "    for i in range(%d):\n"
                    "        n = 16\n"
                    "        while True:\n"
                    "            text = ' '.join(tiny.texts(n, seed=i))\n"
                    "            if len(tok(text)['input_ids']) > %d: break\n"
                    "            n *= 2\n"
                    "        f.write(json.dumps({'text': text}) + '\\n')\n" % (self.tokenizer_dir(), path, examples, seq_len + 8))
            self._python(code, 600)
        return rel


def case_spec(model_dir: str, data_rel: str, *, method: str, seq_len: int, batch: int, gc: bool, steps: int, lora_r: int = 16,
              lora_alpha: int = 32, learning_rate: float = 1e-4, out_rel: str = "outputs") -> Dict[str, Any]:
    """The run spec, from tests_training's base_spec; every setting the measurement depends on is set here."""
    over: Dict[str, Any] = {
        "name": "gpu-bench", "method": method,
        "data": {"train": data_rel, "max_seq_length": seq_len},
        "lora": {"r": lora_r, "alpha": lora_alpha, "dropout": 0.0, "target_modules": "all-linear"},
        "trainer": {"max_steps": steps, "per_device_batch_size": batch, "gradient_accumulation": 1, "learning_rate": learning_rate,
                    "lr_scheduler": "constant", "logging_steps": 1, "save_steps": 10 ** 9, "save_total_limit": 1, "precision": "bf16",
                    "optimizer": "adamw_torch", "gradient_checkpointing": gc, "seed": 7},
        "outputs": {"dir": out_rel, "download": []},
    }
    spec = base_spec(model_dir, **over)
    spec["model"]["attn_implementation"] = "sdpa"  # what the estimate calls "flash" (no s² score term); flash-attn is not assumed
    if method == "qlora":
        spec["quantization"] = {"load_in_4bit": True, "quant_type": "nf4", "double_quant": True, "compute_dtype": "bfloat16"}
    else:
        spec.pop("quantization", None)
    return spec


def read_events(run_dir: str) -> Tuple[List[Dict[str, Any]], List[str]]:
    """Events as the extension reads them (the shared schema); lines it would refuse are returned apart."""
    events, bad = [], []
    path = os.path.join(run_dir, "events.jsonl")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    ev, err = parse_event_line(line)
                    if ev is None:
                        bad.append("%s: %s" % (err, line.strip()[:200]))
                    else:
                        events.append(ev)
    return events, bad


def summarize_events(events: List[Dict[str, Any]], bad: List[str]) -> Dict[str, Any]:
    counts: Dict[str, int] = {}
    for e in events:
        counts[e["type"]] = counts.get(e["type"], 0) + 1
    started = next((e for e in events if e["type"] == "started"), {})
    finished = next((e for e in reversed(events) if e["type"] == "finished"), {})
    losses = [e["loss"] for e in events if e["type"] == "metrics" and "loss" in e]
    grads = [e["grad_norm"] for e in events if e["type"] == "metrics" and e.get("grad_norm") is not None]
    return {
        "counts": counts, "invalid_lines": bad[:5],
        "started": {k: started[k] for k in ("method", "total_params", "trainable_params", "trainable_pct", "world_size") if k in started},
        "warnings": [{"code": e.get("code"), "message": e["message"][:300]} for e in events if e["type"] == "warning"],
        "errors": [{"signature": e.get("signature"), "message": e["message"][:300]} for e in events if e["type"] == "error"],
        "finished": {k: finished[k] for k in ("status", "exit_code", "runtime_s", "adapter_path") if k in finished},
        "last_step": max([e["step"] for e in events if e["type"] == "metrics"] or [0]),
        "loss_first": losses[0] if losses else None, "loss_last": losses[-1] if losses else None,
        "grad_norm_last": grads[-1] if grads else None,
    }


def step_times(events: List[Dict[str, Any]]) -> List[float]:
    """Seconds between consecutive per-step metrics events (logging_steps 1): step 2 onwards, so the first step's
    warm-up (CUDA context, cuBLAS handles, the allocator growing) is not counted. Each log follows a .item() on the
    loss, which waits for the GPU, so an interval is a whole step."""
    points = [(e["step"], e["ts"]) for e in events if e["type"] == "metrics" and "loss" in e]
    out = []
    for (s0, t0), (s1, t1) in zip(points, points[1:]):
        if s1 == s0 + 1 and t1 > t0:
            out.append(round(t1 - t0, 4))
    return out


def nvidia_smi_peak(run_dir: str) -> Tuple[Optional[float], int]:
    """(highest memory.used of GPU 0 in the runner's gpu.csv, samples read)."""
    path = os.path.join(run_dir, "gpu.csv")
    peak, n = None, 0
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                s = parse_gpu_csv_line(line.strip())
                if s is None or s.get("index") != 0 or s.get("memory_used_mib") is None:
                    continue
                n += 1
                peak = s["memory_used_mib"] if peak is None else max(peak, s["memory_used_mib"])
    return peak, n


def _tail(path: str, n: int = 3000) -> str:
    if not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()[-n:]


OOM_TEXT = re.compile(r"CUDA out of memory|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED")


def run_case(ws: Workspace, spec: Dict[str, Any], run_id: str, *, timeout_s: float) -> Dict[str, Any]:
    """Trains one spec through `python -m remote_finetune run` and returns what was measured (status ok/oom/failed)."""
    run_dir = os.path.join(ws.runs, run_id)
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    out_dir = os.path.join(ws.workdir, spec["outputs"]["dir"])
    shutil.rmtree(out_dir, ignore_errors=True)
    with open(os.path.join(run_dir, "spec.json"), "w", encoding="utf-8") as f:
        json.dump(spec, f)
    mem_path = os.path.join(run_dir, "memory.json")
    before = nvidia_smi_used_mib()
    argv = [ws.python, "-m", "remote_finetune", "run", "--run-dir", run_dir, "--workdir", ws.workdir,
            "--gpu-interval-ms", str(GPU_INTERVAL_MS), "--no-watchdog"]
    start = time.time()
    try:
        # From the run dir, as the extension's command.sh starts it (the workspace is not on sys.path).
        r = subprocess.run(argv, cwd=run_dir, env=ws.child_env({"RFT_MEMORY_REPORT": mem_path}), stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout_s)
        rc: Optional[int] = r.returncode
    except subprocess.TimeoutExpired:
        rc = None
    wall = time.time() - start
    events, bad = read_events(run_dir)
    summary = summarize_events(events, bad)
    times = step_times(events)
    smi_peak, smi_samples = nvidia_smi_peak(run_dir)
    memory: Dict[str, Any] = {}
    if os.path.exists(mem_path):
        with open(mem_path, encoding="utf-8") as f:
            memory = json.load(f)
    log_tail = _tail(os.path.join(run_dir, "output.log"))
    tokens_per_step = spec["trainer"]["per_device_batch_size"] * spec["trainer"]["gradient_accumulation"] * spec["data"]["max_seq_length"]
    step = statistics.median(times) if times else None
    runner_tps = [e["tokens_per_second"] for e in events if e["type"] == "metrics" and "tokens_per_second" in e]
    summary_extra = next((e.get("extra", {}) for e in reversed(events) if e["type"] == "metrics" and "train_runtime" in e.get("extra", {})), {})
    oom = any(e.get("signature") == "cuda-oom" for e in summary["errors"]) or bool(OOM_TEXT.search(log_tail))
    completed = rc == 0 and summary["finished"].get("status") == "completed"
    status = "ok" if completed else ("oom" if oom else "failed")
    saved = summary["finished"].get("adapter_path")
    saved_bytes = _du(os.path.join(ws.workdir, saved)) if saved else 0
    shutil.rmtree(out_dir, ignore_errors=True)  # a full fine-tune of 8B saves 16 GB; the next case needs the disk
    rec: Dict[str, Any] = {
        "status": status, "exit_code": rc, "wall_s": round(wall, 2),
        "step_time_s": round(step, 4) if step else None, "step_times_s": times,
        "tokens_per_step": tokens_per_step, "tokens_per_second": round(tokens_per_step / step, 1) if step else None,
        "runner_tokens_per_second": round(statistics.median(runner_tps), 1) if runner_tps else None,
        "train_runtime_s": summary_extra.get("train_runtime"),
        "cuda_max_memory_allocated_mib": memory.get("cuda_max_memory_allocated_mib"),
        "cuda_max_memory_reserved_mib": memory.get("cuda_max_memory_reserved_mib"),
        "host_peak_rss_mib": memory.get("host_peak_rss_mib"),
        "nvidia_smi_peak_mib": smi_peak, "nvidia_smi_before_mib": before, "nvidia_smi_samples": smi_samples,
        "saved_output": saved, "saved_output_mib": round(saved_bytes / 2 ** 20, 1),
        "events": summary,
    }
    if status != "ok":
        rec["log_tail"] = log_tail[-1500:] if rc is not None else "timed out after %d s\n%s" % (timeout_s, log_tail[-1200:])
    return rec


def _du(path: str) -> int:
    total = 0
    for base, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(base, f))
            except OSError:
                pass
    return total


def _positive(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def check_record(rec: Dict[str, Any], *, steps: int, dry_run: bool) -> List[str]:
    """What a completed run's record must hold; [] when it does. The dry-run test and the scripts' own exit codes use it."""
    problems = []
    if rec.get("status") != "ok":
        return ["status %s" % rec.get("status")]
    for key in ("step_time_s", "tokens_per_second", "runner_tokens_per_second", "train_runtime_s", "host_peak_rss_mib", "nvidia_smi_peak_mib"):
        if not _positive(rec.get(key)):
            problems.append("%s is not a finite positive number: %r" % (key, rec.get(key)))
    if len(rec.get("step_times_s") or []) < steps - 2:
        problems.append("only %d step intervals for %d steps" % (len(rec.get("step_times_s") or []), steps))
    alloc, reserved = rec.get("cuda_max_memory_allocated_mib"), rec.get("cuda_max_memory_reserved_mib")
    if dry_run:
        if alloc is not None or reserved is not None:
            problems.append("CUDA memory figures on a CPU dry run")
    elif not (_positive(alloc) and _positive(reserved) and reserved >= alloc):
        problems.append("CUDA peaks missing or inconsistent: allocated %r, reserved %r" % (alloc, reserved))
    ev = rec.get("events") or {}
    counts = ev.get("counts") or {}
    if counts.get("started") != 1 or ev.get("finished", {}).get("status") != "completed":
        problems.append("events: started %s, finished %s" % (counts.get("started"), ev.get("finished")))
    if ev.get("last_step") != steps:
        problems.append("events: last step %s, expected %d" % (ev.get("last_step"), steps))
    if ev.get("invalid_lines"):
        problems.append("events.jsonl lines the extension would refuse: %s" % ev["invalid_lines"])
    for key in ("loss_first", "loss_last"):
        if not _positive(ev.get(key)):
            problems.append("events: %s %r" % (key, ev.get(key)))
    return problems


def write_json(path: str, obj: Dict[str, Any]) -> List[str]:
    """Writes `path` (atomically) and a copy under $OUT when that is set (how a GPU machine hands files back)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    text = json.dumps(obj, indent=1, allow_nan=False) + "\n"
    written = []
    targets = [path]
    if os.environ.get("OUT"):
        targets.append(os.path.join(os.environ["OUT"], os.path.basename(path)))
    for p in targets:
        os.makedirs(os.path.dirname(os.path.abspath(p)), exist_ok=True)
        with open(p + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(p + ".tmp", p)
        written.append(p)
    return written


def host_section(info: Dict[str, Any], dry_run: bool) -> Dict[str, Any]:
    host = dict(info)
    host["nvidia_smi_source"] = "stand-in: test/support/standins/nvidia-smi (no GPU; its figures mean nothing)" if dry_run else (shutil.which("nvidia-smi") or "missing")
    host["pytorch_cuda_alloc_conf"] = os.environ.get("PYTORCH_CUDA_ALLOC_CONF")
    host["gpu_sample_interval_ms"] = GPU_INTERVAL_MS
    return host


def require_host(info: Dict[str, Any], dry_run: bool) -> None:
    missing = [n for n in ("torch", "transformers", "peft", "datasets", "accelerate") if not info.get(n)]
    if missing:
        raise HarnessError("%s not importable by the training interpreter (%s)" % (", ".join(missing), info.get(missing[0] + "_error")))
    if not dry_run and not info.get("cuda"):
        raise HarnessError("no CUDA GPU visible to torch %s (%s); use --cpu-dry-run to try the pipeline on the CPU"
                           % (info.get("torch"), info.get("cuda_error") or "torch.cuda.is_available() is False"))
