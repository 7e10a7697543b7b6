"""Issue 34's GPU throughput benchmark: the two published recipes, each case alone on the GPU, one after another,
5 warm-up steps and then 20 timed steps per case. Started by bench/gpu/device_run_34.sh (one command; DRY=1 runs the
same code path on the CPU with tiny shapes of the same architecture).

Recipes (random weights from bench/gpu/configs, no hub): Unsloth's (Llama 3.1 8B, QLoRA r 32 on all linear layers,
batch 2, accumulation 4, sequence 2048) and LLaMA-Factory's (LLaMA2-7B, LoRA r 8, batch 4, accumulation 2, length
1024). Variants: (a) the built-in trainer with its defaults (speed: auto), (b) the built-in fast path (speed: auto
plus data.packing; Liger and fused AdamW come from speed: auto where they can run, FlashAttention-2 from attention
auto where it imports), (c) plain TRL SFT with sdpa (bench/gpu/trl_sft_baseline.py, the HF baseline), (d) Unsloth
where its packed wheels install offline. The case runner and the variants are issue 33's (issue33.py); this driver
sets the step counts, the fast path, the timed window and the verdict.

Per case: tokens/s over the timed steps (tokens per step x timed steps / their summed step times), torch's peak
reserved memory; per anchor the goals of the issue: fast >= 1.0x Unsloth's tokens/s at <= 1.1x its peak memory
(the moonshot), fast >= 1.5x the plain HF baseline. Writes throughput-<gpu>-<date>.json into --out-dir (and $OUT).
"""

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import issue33  # noqa: E402

WARMUP_STEPS = 5
TIMED_STEPS = 20
FAST_OVERLAY = {"speed": "auto", "data.packing": True}
DEFAULT_OVERLAY = {"speed": "auto"}
GOALS = {"fast_vs_unsloth_tokens": ">= 1.0", "fast_vs_unsloth_memory": "<= 1.1", "fast_vs_hf_baseline_tokens": ">= 1.5"}


def anchors(dry: bool, first: int = 0) -> List[Dict[str, Any]]:
    steps = WARMUP_STEPS + TIMED_STEPS
    return [dict(a, steps=steps) for a in (issue33.DRY_ANCHORS if dry else issue33.ANCHORS)[first:]]


def timed(case: Dict[str, Any]) -> Dict[str, Any]:
    """Tokens/s over the timed steps. step_times_s are the intervals from step 2 on (issue33's runners), so the first
    WARMUP_STEPS - 1 intervals still belong to the warm-up."""
    times = list(case.get("step_times_s") or [])[WARMUP_STEPS - 1:]
    per_step = case.get("tokens_per_step")
    if case.get("status") != "ok" or not per_step or len(times) < 1:
        return {"timed_steps": len(times), "timed_tokens_per_second": None}
    return {"timed_steps": len(times), "timed_tokens_per_second": round(per_step * len(times) / sum(times), 1)}


def meets(value: Optional[float], goal: str) -> Optional[bool]:
    if value is None:
        return None
    op, bound = goal.split()
    return value >= float(bound) if op == ">=" else value <= float(bound)


def verdict(cases: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The issue's goals for one recipe: None where a side was not measured (then `pass` is not claimed)."""
    by = {c["variant"]: c for c in cases}

    def tps(v: str) -> Optional[float]:
        return (by.get(v) or {}).get("timed_tokens_per_second")

    def mem(v: str) -> Optional[float]:
        c = by.get(v) or {}
        return c.get("cuda_max_memory_reserved_mib") if c.get("status") == "ok" else None

    def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
        return round(a / b, 4) if a and b else None

    values = {"fast_vs_unsloth_tokens": ratio(tps("builtin-fast"), tps("unsloth")),
              "fast_vs_unsloth_memory": ratio(mem("builtin-fast"), mem("unsloth")),
              "fast_vs_hf_baseline_tokens": ratio(tps("builtin-fast"), tps("trl-sft")),
              "default_vs_hf_baseline_tokens": ratio(tps("builtin-default"), tps("trl-sft"))}
    checks = {k: {"value": values[k], "goal": g, "pass": meets(values[k], g)} for k, g in GOALS.items()}
    results = [c["pass"] for c in checks.values()]
    return {"values": values, "checks": checks,
            "pass": False if False in results else (True if all(r is True for r in results) else None),
            "note": "pass is null where a side was not measured (Unsloth not installable offline, a case cut by the deadline)"}


def main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--work", default=os.environ.get("RFT_GPU_WORK", "/tmp/rft-gpu-34"))
    p.add_argument("--out-dir", default=None)
    p.add_argument("--deadline", type=float, default=None, help="epoch seconds: no case is started that would end after it")
    p.add_argument("--unsloth-status", default=None, help="JSON the shell wrote after trying to install Unsloth's wheels offline")
    p.add_argument("--case-timeout", type=float, default=300.0)
    p.add_argument("--cpu-dry-run", action="store_true")
    a, _ignored = p.parse_known_args(argv)  # device_run_33.sh's other arguments (plan, estimates, captures) are issue 33's
    a.deadline = a.deadline or issue33.now() + 460
    a.captures = None
    dry = a.cpu_dry_run
    out_dir = a.out_dir or os.path.join(harness.REPO, ".test-output", "gpu-34-dry" if dry else "gpu-34")
    if dry and os.path.abspath(out_dir) == issue33.HERE:
        raise harness.HarnessError("a dry run is not a measurement: it never writes into bench/gpu")
    os.environ["RFT_FAST_OVERLAY"] = json.dumps(FAST_OVERLAY)  # issue33.fast_overlay takes it as the fast path
    info = harness.probe(a.python)
    harness.require_host(info, dry)
    gpu = "cpu-dry-run" if dry else harness.slug(info.get("gpu_name") or "gpu")
    host = issue33.host_info(a, info)
    unsloth = host.get("unsloth_install") or {}
    unsloth_site = unsloth.get("site") if unsloth.get("import_ok") else None
    unsloth_why = unsloth.get("why") or "not installable offline: no install was tried (no --unsloth-status)"
    s = issue33.Session(a)
    path = os.path.join(out_dir, "throughput-%s-%s.json" % (gpu, harness.today()))
    doc: Dict[str, Any] = {
        "kind": "gpu-throughput", "issue": 34, "dry_run": dry, "gpu": gpu, "date": harness.today(), "host": host,
        "started_at": harness.now_iso(), "warmup_steps": WARMUP_STEPS, "timed_steps": TIMED_STEPS, "goals": GOALS, "anchors": [],
        "note": "each case ran alone on the GPU, one after another; timed_tokens_per_second = batch x accumulation x sequence x "
                "timed steps / their summed step times, after %d warm-up steps; cuda_max_memory_reserved_mib is torch's peak in "
                "the training process" % WARMUP_STEPS}
    # builtin-default is the runner as a user gets it (speed: auto); run_anchors gives it no overlay, which is the same.
    doc["default_overlay"] = DEFAULT_OVERLAY
    first = int(os.environ.get("RFT_34_ANCHOR_FROM", "0"))  # a second call finishes a recipe the first call's deadline left out
    issue33.run_anchors(s, doc, path, info, unsloth_site, unsloth_why, anchors(dry, first))
    for entry in doc["anchors"]:
        for case in entry["cases"]:
            case.update(timed(case))
        entry["verdict"] = verdict(entry["cases"])
    results = [e["verdict"]["pass"] for e in doc["anchors"]]
    doc["pass"] = False if False in results else (True if results and all(r is True for r in results) else None)
    doc["finished_at"] = harness.now_iso()
    for w in harness.write_json(path, doc):
        print("throughput: wrote %s" % w, flush=True)
    for e in doc["anchors"]:
        print("throughput %s: %s" % (e["anchor"], json.dumps(e["verdict"]["values"])), flush=True)
    print("throughput: pass %s" % doc["pass"], flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except harness.HarnessError as e:
        print("throughput: %s" % e, file=sys.stderr)
        sys.exit(2)
