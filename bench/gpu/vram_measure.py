"""Issue 14, item 1: measured GPU memory of real training runs, to hold the VRAM estimate (src/core/gpu/estimate.ts)
to. For each model shape in bench/gpu/configs (random weights), method (QLoRA nf4 + double quantisation, BF16 LoRA,
full), sequence length, batch and gradient checkpointing on/off: a few real steps through `python -m remote_finetune
run`, recording torch.cuda.max_memory_allocated/reserved, the nvidia-smi peak, step time and tokens/s, one record per
case with every setting named, into bench/gpu/vram-<gpu>-<date>.json (and $OUT/ when set). A case that runs out of
memory is recorded as "oom"; a larger one of the same model and method is then recorded as "oom" without running
("implied_by"). Item 4: --baseline also trains one case with a plain Hugging Face Trainer script
(bench/lib/plain_trainer.py) and with the runner, A B A B, and records both tokens/s.

The whole matrix (5 models × 3 methods × 8) takes well over an hour; one command on a GPU machine may run 10 minutes.
Run it in chunks: `--chunk N` (see --list-chunks) with `--budget-s`, each call resuming the file of the calls before
(`--resume`). Started by `bash scripts/smoke-gpu.sh vram …` (`npm run bench:gpu-vram -- …`), which first installs
the wheels the GPU machine lacks. `--cpu-dry-run` runs a tiny shape on the CPU (the test suite does).
"""

import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

MODELS = ("llama-3.2-1b", "qwen2.5-3b", "llama-2-7b", "mistral-7b", "llama-3-8b")
# One chunk = one model and one method (8 cases): about 3 minutes for 1-3B, 5-8 for 7-8B on an H100, model build included.
CHUNKS = [(m, meth) for m in MODELS for meth in harness.METHODS]
LORA_R, LORA_ALPHA = 16, 32
BASELINE = {"model": "llama-3.2-1b", "method": "lora-bf16", "seq_len": 512, "batch": 4, "gradient_checkpointing": True, "steps": 20}
DRY_BASELINE = {"model": "tiny-llama", "method": "lora-bf16", "seq_len": 64, "batch": 2, "gradient_checkpointing": True, "steps": 6}


def csv(value: str) -> List[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def parse_args(argv: List[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="vram_measure.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(MODELS), help="configs in bench/gpu/configs")
    p.add_argument("--methods", default=",".join(harness.METHODS))
    p.add_argument("--seq", default="512,2048", help="sequence lengths")
    p.add_argument("--batch", default="1,4", help="per-device batch sizes")
    p.add_argument("--gc", default="on,off", help="gradient checkpointing: on, off or both")
    p.add_argument("--steps", type=int, default=6, help="training steps per case (5-10: step 1 is warm-up)")
    p.add_argument("--cases", default=None,
                   help="exactly these cases, in this order (keys as recorded: model/method/seqN/bN/gc-on|off, comma-separated); "
                        "overrides --models/--methods/--seq/--batch/--gc: a short lease measures the cases that matter most first")
    p.add_argument("--lane", default=None,
                   help="a label recorded with every case when several of these processes share the GPU at once (their "
                        "cuda_* peaks are each process's own; step times and the nvidia-smi peak then include the others)")
    p.add_argument("--chunk", type=int, default=None, help="run chunk N of --list-chunks (overrides --models/--methods)")
    p.add_argument("--list-chunks", action="store_true")
    p.add_argument("--budget-s", type=float, default=0, help="start no case that would end after this many seconds (0: no limit)")
    p.add_argument("--resume", nargs="?", const="auto", default=None,
                   help="add to this file (default: the newest vram-<this gpu>-*.json in --out-dir), skipping cases it has")
    p.add_argument("--retry-failed", action="store_true", help="with --resume: run again the cases recorded as failed")
    p.add_argument("--baseline", action="store_true", help="also the plain-Trainer vs runner tokens/s comparison (item 4)")
    p.add_argument("--baseline-only", action="store_true")
    p.add_argument("--baseline-pairs", type=int, default=None, help="A B pairs (default 2; 1 with --cpu-dry-run)")
    p.add_argument("--cpu-dry-run", action="store_true", help="a tiny shape on the CPU; no GPU needed")
    p.add_argument("--out-dir", default=None, help="default bench/gpu (.test-output/gpu-dry-run with --cpu-dry-run)")
    p.add_argument("--work", default=os.environ.get("RFT_GPU_WORK", os.path.join(os.environ.get("TMPDIR", "/tmp"), "rft-gpu")))
    p.add_argument("--python", default=sys.executable, help="training interpreter (default: this one)")
    p.add_argument("--case-timeout", type=float, default=900.0)
    p.add_argument("--first-case-s", type=float, default=None,
                   help="what --budget-s assumes a model's first case takes, its build included, before any case has run "
                        "(default 240; 120 with --cpu-dry-run). An H200 built Llama-3-8B in 47 s and trained a case in 35 s")
    return p.parse_args(argv)


def case_key(model: str, method: str, seq: int, batch: int, gc: bool) -> str:
    return "%s/%s/seq%d/b%d/gc-%s" % (model, method, seq, batch, "on" if gc else "off")


def plan_cases(models: List[str], methods: List[str], seqs: List[int], batches: List[int], gcs: List[bool]) -> List[Dict[str, Any]]:
    """Model outermost (one build per model), and within a method from the smallest footprint up, so an
    out-of-memory case can stand for the larger ones after it."""
    out = []
    for model in models:
        for method in methods:
            for seq in sorted(seqs):
                for batch in sorted(batches):
                    for gc in sorted(gcs, reverse=True):
                        out.append({"case": case_key(model, method, seq, batch, gc), "model": model, "method": method,
                                    "seq_len": seq, "batch": batch, "gradient_checkpointing": gc})
    return out


CASE_KEY = re.compile(r"^([a-z0-9.\-]+)/(qlora|lora-bf16|full)/seq(\d+)/b(\d+)/gc-(on|off)$")


def parse_cases(text: str) -> List[Dict[str, Any]]:
    """--cases: each key back into the case it names, in the order given."""
    out = []
    for key in csv(text):
        m = CASE_KEY.match(key)
        if not m:
            raise harness.HarnessError("--cases: %r is not model/method/seqN/bN/gc-on|off" % key)
        model, method, seq, batch, gc = m.group(1), m.group(2), int(m.group(3)), int(m.group(4)), m.group(5) == "on"
        harness.load_config(model)  # a clear error now for a model with no config, not after the first case
        out.append({"case": case_key(model, method, seq, batch, gc), "model": model, "method": method, "seq_len": seq, "batch": batch,
                    "gradient_checkpointing": gc})
    if len({c["case"] for c in out}) != len(out):
        raise harness.HarnessError("--cases names a case twice")
    return out


def implied_oom(case: Dict[str, Any], records: List[Dict[str, Any]]) -> Optional[str]:
    """A measured OOM of the same model and method at no more tokens, no larger batch, and checkpointing on or equal."""
    for r in records:
        if (r.get("status") == "oom" and not r.get("implied_by") and r["model"] == case["model"] and r["method"] == case["method"]
                and r["seq_len"] <= case["seq_len"] and r["batch"] <= case["batch"]
                and (r["gradient_checkpointing"] or not case["gradient_checkpointing"])):
            return r["case"]
    return None


def settings(case: Dict[str, Any], steps: int, cfg_path: str, params: int) -> Dict[str, Any]:
    q = case["method"] == "qlora"
    return dict(case, config=cfg_path, params=params, steps=steps, gradient_accumulation=1, precision="bf16", optimizer="adamw_torch",
                attn_implementation="sdpa", lora_r=None if case["method"] == "full" else LORA_R,
                lora_alpha=None if case["method"] == "full" else LORA_ALPHA, lora_targets=None if case["method"] == "full" else "all-linear",
                quant_type="nf4" if q else None, double_quant=True if q else None, gpu_count=1)


def vram_spec(model_dir: str, data: str, case: Dict[str, Any], steps: int, run_id: str) -> Dict[str, Any]:
    spec = harness.case_spec(model_dir, data, method=case["method"], seq_len=case["seq_len"], batch=case["batch"],
                             gc=case["gradient_checkpointing"], steps=steps, lora_r=LORA_R, lora_alpha=LORA_ALPHA,
                             out_rel=os.path.join("outputs", run_id))
    # No checkpoint: transformers 5 saves one when training ends, and for a full 8B fine-tune that is 16 GB of weights
    # and 32 GB of optimizer state written to disk between two measurements. The final adapter/model is still saved.
    spec["trainer"]["save_strategy"] = "no"
    return spec


def out_file(a: argparse.Namespace, out_dir: str, gpu: str) -> Tuple[str, Optional[Dict[str, Any]]]:
    if a.resume:
        path = a.resume
        if a.resume == "auto":
            found = sorted(glob.glob(os.path.join(out_dir, "vram-%s-*.json" % gpu)))
            path = found[-1] if found else ""
        if path:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            if doc.get("gpu") != gpu or bool(doc.get("dry_run")) != bool(a.cpu_dry_run):
                raise harness.HarnessError("%s holds %s%s measurements, not this machine's (%s)" % (
                    path, doc.get("gpu"), " dry-run" if doc.get("dry_run") else "", gpu))
            return path, doc
    return os.path.join(out_dir, "vram-%s-%s.json" % (gpu, harness.today())), None


def run_baseline(ws: harness.Workspace, b: Dict[str, Any], pairs: int, a: argparse.Namespace) -> Dict[str, Any]:
    """Item 4: the runner against a plain Trainer script on the same model, data and arguments, A B A B; tokens/s from
    each side's own train_runtime (HF Trainer's measure of the training loop, model loading excluded)."""
    model_dir, cfg_path, config, _ = ws.model(b["model"])
    data = ws.data(b["seq_len"], b["steps"] * b["batch"])
    tokens = b["steps"] * b["batch"] * b["seq_len"]
    rows = []
    for i in range(pairs):
        run_id = "baseline-runner-%d" % i
        spec = vram_spec(model_dir, data, b, b["steps"], run_id)
        rec = harness.run_case(ws, spec, run_id, timeout_s=a.case_timeout)
        if rec["status"] != "ok" or not rec.get("train_runtime_s"):
            raise harness.HarnessError("baseline: the runner did not train (%s): %s" % (rec["status"], rec.get("log_tail", "")[-800:]))
        out = os.path.join(ws.root, "plain-%d" % i)
        argv = [a.python, os.path.join(harness.REPO, "bench", "lib", "plain_trainer.py"), model_dir, os.path.join(ws.workdir, data), out,
                str(b["steps"]), "--max-length", str(b["seq_len"]), "--batch", str(b["batch"]), "--lora-r", str(LORA_R),
                "--lora-alpha", str(LORA_ALPHA), "--lr", str(spec["trainer"]["learning_rate"]), "--save-strategy", "no"]
        if b["gradient_checkpointing"]:
            argv.append("--gradient-checkpointing")
        r = subprocess.run(argv, env=ws.child_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=a.case_timeout)
        line = next((l for l in r.stdout.splitlines() if l.startswith("RFT_PLAIN ")), None)
        if r.returncode != 0 or line is None:
            raise harness.HarnessError("baseline: the plain Trainer script failed (exit %d): %s" % (r.returncode, r.stdout[-800:]))
        plain = json.loads(line[len("RFT_PLAIN "):])
        rows.append({"runner_train_runtime_s": rec["train_runtime_s"], "plain_train_runtime_s": plain["train_runtime"],
                     "runner_tokens_per_second": round(tokens / rec["train_runtime_s"], 1),
                     "plain_tokens_per_second": round(tokens / plain["train_runtime"], 1),
                     "runner_cuda_max_memory_reserved_mib": rec["cuda_max_memory_reserved_mib"],
                     "plain_cuda_max_memory_reserved_mib": plain.get("cuda_max_memory_reserved_mib")})
        print("baseline pair %d/%d: runner %.1f tokens/s, plain Trainer %.1f tokens/s" % (
            i + 1, pairs, rows[-1]["runner_tokens_per_second"], rows[-1]["plain_tokens_per_second"]), flush=True)
    ours = statistics.median(r["runner_tokens_per_second"] for r in rows)
    ref = statistics.median(r["plain_tokens_per_second"] for r in rows)
    return dict(settings(dict(b, case=case_key(b["model"], b["method"], b["seq_len"], b["batch"], b["gradient_checkpointing"])),
                         b["steps"], cfg_path, harness.params_of(config)),
                pairs=rows, runner_tokens_per_second=ours, plain_trainer_tokens_per_second=ref, ratio=round(ours / ref, 4),
                measure="tokens per second from each side's train_runtime (HF Trainer's own timing of the training loop), median of the pairs")


def main(argv: List[str]) -> int:
    a = parse_args(argv)
    if a.list_chunks:
        for i, (m, meth) in enumerate(CHUNKS, 1):
            print("--chunk %d: --models %s --methods %s" % (i, m, meth))
        return 0
    dry = a.cpu_dry_run
    out_dir = a.out_dir or (os.path.join(harness.REPO, ".test-output", "gpu-dry-run") if dry else os.path.join(harness.REPO, "bench", "gpu"))
    if dry and os.path.abspath(out_dir) == os.path.join(harness.REPO, "bench", "gpu"):
        raise harness.HarnessError("a dry run is not a measurement: it never writes into bench/gpu (the VRAM test reads that folder)")
    models, methods = csv(a.models), csv(a.methods)
    if a.chunk is not None:
        if not 1 <= a.chunk <= len(CHUNKS):
            raise harness.HarnessError("--chunk is 1..%d (--list-chunks)" % len(CHUNKS))
        models, methods = [CHUNKS[a.chunk - 1][0]], [CHUNKS[a.chunk - 1][1]]
    if dry and a.models == ",".join(MODELS) and a.chunk is None:
        models = ["tiny-llama"]
    for m in methods:
        if m not in harness.METHODS:
            raise harness.HarnessError("unknown method %s (have %s)" % (m, ", ".join(harness.METHODS)))
    gcs = [{"on": True, "off": False}[g] for g in csv(a.gc)]
    cases = plan_cases(models, methods, [int(s) for s in csv(a.seq)], [int(b) for b in csv(a.batch)], gcs)
    if a.cases:
        cases = parse_cases(a.cases)
        methods = sorted({c["method"] for c in cases})
    info = harness.probe(a.python)
    harness.require_host(info, dry)
    gpu = "cpu-dry-run" if dry else harness.slug(info.get("gpu_name") or "gpu")
    path, doc = out_file(a, out_dir, gpu)
    if doc is None:
        doc = {"kind": "gpu-vram", "dry_run": dry, "gpu": gpu, "host": harness.host_section(info, dry), "dates": [],
               "note": "cuda_* from torch.cuda.max_memory_* inside the training process (RFT_MEMORY_REPORT); nvidia_smi_peak_mib is the "
                       "whole GPU's memory.used peak from the runner's gpu.csv (CUDA context and other processes included)",
               "cases": [], "baseline": None}
    doc["dates"].append(harness.now_iso())
    done = {r["case"] for r in doc["cases"] if r["status"] in ("ok", "oom") or not a.retry_failed}
    doc["cases"] = [r for r in doc["cases"] if r["case"] in done]
    todo = [c for c in cases if c["case"] not in done] if not a.baseline_only else []
    if "qlora" in methods and not info.get("bitsandbytes"):
        if not a.cases:
            raise harness.HarnessError("QLoRA cases need bitsandbytes, which does not import: %s" % info.get("bitsandbytes_error"))
        # A list chosen for a short lease: measure the rest rather than nothing.
        print("vram: QLoRA cases left out: bitsandbytes does not import (%s)" % info.get("bitsandbytes_error"), flush=True)
        todo = [c for c in todo if c["method"] != "qlora"]
    ws = harness.Workspace(a.work, a.python, dry_run=dry)
    start = time.time()
    took: Dict[str, float] = {}
    left = 0
    print("vram: %d cases to run (%d already in %s)" % (len(todo), len(cases) - len(todo), os.path.relpath(path, harness.REPO)), flush=True)
    for n, case in enumerate(todo, 1):
        implied = implied_oom(case, doc["cases"])
        cfg_path, config = harness.load_config(case["model"])
        rec = settings(case, a.steps, cfg_path, harness.params_of(config))
        if a.lane:
            rec["lane"] = a.lane
        if implied:
            rec.update(status="oom", implied_by=implied)
            print("vram [%d/%d] %s: oom (implied by %s)" % (n, len(todo), case["case"], implied), flush=True)
        else:
            # The first case of a model also builds it: twice the slowest case so far, or a flat guess before any.
            first = a.first_case_s if a.first_case_s is not None else (120.0 if dry else 240.0)
            guess = took.get(case["model"], 2 * max(took.values()) if took else first)
            if a.budget_s and time.time() - start + guess > a.budget_s:
                left = len(todo) - n + 1
                print("vram: budget of %d s reached; %d cases left: run the same command again with --resume" % (a.budget_s, left), flush=True)
                break
            t0 = time.time()
            model_dir, _, _, build_s = ws.model(case["model"])
            data = ws.data(case["seq_len"], a.steps * case["batch"])
            run_id = case["case"].replace("/", "_")
            measured = harness.run_case(ws, vram_spec(model_dir, data, case, a.steps, run_id), run_id, timeout_s=a.case_timeout)
            rec.update(measured, model_build_s=round(build_s, 1))
            rec["problems"] = harness.check_record(rec, steps=a.steps, dry_run=dry) if rec["status"] == "ok" else []
            took[case["model"]] = time.time() - t0 - build_s + 5
            print("vram [%d/%d] %s: %s, reserved %s MiB, allocated %s MiB, nvidia-smi %s MiB, step %s s, %s tokens/s%s" % (
                n, len(todo), case["case"], rec["status"], rec["cuda_max_memory_reserved_mib"], rec["cuda_max_memory_allocated_mib"],
                rec["nvidia_smi_peak_mib"], rec["step_time_s"], rec["tokens_per_second"],
                "" if not rec["problems"] else "; PROBLEMS: " + "; ".join(rec["problems"])), flush=True)
            if rec["status"] == "failed":
                print(rec.get("log_tail", "")[-1200:], flush=True)
        doc["cases"].append(rec)
        harness.write_json(path, doc)  # after every case: a command cut off at its time limit keeps what it measured
    if (a.baseline or a.baseline_only) and not left:
        b = DRY_BASELINE if dry else BASELINE
        doc["baseline"] = run_baseline(ws, b, a.baseline_pairs or (1 if dry else 2), a)
        print("baseline: runner %.1f tokens/s, plain Trainer %.1f tokens/s, ratio %.3f" % (
            doc["baseline"]["runner_tokens_per_second"], doc["baseline"]["plain_trainer_tokens_per_second"], doc["baseline"]["ratio"]), flush=True)
    for p in harness.write_json(path, doc):
        print("vram: wrote %s" % p, flush=True)
    bad = [r["case"] for r in doc["cases"] if r["status"] == "failed" or r.get("problems")]
    counts = {s: sum(1 for r in doc["cases"] if r["status"] == s) for s in ("ok", "oom", "failed")}
    print("vram: %(ok)d measured, %(oom)d out of memory, %(failed)d failed" % counts + ("; %d not run (budget)" % left if left else ""))
    if bad:
        print("vram: failed or incomplete: %s" % ", ".join(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except harness.HarnessError as e:
        print("vram: %s" % e, file=sys.stderr)
        sys.exit(3 if "no CUDA GPU" in str(e) else 2)
