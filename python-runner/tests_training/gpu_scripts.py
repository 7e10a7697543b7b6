"""What test_gpu_smoke.py and test_gpu_vram.py share: running scripts/smoke-gpu.sh, and the figures every record of a
CPU dry run must hold, checked here independently of the harness's own check (bench/gpu/harness.py check_record)."""

import json
import math
import os
import subprocess
import sys
import unittest
from typing import Any, Dict, List, Tuple

RUNNER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(RUNNER_DIR)
sys.path.insert(0, os.path.join(REPO, "bench", "gpu"))

import harness  # noqa: E402  (bench/gpu/harness.py: stdlib only)

# Every setting a VRAM record names.
SETTINGS = ("case", "model", "config", "params", "method", "seq_len", "batch", "gradient_checkpointing", "gradient_accumulation",
            "steps", "precision", "optimizer", "attn_implementation", "lora_r", "lora_alpha", "lora_targets", "quant_type",
            "double_quant", "gpu_count")


def _why_skip() -> Any:
    import transformers
    if int(transformers.__version__.split(".")[0]) < 5:
        return ("the GPU scripts pack and install the hf5-torch2.6plus lock; this venv has transformers %s, "
                "so they are checked in the hf5 run only" % transformers.__version__)
    return None


SKIP = _why_skip()


def run(argv: List[str], env_extra: Dict[str, str], timeout: float = 900) -> Tuple[int, str]:
    env = dict(os.environ)
    env.pop("OUT", None)  # never copy a test's files where a device tool collects results
    env.update(env_extra)
    r = subprocess.run(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return r.returncode, r.stdout


def positive(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


class Figures(unittest.TestCase):
    def assert_run_figures(self, rec: Dict[str, Any], steps: int, tokens_per_step: int) -> None:
        msg = json.dumps({k: v for k, v in rec.items() if k != "events"})[:1500] + "\n" + rec.get("log_tail", "")
        self.assertEqual(rec["status"], "ok", msg)
        self.assertEqual(harness.check_record(rec, steps=steps, dry_run=True), [], msg)
        for key in ("step_time_s", "tokens_per_second", "runner_tokens_per_second", "train_runtime_s", "host_peak_rss_mib", "nvidia_smi_peak_mib"):
            self.assertTrue(positive(rec[key]), "%s = %r" % (key, rec[key]))
        self.assertEqual(rec["tokens_per_step"], tokens_per_step)
        self.assertAlmostEqual(rec["tokens_per_second"], tokens_per_step / rec["step_time_s"], delta=0.01 * rec["tokens_per_second"])
        # Two timings of the same steps (ours from the event times, the runner's from num_input_tokens_seen): on a
        # shared CPU they differ by noise, not by a factor.
        self.assertLess(abs(math.log(rec["runner_tokens_per_second"] / rec["tokens_per_second"])), math.log(2.5), msg)
        self.assertEqual(len(rec["step_times_s"]), steps - 1)
        self.assertTrue(all(positive(t) for t in rec["step_times_s"]))
        self.assertGreater(rec["host_peak_rss_mib"], 100, "a process with torch loaded holds more than 100 MiB")
        self.assertIsNone(rec["cuda_max_memory_reserved_mib"])
        self.assertGreater(rec["nvidia_smi_samples"], 0)
        ev = rec["events"]
        self.assertEqual(ev["counts"]["started"], 1)
        self.assertEqual(ev["counts"]["finished"], 1)
        self.assertGreaterEqual(ev["counts"]["metrics"], steps)
        self.assertEqual(ev["last_step"], steps)
        self.assertEqual(ev["errors"], [])
        self.assertEqual(ev["finished"]["status"], "completed")
        self.assertEqual(ev["invalid_lines"], [])
        self.assertTrue(positive(ev["loss_first"]) and positive(ev["loss_last"]))
        started = ev["started"]
        if rec["method"] == "full":
            self.assertEqual(started["trainable_params"], started["total_params"])
        else:
            self.assertLess(started["trainable_params"], started["total_params"])
        self.assertGreater(rec["saved_output_mib"], 0, "the adapter/model was not saved")


def device_dry_run(script: str, seconds: int, tmp: str) -> Tuple[str, float, str]:
    """`DRY=1 bash <script> <seconds>` as a device call runs it, its results under tmp/out and its work under tmp/work:
    (output, seconds taken, the results folder)."""
    import time
    out = os.path.join(tmp, "out")
    start = time.time()
    _, text = run(["bash", script, str(seconds)], {"DRY": "1", "OUT": out, "RFT_GPU_WORK": os.path.join(tmp, "work")}, timeout=seconds + 120)
    return text, time.time() - start, out
