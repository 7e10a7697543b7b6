"""Issue 33 on the CPU (SLOW: at most about 3.5 minutes on two cores; it is the dry run of the GPU command, not a unit test):
`DRY=1 bash bench/gpu/device_run_33.sh 180` runs the same code path the lent GPU machine will run, with tiny shapes
of the same architectures (Llama, Phi-3, Gemma-2, Qwen2-MoE) and the nvidia-smi STAND-IN of test/support/standins
(named as such: no GPU here, its figures mean nothing). Checked: both result files have the shape the GPU run will
write, the held-out estimates were recorded before any held-out case was measured, every anchor variant is
either measured or recorded as not run with its reason, and the deadline is kept.
"""
import datetime
import glob
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECONDS = 180


def iso(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@unittest.skipUnless(shutil.which("node") and os.path.isdir(os.path.join(REPO, "node_modules", "tsx")),
                     "needs node and the repo's node_modules (tsx) for the estimator")
class DeviceRun33DryRun(unittest.TestCase):
    def test_dry_run_writes_both_files_with_estimates_first(self) -> None:
        tmp = tempfile.mkdtemp(prefix="rft-33-")
        self.addCleanup(shutil.rmtree, tmp, True)
        env = dict(os.environ, DRY="1", OUT=os.path.join(tmp, "out"), RFT_GPU_WORK=os.path.join(tmp, "work"))
        start = time.time()
        r = subprocess.run(["bash", "bench/gpu/device_run_33.sh", str(SECONDS)], cwd=REPO, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=SECONDS + 120)
        took = time.time() - start
        self.assertLessEqual(took, SECONDS + 30, "the deadline was not kept:\n" + r.stdout[-3000:])
        out = os.path.join(tmp, "out")
        tfiles = glob.glob(os.path.join(out, "throughput-cpu-dry-run-*.json"))
        hfiles = glob.glob(os.path.join(out, "holdout-vram-cpu-dry-run-*.json"))
        self.assertEqual(len(tfiles), 1, r.stdout[-3000:])
        self.assertEqual(len(hfiles), 1, r.stdout[-3000:])
        self.assertTrue(os.path.isfile(os.path.join(out, "device-run-33.log")))
        self.assertTrue(os.path.isfile(os.path.join(out, "captures-33.tgz")))

        with open(tfiles[0], encoding="utf-8") as f:
            t = json.load(f)
        self.assertEqual((t["kind"], t["issue"], t["dry_run"], t["gpu"]), ("gpu-throughput", 33, True, "cpu-dry-run"))
        self.assertIn("stand-in", t["host"]["nvidia_smi_source"])
        for key in ("torch", "transformers", "peft", "trl", "datasets", "python"):
            self.assertTrue(t["host"].get(key), key)
        self.assertEqual([a["anchor"] for a in t["anchors"]], ["dry-unsloth-recipe-shape", "dry-llamafactory-recipe-shape"])
        measured = 0
        for a in t["anchors"]:
            self.assertIn("github.com", a["source"])
            self.assertEqual([c["variant"] for c in a["cases"]], ["builtin-default", "builtin-fast", "trl-sft", "unsloth"], a)
            for c in a["cases"]:
                if c["status"] in ("not-run", "cut-at-deadline"):
                    self.assertTrue(c.get("why") or c.get("log_tail"), c)
                    continue
                self.assertEqual(c["status"], "ok", json.dumps(c)[-2000:])
                measured += 1
                for key in ("tokens_per_second", "time_to_first_step_s", "model_load_s"):
                    self.assertGreater(c.get(key) or 0, 0, (a["anchor"], c["variant"], key))
                self.assertGreaterEqual(len(c["step_times_s"]), a["steps"] - 2)
            unsloth = a["cases"][-1]
            self.assertEqual(unsloth["status"], "not-run")
        # On two idle cores every variant fits; on a loaded machine the deadline may leave some out, but never the first.
        self.assertGreaterEqual(measured, 1, r.stdout[-3000:])
        self.assertEqual(t["anchors"][0]["cases"][0]["status"], "ok")
        fast = t["anchors"][0]["cases"][1]
        if fast["status"] == "ok":
            self.assertEqual(fast["spec_overlay"], t["fast_path"]["overlay"])

        with open(hfiles[0], encoding="utf-8") as f:
            h = json.load(f)
        self.assertEqual(h["kind"], "gpu-vram-holdout")
        self.assertGreaterEqual(len(h["cases"]), 8)
        self.assertEqual(len({c["model"] for c in h["cases"]}), 3)
        recorded = iso(h["estimates_recorded_at"])
        self.assertLessEqual(iso(h["estimates"]["estimated_at"]), recorded)
        self.assertTrue(h["estimates"]["estimator"]["sha256"])
        self.assertIsNotNone(h["in_sample"]["cases"])
        ran = [c for c in h["cases"] if c["status"] != "not-run"]
        self.assertGreaterEqual(len(ran), 1, r.stdout[-3000:])
        for c in h["cases"]:
            self.assertGreater(c["estimate_allocator_gib"], 0)
            if c["status"] in ("not-run", "cut-at-deadline"):
                self.assertIn("deadline", c.get("why", "") + c["status"])
                continue
            self.assertEqual(c["status"], "ok", json.dumps(c)[-2000:])
            self.assertGreaterEqual(iso(c["measured_at"]), recorded, "measured before the estimates were recorded")
            self.assertGreater(c.get("time_to_first_step_s") or 0, 0)
            self.assertIsNone(c.get("error"), "a CPU run has no GPU memory to hold the estimate to")
        self.assertIn("concurrent_capture", ran[0])
        self.assertEqual(h["held_out"]["cases"], 0)


if __name__ == "__main__":
    unittest.main()
