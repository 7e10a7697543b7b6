"""Issue 13.5, the GPU smoke test: QLoRA (nf4, double quantisation), BF16 LoRA and full fine-tuning, 10 steps
each, through the real runner on a released model's shape (bench/gpu/configs, random weights), recording step
time, peak memory (torch's allocated/reserved and nvidia-smi's), tokens/s and the events into
bench/gpu/<date>-<gpu>.json (and $OUT/ when set).

Started by `bash scripts/smoke-gpu.sh` (which installs the wheels the GPU machine lacks); `--cpu-dry-run` runs the
same pipeline on a tiny shape on the CPU (the test suite does, python-runner/tests_training/test_gpu_scripts.py).
Exit status: 0 when every method trained and its record holds every figure, 1 otherwise, 3 when there is no GPU.
"""

import argparse
import os
import sys
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def parse_args(argv: List[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="smoke.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--cpu-dry-run", action="store_true", help="tiny shape on the CPU; no GPU needed")
    p.add_argument("--model", default=None, help="a config in bench/gpu/configs (default llama-3.2-1b; tiny-llama with --cpu-dry-run)")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--seq", type=int, default=None, help="sequence length (default 512; 64 with --cpu-dry-run)")
    p.add_argument("--batch", type=int, default=None, help="per-device batch (default 4; 2 with --cpu-dry-run)")
    p.add_argument("--methods", default=",".join(harness.METHODS))
    p.add_argument("--out-dir", default=None, help="default bench/gpu (.test-output/gpu-dry-run with --cpu-dry-run)")
    p.add_argument("--work", default=os.environ.get("RFT_GPU_WORK", os.path.join(os.environ.get("TMPDIR", "/tmp"), "rft-gpu")),
                   help="working folder (models, data, run dirs)")
    p.add_argument("--python", default=sys.executable, help="training interpreter (default: this one)")
    p.add_argument("--case-timeout", type=float, default=900.0)
    return p.parse_args(argv)


def main(argv: List[str]) -> int:
    a = parse_args(argv)
    dry = a.cpu_dry_run
    model = a.model or ("tiny-llama" if dry else "llama-3.2-1b")
    seq = a.seq or (64 if dry else 512)
    batch = a.batch or (2 if dry else 4)
    methods = [m for m in a.methods.split(",") if m]
    bad = [m for m in methods if m not in harness.METHODS]
    if bad:
        raise harness.HarnessError("unknown method %s (have %s)" % (", ".join(bad), ", ".join(harness.METHODS)))
    info = harness.probe(a.python)
    harness.require_host(info, dry)
    skipped = []
    if "qlora" in methods and not info.get("bitsandbytes"):
        # Without a GPU the run still quantises (bitsandbytes 0.48+ has CPU 4-bit kernels); without the library it cannot.
        methods.remove("qlora")
        skipped.append({"method": "qlora", "why": "bitsandbytes is not importable: %s" % info.get("bitsandbytes_error")})
    ws = harness.Workspace(a.work, a.python, dry_run=dry)
    model_dir, cfg_path, config, build_s = ws.model(model)
    data = ws.data(seq, a.steps * batch)
    gpu = "cpu-dry-run" if dry else harness.slug(info.get("gpu_name") or "gpu")
    out_dir = a.out_dir or (os.path.join(harness.REPO, ".test-output", "gpu-dry-run") if dry else os.path.join(harness.REPO, "bench", "gpu"))
    out_path = os.path.join(out_dir, "%s-%s.json" % (harness.today(), gpu))
    doc: Dict[str, Any] = {
        "kind": "gpu-smoke", "dry_run": dry, "date": harness.now_iso(), "host": harness.host_section(info, dry),
        "model": model, "config": cfg_path, "params": harness.params_of(config), "model_build_s": round(build_s, 1),
        "settings": {"steps": a.steps, "seq_len": seq, "batch": batch, "gradient_accumulation": 1, "gradient_checkpointing": True,
                     "precision": "bf16", "optimizer": "adamw_torch", "attn_implementation": "sdpa", "lora_r": 16, "lora_alpha": 32,
                     "lora_targets": "all-linear", "quant_type": "nf4", "double_quant": True},
        "runs": [], "skipped": skipped,
    }
    for s in skipped:
        print("smoke: %s skipped: %s" % (s["method"], s["why"]), flush=True)
    failures = 0
    for method in methods:
        spec = harness.case_spec(model_dir, data, method=method, seq_len=seq, batch=batch, gc=True, steps=a.steps,
                                 out_rel=os.path.join("outputs", "smoke-" + method))
        print("smoke: %s, %s, %d steps of batch %d × %d tokens ..." % (model, method, a.steps, batch, seq), flush=True)
        rec = dict(method=method, **harness.run_case(ws, spec, "smoke-" + method, timeout_s=a.case_timeout))
        problems = harness.check_record(rec, steps=a.steps, dry_run=dry)
        rec["problems"] = problems
        doc["runs"].append(rec)
        failures += bool(problems)
        print("smoke: %s %s: step %s s, %s tokens/s, reserved %s MiB, nvidia-smi %s MiB%s" % (
            method, rec["status"], rec["step_time_s"], rec["tokens_per_second"], rec["cuda_max_memory_reserved_mib"],
            rec["nvidia_smi_peak_mib"], "" if not problems else "; PROBLEMS: " + "; ".join(problems)), flush=True)
        if rec["status"] != "ok":
            print(rec.get("log_tail", ""), flush=True)
        harness.write_json(out_path, doc)  # after every run: a command cut off at its time limit still leaves the runs so far
    for p in harness.write_json(out_path, doc):
        print("smoke: wrote %s" % p, flush=True)
    print("smoke: %d of %d methods trained with every figure recorded%s" % (
        len(methods) - failures, len(methods), "" if not skipped else " (%s skipped)" % ", ".join(s["method"] for s in skipped)))
    return 1 if failures else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except harness.HarnessError as e:
        print("smoke: %s" % e, file=sys.stderr)
        sys.exit(3 if "no CUDA GPU" in str(e) else 2)
