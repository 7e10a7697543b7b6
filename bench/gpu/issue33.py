"""Issue 33 on one lent GPU, in one process with one deadline (started by bench/gpu/device_run_33.sh):

1. Throughput against two published anchors, random weights from bench/gpu/configs, each case alone on the GPU:
   Unsloth's recipe (Llama 3.1 8B, QLoRA r 32, batch 2, accumulation 4, sequence 2048) and LLaMA-Factory's
   (LLaMA2-7B, LoRA r 8, batch 4, accumulation 2, length 1024). Per anchor: the built-in trainer with its defaults
   (python-runner/remote_finetune/spec_defaults.py for all the recipe leaves open), the built-in fast path as it exists
   today (data.packing and, where liger-kernel imports on a GPU, trainer.use_liger_kernel), plain TRL SFT
   (bench/gpu/trl_sft_baseline.py) and Unsloth when its packed wheels installed offline. Tokens/s after warm-up
   (step 2 on), peak reserved memory, seconds to the first step and model-load time per case.
2. The VRAM estimate out of sample: shapes not among the configs it was calibrated on (Gemma-2-9B, Phi-3-mini,
   Qwen2.5-14B, Qwen1.5-MoE-A2.7B), QLoRA and LoRA, sequence 1024/4096, checkpointing on/off, batch 1/4. The
   estimates come from a file written before this process starts (bench/gpu/holdoutEstimate.ts; on the GPU
   machine, which has no Node, the committed bench/gpu/holdout-estimates-33.json); they are copied into the
   result file, and the file written, before the first held-out case runs.
3. Every case records tokens/s, time to first step and model-load time (the cost model's GPU points).
4. The first QLoRA case with a paged optimizer (the runner's default optimizer) runs with capture_smi.sh busy.

Writes throughput-<gpu>-<date>.json and holdout-vram-<gpu>-<date>.json into --out-dir (and $OUT). A case that
would end past --deadline is not started and is recorded as not run. --cpu-dry-run: the same path on the CPU with
tiny shapes of the same architectures; QLoRA and paged optimizers are replaced (no CUDA) and say so per case.
"""

import argparse
import copy
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULTS = os.path.join(harness.RUNNER_DIR, "remote_finetune", "spec_defaults.py")
COMMITTED_ESTIMATES = os.path.join(HERE, "holdout-estimates-33.json")

UNSLOTH_SOURCE = ("https://github.com/unslothai/unsloth README.md, 'Performance Benchmarking': \"We tested using the Alpaca "
                  "Dataset, a batch size of 2, gradient accumulation steps of 4, rank = 32, and applied QLoRA on all linear layers\"; "
                  "tested on H100 and Blackwell GPUs")
LLAMAFACTORY_SOURCE = ("https://github.com/hiyouga/LLaMA-Factory/wiki/Performance-Comparison, as quoted in unslothai/unsloth's README "
                       "('Llama-Factory 3rd party benchmarking'): TGS = tokens per GPU per second; LLaMA2-7B; NVIDIA A100 x1; batch size 4; "
                       "gradient accumulation 2; LoRA rank 8; max length 1024")
ANCHORS = [
    {"anchor": "unsloth-llama-3.1-8b-qlora", "model": "llama-3.1-8b", "method": "qlora", "lora_r": 32, "lora_alpha": 32, "batch": 2,
     "gradient_accumulation": 4, "seq_len": 2048, "steps": 5, "gradient_checkpointing": True, "source": UNSLOTH_SOURCE,
     "published": {"gpu": "H100 / Blackwell (80GB class)", "unsloth_speed_vs_hf_fa2": "2x", "unsloth_vram_reduction_vs_hf_fa2": ">70%",
                   "tokens_per_second": None, "note": "relative figures only; no absolute tokens/s is published for this recipe"}},
    {"anchor": "llamafactory-llama-2-7b-lora", "model": "llama-2-7b", "method": "lora-bf16", "lora_r": 8, "lora_alpha": 16, "batch": 4,
     "gradient_accumulation": 2, "seq_len": 1024, "steps": 8, "gradient_checkpointing": True, "source": LLAMAFACTORY_SOURCE,
     "published": {"gpu": "NVIDIA A100 x1", "tokens_per_gpu_per_second": {"HF 16-bit": 2392, "HF+FA2 16-bit": 2954, "Unsloth+FA2 16-bit": 4007,
                                                                          "HF 4-bit": 2415, "Unsloth+FA2 4-bit": 3726},
                   "gpu_memory_gb": {"HF 16-bit": 18, "HF+FA2 16-bit": 17, "Unsloth+FA2 16-bit": 16, "HF 4-bit": 9, "Unsloth+FA2 4-bit": 7}}},
]
DRY_ANCHORS = [dict(ANCHORS[0], anchor="dry-unsloth-recipe-shape", model="tiny-llama", seq_len=64, batch=2, gradient_accumulation=2, steps=4),
               dict(ANCHORS[1], anchor="dry-llamafactory-recipe-shape", model="tiny-llama", seq_len=64, batch=2, gradient_accumulation=2, steps=4)]
VARIANTS = ("builtin-default", "builtin-fast", "trl-sft", "unsloth")

# (model, method, seq, batch, gc): grouped by model (one build each), cheapest model first; the first eight are the
# issue's minimum, the rest run only while time is left.
HOLDOUT = [
    ("phi-3-mini", "qlora", 1024, 4, True), ("phi-3-mini", "lora-bf16", 4096, 1, False),
    ("qwen1.5-moe-a2.7b", "qlora", 1024, 4, True), ("qwen1.5-moe-a2.7b", "qlora", 4096, 1, False),
    ("gemma-2-9b", "qlora", 4096, 1, True), ("gemma-2-9b", "lora-bf16", 1024, 4, True),
    ("qwen2.5-14b", "qlora", 1024, 1, False), ("qwen2.5-14b", "lora-bf16", 4096, 1, True),
    ("qwen2.5-14b", "qlora", 4096, 4, True), ("gemma-2-9b", "lora-bf16", 4096, 1, False),
    ("qwen1.5-moe-a2.7b", "lora-bf16", 1024, 1, True), ("phi-3-mini", "qlora", 4096, 4, False),
]
DRY_HOLDOUT = [
    ("tiny-phi3", "qlora", 64, 2, True), ("tiny-qwen2-moe", "qlora", 64, 2, True),
    ("tiny-gemma2", "lora-bf16", 128, 1, False), ("tiny-phi3", "lora-bf16", 128, 1, False),
    ("tiny-qwen2-moe", "lora-bf16", 128, 1, False), ("tiny-gemma2", "qlora", 64, 2, True),
    ("tiny-phi3", "lora-bf16", 64, 2, True), ("tiny-gemma2", "lora-bf16", 64, 1, True),
]
HOLDOUT_STEPS = 4


def now() -> float:
    return time.time()


def read_defaults() -> Dict[str, Any]:
    # The runner's generated defaults module (stdlib only), loaded alone: the runner package stays out of this process.
    loader = importlib.util.spec_from_file_location("spec_defaults", DEFAULTS)
    assert loader is not None and loader.loader is not None
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    return copy.deepcopy(module.DEFAULTS)


def set_dotted(d: Dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    for p in parts[:-1]:
        d = d.setdefault(p, {})
    d[parts[-1]] = value


def params_of(config: Dict[str, Any]) -> int:
    """Total parameters of a decoder config, experts and head_dim included (harness.params_of is Llama-only)."""
    h, layers, vocab = config["hidden_size"], config["num_hidden_layers"], config["vocab_size"]
    heads = config["num_attention_heads"]
    hd = config.get("head_dim") or h // heads
    q, kv = heads * hd, config.get("num_key_value_heads", heads) * hd
    attn = h * q + 2 * h * kv + q * h
    if config.get("num_experts"):
        e, mi = config["num_experts"], config["moe_intermediate_size"]
        si = config.get("shared_expert_intermediate_size", 0)
        mlp = e * 3 * h * mi + 3 * h * si + h * e + h
    elif config.get("num_local_experts"):
        mlp = config["num_local_experts"] * 3 * h * config["intermediate_size"] + h * config["num_local_experts"]
    else:
        mlp = 3 * h * config["intermediate_size"]
    return int(layers * (attn + mlp + 2 * h) + vocab * h * (1 if config.get("tie_word_embeddings") else 2))


def holdout_records(dry: bool) -> List[Dict[str, Any]]:
    """The held-out cases as vram_measure.py records (the fields holdoutEstimate.ts and vramCheck.ts read)."""
    opt = read_defaults()["trainer"]["optimizer"]
    out = []
    for model, method, seq, batch, gc in (DRY_HOLDOUT if dry else HOLDOUT):
        cfg_path, config = harness.load_config(model)
        q = method == "qlora"
        out.append({"case": "%s/%s/seq%d/b%d/gc-%s" % (model, method, seq, batch, "on" if gc else "off"), "model": model, "config": cfg_path,
                    "params": params_of(config), "method": method, "seq_len": seq, "batch": batch, "gradient_checkpointing": gc,
                    "steps": HOLDOUT_STEPS, "gradient_accumulation": 1, "precision": "bf16", "optimizer": opt, "attn_implementation": "auto",
                    "lora_r": 16, "lora_alpha": 32, "lora_targets": "all-linear", "quant_type": "nf4" if q else None,
                    "double_quant": True if q else None, "gpu_count": 1, "status": "planned"})
    return out


class LogWatch(threading.Thread):
    """Notes when the runner's output.log first shows each marker line (the log has no timestamps of its own)."""

    def __init__(self, path: str, markers: Dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.path, self.markers, self.seen = path, markers, {}  # type: ignore[var-annotated]
        self.stop = threading.Event()

    def run(self) -> None:
        pos = 0
        while not self.stop.is_set() and len(self.seen) < len(self.markers):
            try:
                with open(self.path, encoding="utf-8", errors="replace") as f:
                    f.seek(pos)
                    chunk = f.read()
                    pos = f.tell()
                t = now()
                for name, text in self.markers.items():
                    if name not in self.seen and text in chunk:
                        self.seen[name] = t
            except OSError:
                pass
            self.stop.wait(0.1)


class Session:
    def __init__(self, a: argparse.Namespace) -> None:
        self.a = a
        self.dry = a.cpu_dry_run
        self.deadline = a.deadline
        self.ws = harness.Workspace(a.work, a.python, dry_run=self.dry)
        self.took: Dict[str, float] = {}
        self.built: Dict[str, float] = {}
        self.capture_done = False
        self.capture_proc: Optional[subprocess.Popen] = None  # type: ignore[type-arg]

    def left(self) -> float:
        return self.deadline - now()

    def margin(self) -> float:
        return 5.0 if self.dry else 20.0

    def guess(self, kind: str, model: str, params: int) -> float:
        build = 0.0 if model in self.built else (20.0 if self.dry else max(15.0, 6.0 * params / 1e9))
        # A first case with nothing timed yet: 87-114 s of wall time per 7-8B case on the H200 (2026-11-28 run).
        case = self.took.get(kind) or max(self.took.values(), default=0.0) or (40.0 if self.dry else 100.0)
        return build + case

    def fits(self, kind: str, model: str, params: int) -> Optional[str]:
        g = self.guess(kind, model, params)
        if g + self.margin() > self.left():
            return "not started: about %.0f s needed (model build included), %.0f s left before the deadline" % (g, self.left())
        return None

    def model(self, name: str) -> Tuple[str, float]:
        """(model dir, seconds spent building it now: 0 when the Workspace had it already)."""
        path, _, _, build_s = self.ws.model(name)
        if name not in self.built:
            self.built = {name: build_s}  # Workspace keeps one model at a time
        return path, round(build_s, 1)

    def timeout(self) -> float:
        return max(10.0, min(self.a.case_timeout, self.left() - 5.0))

    # -- the built-in trainer ------------------------------------------------------------------------------------
    def runner_spec(self, model_dir: str, data: str, c: Dict[str, Any], run_id: str, overlay: Dict[str, Any]) -> Dict[str, Any]:
        spec = harness.case_spec(model_dir, data, method=c["method"], seq_len=c["seq_len"], batch=c["batch"], gc=c["gradient_checkpointing"],
                                 steps=c["steps"], lora_r=c["lora_r"], lora_alpha=c["lora_alpha"], out_rel=os.path.join("outputs", run_id))
        # What the recipe leaves open is the runner's default (spec_defaults.py): optimizer, learning rate and schedule,
        # LoRA dropout, attention. The harness's base spec fixes them for its own tests, so they are taken out here.
        for k in ("optimizer", "learning_rate", "lr_scheduler"):
            spec["trainer"].pop(k, None)
        spec["lora"].pop("dropout", None)
        spec["model"]["attn_implementation"] = "auto"
        spec["trainer"].update(gradient_accumulation=c["gradient_accumulation"], save_strategy="no")
        for k, v in c.get("dry_overrides", {}).items():
            set_dotted(spec, k, v)
        for k, v in overlay.items():
            set_dotted(spec, k, v)
        return spec

    def run_runner(self, spec: Dict[str, Any], run_id: str) -> Dict[str, Any]:
        run_dir = os.path.join(self.ws.runs, run_id)
        watch = LogWatch(os.path.join(run_dir, "output.log"), {"loading": "[remote-finetune] loading ", "data": "[remote-finetune] data: "})
        t0 = now()
        watch.start()
        rec = harness.run_case(self.ws, spec, run_id, timeout_s=self.timeout())
        watch.stop.set()
        events, _ = harness.read_events(run_dir)
        started = next((e["ts"] for e in events if e["type"] == "started"), None)
        first = next((e["ts"] for e in events if e["type"] == "metrics" and "loss" in e), None)
        plan = next((e for e in events if e.get("code") == "speed-plan"), None)
        if plan:  # what speed: auto chose on this GPU, and why (the runner's first events)
            rec.update(speed_plan=plan.get("speed"), speed_plan_message=plan.get("message"))
        attn = None
        log = os.path.join(run_dir, "output.log")
        if os.path.exists(log):
            with open(log, encoding="utf-8", errors="replace") as f:
                for line in f:
                    if "[remote-finetune] loading " in line and "attn_implementation=" in line:
                        attn = line.split("attn_implementation=", 1)[1].split(",", 1)[0].strip()
        loading = watch.seen.get("loading")
        rec.update(attn_implementation_used=attn, process_start_ts=round(t0, 3),
                   model_load_s=round(started - loading, 2) if started and loading else None,
                   model_load_measure="from the runner's 'loading' log line to its started event (model load, quantisation, LoRA wrap, Trainer set-up)",
                   train_begin_s=round(started - t0, 2) if started else None,
                   time_to_first_step_s=round(first - t0, 2) if first else None,
                   run_dir_gpu_csv=os.path.join(run_dir, "gpu.csv"))
        rec.pop("events", None) if rec.get("status") == "ok" else None
        return self.cut(rec)

    def cut(self, rec: Dict[str, Any]) -> Dict[str, Any]:
        """A case stopped by its time limit with the deadline at hand was cut by the deadline, not a failure of its own."""
        if rec.get("status") == "failed" and rec.get("exit_code") is None and self.left() < 15:
            rec["status"] = "cut-at-deadline"
        return rec

    # -- plain TRL SFT and Unsloth ---------------------------------------------------------------------------------
    def run_sft(self, model_dir: str, data: str, c: Dict[str, Any], run_id: str, unsloth_site: Optional[str]) -> Dict[str, Any]:
        d = read_defaults()
        method = c.get("dry_overrides", {}).get("method", c["method"])
        optim = c.get("dry_overrides", {}).get("trainer.optimizer", d["trainer"]["optimizer"])
        out = os.path.join(self.ws.root, "sft", run_id)
        shutil.rmtree(out, ignore_errors=True)
        argv = [self.a.python, os.path.join(HERE, "trl_sft_baseline.py"), model_dir, os.path.join(self.ws.workdir, data), out,
                "--method", method, "--steps", str(c["steps"]), "--seq", str(c["seq_len"]), "--batch", str(c["batch"]),
                "--grad-accum", str(c["gradient_accumulation"]), "--lora-r", str(c["lora_r"]), "--lora-alpha", str(c["lora_alpha"]),
                "--lora-dropout", str(d["lora"]["dropout"]), "--lr", str(d["trainer"]["learning_rate"]), "--optim", optim]
        if c["gradient_checkpointing"]:
            argv.append("--gradient-checkpointing")
        env = self.ws.child_env()
        env.pop("PYTHONSAFEPATH", None)
        env["PYTHONPATH"] = ""
        if unsloth_site:
            argv.append("--unsloth")
            env["PYTHONPATH"] = unsloth_site
        t0 = now()
        try:
            r = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=self.timeout())
            rc: Optional[int] = r.returncode
            text = r.stdout
        except subprocess.TimeoutExpired as e:
            rc, text = None, (e.stdout.decode("utf-8", "replace") if isinstance(e.stdout, bytes) else (e.stdout or ""))
        shutil.rmtree(out, ignore_errors=True)
        line = next((l for l in reversed(text.splitlines()) if l.startswith("RFT_SFT ")), None)
        rec: Dict[str, Any] = {"exit_code": rc, "wall_s": round(now() - t0, 2), "process_start_ts": round(t0, 3)}
        if rc == 0 and line:
            rec.update(json.loads(line[len("RFT_SFT "):]), status="ok")
        else:
            rec.update(status="oom" if harness.OOM_TEXT.search(text) else "failed",
                       log_tail=text[-1500:] if rc is not None else "timed out\n" + text[-1200:])
        return self.cut(rec)

    # -- captures ----------------------------------------------------------------------------------------------------
    def start_capture(self, run_id: str) -> bool:
        if self.capture_done or not self.a.captures:
            return False
        events = os.path.join(self.ws.runs, run_id, "events.jsonl")
        self.capture_proc = subprocess.Popen(["bash", os.path.join(HERE, "capture_smi.sh"), "busy", self.a.captures, "40" if self.dry else "120", events],
                                             env=self.ws.child_env() if self.dry else None, stdout=subprocess.DEVNULL)
        self.capture_done = True
        return True

    def end_capture(self, run_id: str) -> Optional[int]:
        if self.capture_proc is None:
            return None
        try:
            rc = self.capture_proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.capture_proc.kill()
            rc = None
        self.capture_proc = None
        for f in ("gpu.csv", "gpu_procs.csv"):
            src = os.path.join(self.ws.runs, run_id, f)
            if os.path.exists(src):
                shutil.copy(src, os.path.join(self.a.captures, "qlora_paged_runner_" + f))
        return rc


def host_info(a: argparse.Namespace, info: Dict[str, Any]) -> Dict[str, Any]:
    host = harness.host_section(info, a.cpu_dry_run)
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, timeout=30)
        host["nvidia_smi_gpu"] = r.stdout.strip().splitlines()[0] if r.stdout.strip() else None
        host["driver_version"] = host["nvidia_smi_gpu"].split(",")[1].strip() if host["nvidia_smi_gpu"] else None
    except (OSError, subprocess.SubprocessError, IndexError):
        host["nvidia_smi_gpu"] = host["driver_version"] = None
    if a.unsloth_status and os.path.exists(a.unsloth_status):
        with open(a.unsloth_status, encoding="utf-8") as f:
            host["unsloth_install"] = json.load(f)
    host["fast_path_available"] = {"trl": bool(info.get("trl")), "liger_kernel": bool(info.get("liger_kernel"))}
    return host


def dry_overrides(dry: bool, method: str) -> Dict[str, Any]:
    """No CUDA on a dry run: bitsandbytes' 4-bit layers and paged optimizers need it."""
    if not dry:
        return {}
    out: Dict[str, Any] = {"trainer.optimizer": "adamw_torch"}
    if method == "qlora":
        out["method"] = "lora-bf16"
    return out


def fast_overlay(info: Dict[str, Any], dry: bool) -> Dict[str, Any]:
    env = os.environ.get("RFT_FAST_OVERLAY")
    if env:
        return json.loads(env)
    overlay: Dict[str, Any] = {}
    if info.get("trl"):
        overlay["data.packing"] = True
    if info.get("liger_kernel") and not dry:
        overlay["trainer.use_liger_kernel"] = True
    return overlay


def chosen_variants() -> Tuple[str, ...]:
    """RFT_34_VARIANTS (comma list) runs some variants only: a second, short lease finishes what the first left out."""
    want = [v.strip() for v in os.environ.get("RFT_34_VARIANTS", "").split(",") if v.strip()]
    unknown = [v for v in want if v not in VARIANTS]
    if unknown:
        raise harness.HarnessError("RFT_34_VARIANTS names unknown variants %s (known: %s)" % (", ".join(unknown), ", ".join(VARIANTS)))
    return tuple(v for v in VARIANTS if not want or v in want)


def run_anchors(s: Session, doc: Dict[str, Any], path: str, info: Dict[str, Any], unsloth_site: Optional[str], unsloth_why: str,
                anchors: List[Dict[str, Any]]) -> None:
    overlay = fast_overlay(info, s.dry)
    doc["fast_path"] = {"overlay": overlay, "what": "the built-in trainer's speed options as they exist at run time: data.packing "
                        "(TRL's padding-free best-fit packing) and trainer.use_liger_kernel where liger-kernel imports on a GPU; "
                        "RFT_FAST_OVERLAY (JSON of dotted spec keys) overrides"}
    for anchor in anchors:
        cfg_path, config = harness.load_config(anchor["model"])
        c = dict(anchor, dry_overrides=dry_overrides(s.dry, anchor["method"]))
        entry = {k: anchor[k] for k in ("anchor", "model", "method", "lora_r", "lora_alpha", "batch", "gradient_accumulation", "seq_len",
                                          "steps", "gradient_checkpointing", "source", "published")}
        entry.update(config=cfg_path, params=params_of(config), tokens_per_step=anchor["batch"] * anchor["gradient_accumulation"] * anchor["seq_len"],
                     dry_overrides=c["dry_overrides"], cases=[])
        doc["anchors"].append(entry)
        data: Optional[str] = None
        model_dir: Optional[str] = None
        for variant in chosen_variants():
            rec: Dict[str, Any] = {"variant": variant, "anchor": anchor["anchor"]}
            if variant == "unsloth" and not unsloth_site:
                rec.update(status="not-run", why=unsloth_why)
                entry["cases"].append(rec)
                harness.write_json(path, doc)
                continue
            why = s.fits(variant, anchor["model"], entry["params"])
            if why:
                rec.update(status="not-run", why=why)
                entry["cases"].append(rec)
                print("anchor %s %s: %s" % (anchor["anchor"], variant, why), flush=True)
                harness.write_json(path, doc)
                continue
            if model_dir is None:
                model_dir, entry["model_build_s"] = s.model(anchor["model"])
                data = s.ws.data(anchor["seq_len"], anchor["steps"] * anchor["batch"] * anchor["gradient_accumulation"])
            assert data is not None
            run_id = "a33-%s-%s" % (anchor["anchor"], variant)
            rec["measured_at"] = harness.now_iso()
            t0 = now()
            if variant.startswith("builtin"):
                ov = overlay if variant == "builtin-fast" else {}
                rec["spec_overlay"] = ov
                rec.update(s.run_runner(s.runner_spec(model_dir, data, c, run_id, ov), run_id))
            else:
                rec.update(s.run_sft(model_dir, data, c, run_id, unsloth_site if variant == "unsloth" else None))
            s.took[variant] = now() - t0
            entry["cases"].append(rec)
            print("anchor %s %s: %s, %s tokens/s, reserved %s MiB, first step after %s s, model load %s s" % (
                anchor["anchor"], variant, rec["status"], rec.get("tokens_per_second"), rec.get("cuda_max_memory_reserved_mib"),
                rec.get("time_to_first_step_s"), rec.get("model_load_s")), flush=True)
            if rec["status"] != "ok":
                print((rec.get("log_tail") or "")[-800:], flush=True)
            harness.write_json(path, doc)


def load_estimates(path: str, cases: List[Dict[str, Any]]) -> Dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        est = json.load(f)
    have = {e["case"]: e for e in est.get("cases", [])}
    missing = [c["case"] for c in cases if c["case"] not in have]
    if missing:
        raise harness.HarnessError("%s has no estimate for %s: make them first (bench/gpu/holdoutEstimate.ts)" % (path, ", ".join(missing)))
    return est


def summarize(errors: List[float]) -> Dict[str, Any]:
    if not errors:
        return {"cases": 0, "max_abs_error": None, "mean_abs_error": None, "median_error": None}
    return {"cases": len(errors), "max_abs_error": round(max(abs(e) for e in errors), 4),
            "mean_abs_error": round(sum(abs(e) for e in errors) / len(errors), 4), "median_error": round(statistics.median(errors), 4)}


def prepare_holdout(s: Session, doc: Dict[str, Any], path: str) -> None:
    """Every held-out case with its estimate, written to the file before the first case (anchor or held-out) runs."""
    cases = holdout_records(s.dry)
    est = load_estimates(s.a.estimates, cases)
    by_case = {e["case"]: e for e in est["cases"]}
    est_path = os.path.abspath(s.a.estimates)
    inside = est_path.startswith(harness.REPO + os.sep)
    doc["estimates"] = {"file": os.path.relpath(est_path, harness.REPO) if inside else est_path, "estimated_at": est.get("estimated_at"),
                        "estimator": est.get("estimator"), "dry_run": est.get("dry_run")}
    doc["in_sample"] = est.get("in_sample")
    for c in cases:
        e = by_case[c["case"]]
        c.update(estimate_allocator_gib=e["estimate_allocator_gib"], estimate_total_gib=e["estimate_total_gib"], estimate_parts=e.get("parts"))
    doc["cases"] = cases
    doc["estimates_recorded_at"] = harness.now_iso()
    harness.write_json(path, doc)  # the estimates are in the file before any case runs
    print("holdout: %d estimates recorded from %s (made %s) before any measurement" % (len(cases), doc["estimates"]["file"], est.get("estimated_at")), flush=True)


def run_holdout(s: Session, doc: Dict[str, Any], path: str, first: int, last: int) -> None:
    cases = doc["cases"]
    for n, c in enumerate(cases, 1):
        if not first <= n - 1 < last:
            continue
        why = s.fits("holdout", c["model"], c["params"])
        if why:
            c.update(status="not-run", why=why)
            print("holdout [%d/%d] %s: %s" % (n, len(cases), c["case"], why), flush=True)
            harness.write_json(path, doc)
            continue
        over = dry_overrides(s.dry, c["method"])
        model_dir, c["model_build_s"] = s.model(c["model"])
        data = s.ws.data(c["seq_len"], HOLDOUT_STEPS * c["batch"])
        run_id = "h33-" + c["case"].replace("/", "_")
        spec_case = dict(c, dry_overrides=over)
        spec = s.runner_spec(model_dir, data, spec_case, run_id, {})
        paged = c["method"] == "qlora" and str(spec["trainer"].get("optimizer", c["optimizer"])).startswith("paged_")
        capturing = (paged or s.dry) and s.start_capture(run_id)
        c["measured_at"] = harness.now_iso()
        c["dry_overrides"] = over
        t0 = now()
        c.update(s.run_runner(spec, run_id))
        c["status_detail"] = "measured"
        s.took["holdout"] = now() - t0
        if capturing:
            c["concurrent_capture"] = "capture_smi.sh busy ran during this case (nvidia-smi -q and queries): its step times are not clean"
            c["capture_exit"] = s.end_capture(run_id)
        reserved = c.get("cuda_max_memory_reserved_mib")
        if c["status"] == "ok" and isinstance(reserved, (int, float)) and reserved > 0:
            c["measured_gib"] = round(reserved / 1024, 4)
            c["error"] = round(c["estimate_allocator_gib"] / c["measured_gib"] - 1, 4)
        print("holdout [%d/%d] %s: %s, estimate %.2f GiB, reserved %s MiB, error %s, %s tokens/s, first step after %s s" % (
            n, len(cases), c["case"], c["status"], c["estimate_allocator_gib"], reserved, c.get("error"), c.get("tokens_per_second"),
            c.get("time_to_first_step_s")), flush=True)
        if c["status"] != "ok":
            print((c.get("log_tail") or "")[-800:], flush=True)
        doc["held_out"] = held_out(cases)
        harness.write_json(path, doc)


def held_out(cases: List[Dict[str, Any]]) -> Dict[str, Any]:
    out = summarize([c["error"] for c in cases if isinstance(c.get("error"), (int, float))])
    out["what"] = ("estimate (less the CUDA context) / torch peak reserved - 1 on shapes the estimator was never calibrated on, "
                   "estimates made before the measurement; no refit has used these cases")
    out["not_run"] = [c["case"] for c in cases if c.get("status") in ("planned", "not-run")]
    return out


def main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--work", default=os.environ.get("RFT_GPU_WORK", "/tmp/rft-gpu-33"))
    p.add_argument("--out-dir", default=None)
    p.add_argument("--deadline", type=float, default=None, help="epoch seconds: no case is started that would end after it")
    p.add_argument("--plan", choices=("all", "anchors", "holdout"), default="all")
    p.add_argument("--estimates", default=COMMITTED_ESTIMATES)
    p.add_argument("--captures", default=None, help="folder for capture_smi.sh busy during the first QLoRA paged-optimizer case")
    p.add_argument("--unsloth-status", default=None, help="JSON the shell wrote after trying to install Unsloth's wheels offline")
    p.add_argument("--holdout-from", type=int, default=int(os.environ.get("RFT_33_HOLDOUT_FROM", "0")),
                   help="with --plan holdout: start at this held-out case (0-based), the earlier ones measured by an earlier call")
    p.add_argument("--case-timeout", type=float, default=300.0)
    p.add_argument("--cpu-dry-run", action="store_true")
    p.add_argument("--print-holdout-cases", metavar="FILE", default=None)
    a = p.parse_args(argv)
    if a.print_holdout_cases:
        with open(a.print_holdout_cases, "w", encoding="utf-8") as f:
            json.dump({"dry_run": a.cpu_dry_run, "cases": holdout_records(a.cpu_dry_run)}, f, indent=1)
        return 0
    a.deadline = a.deadline or now() + 540
    dry = a.cpu_dry_run
    out_dir = a.out_dir or os.path.join(harness.REPO, ".test-output", "gpu-33-dry" if dry else "gpu-33")
    if dry and os.path.abspath(out_dir) == HERE:
        raise harness.HarnessError("a dry run is not a measurement: it never writes into bench/gpu")
    info = harness.probe(a.python)
    try:
        r = subprocess.run([a.python, "-c", "import liger_kernel, importlib.metadata as m; print(m.version('liger-kernel'))"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=120, env=dict(os.environ, PYTHONPATH=""))
        info["liger_kernel"] = r.stdout.strip() or None if r.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        info["liger_kernel"] = None
    harness.require_host(info, dry)
    gpu = "cpu-dry-run" if dry else harness.slug(info.get("gpu_name") or "gpu")
    host = host_info(a, info)
    unsloth = host.get("unsloth_install") or {}
    unsloth_site = unsloth.get("site") if unsloth.get("import_ok") else None
    unsloth_why = unsloth.get("why") or "not installable offline: no install was tried (no --unsloth-status)"
    s = Session(a)
    common = {"issue": 33, "dry_run": dry, "gpu": gpu, "date": harness.today(), "host": host, "started_at": harness.now_iso(),
              "deadline": harness.datetime.datetime.fromtimestamp(a.deadline, harness.datetime.timezone.utc).replace(microsecond=0).isoformat()}
    tpath = os.path.join(out_dir, "throughput-%s-%s.json" % (gpu, harness.today()))
    # Not vram-*.json: bench/gpu/vramCheck.ts takes those as calibration data, and these cases are held out of it.
    hpath = os.path.join(out_dir, "holdout-vram-%s-%s.json" % (gpu, harness.today()))
    tdoc = dict(common, kind="gpu-throughput", anchors=[],
                note="tokens/s = batch x accumulation x sequence / median step time from step 2 on (step 1 is warm-up); every case "
                     "ran alone on the GPU, one after another; cuda_* peaks are the training process's own torch figures")
    hdoc = dict(common, kind="gpu-vram-holdout",
                note="cuda_max_memory_reserved_mib from torch inside the training process (RFT_MEMORY_REPORT); the estimate is "
                     "compared less its CUDA-context part, as bench/gpu/vramCheck.ts does for the in-sample cases")
    anchors = DRY_ANCHORS if dry else ANCHORS
    if a.plan in ("all", "holdout"):
        prepare_holdout(s, hdoc, hpath)
    # Interleaved so a lease cut short still covers every item: the first anchor, the first held-out group (with the
    # nvidia-smi captures of a QLoRA paged-optimizer run), the second anchor, then the remaining held-out cases.
    # The dry run starts with its first held-out case, so a loaded CPU still measures one of each kind in its time.
    first = [("h", 0, 1), ("a", 0, 1)] if dry else [("a", 0, 1), ("h", 0, 2)]
    schedule = {"all": first + [("a", 1, 2), ("h", 1 if dry else 2, 10 ** 6)],
                "anchors": [("a", 0, 2)], "holdout": [("h", a.holdout_from, 10 ** 6)]}[a.plan]
    for c in hdoc.get("cases", [])[:a.holdout_from] if a.plan == "holdout" else []:
        c.update(status="not-run", why="left to an earlier call (--holdout-from %d)" % a.holdout_from)
    for part, lo, hi in schedule:
        if part == "a":
            run_anchors(s, tdoc, tpath, info, unsloth_site, unsloth_why, anchors[lo:hi])
        else:
            run_holdout(s, hdoc, hpath, lo, hi)
    if a.plan in ("all", "anchors"):
        tdoc["finished_at"] = harness.now_iso()
        for w in harness.write_json(tpath, tdoc):
            print("issue33: wrote %s" % w, flush=True)
    if a.plan in ("all", "holdout"):
        hdoc["held_out"] = held_out(hdoc["cases"])
        hdoc["finished_at"] = harness.now_iso()
        for w in harness.write_json(hpath, hdoc):
            print("issue33: wrote %s" % w, flush=True)
        print("issue33: held-out %s" % json.dumps(hdoc["held_out"]), flush=True)
    status = 0
    return status


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except harness.HarnessError as e:
        print("issue33: %s" % e, file=sys.stderr)
        sys.exit(2)
