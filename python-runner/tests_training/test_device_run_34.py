"""Issue 34's GPU throughput benchmark on the CPU (SLOW: about five minutes on two cores; it is the dry run of the GPU
command, not a unit test): `DRY=1 bash bench/gpu/device_run_34.sh 300` runs the same code path the lent GPU machine
will run (bench/gpu/throughput.py through issue 33's installs and case runner), with a tiny Llama in place of the 8B/7B
configs and the nvidia-smi STAND-IN of test/support/standins (named as such: no GPU here, its figures mean nothing).
Checked: the file has the shape the GPU run writes and the README generator reads it; each case either ran 5 warm-up
and 20 timed steps with a timed tokens/s, or is recorded as not run with its reason; the fast path is speed auto with
packing; the verdict holds the issue's three goals; the deadline is kept.
"""
import glob
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from tests_training.gpu_scripts import device_dry_run

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECONDS = 300


class DeviceRun34DryRun(unittest.TestCase):
    def test_dry_run_times_20_steps_after_5_warm_up_and_writes_the_verdict(self) -> None:
        if not (shutil.which("node") and os.path.isdir(os.path.join(REPO, "node_modules", "tsx"))):
            self.skipTest("needs node and the repo's node_modules (tsx) for the README generator")
        tmp = tempfile.mkdtemp(prefix="rft-34-")
        self.addCleanup(shutil.rmtree, tmp, True)
        text, took, out = device_dry_run("bench/gpu/device_run_34.sh", SECONDS, tmp)
        self.assertLessEqual(took, SECONDS + 30, "the deadline was not kept:\n" + text[-3000:])
        files = glob.glob(os.path.join(out, "throughput-cpu-dry-run-*.json"))
        self.assertEqual(len(files), 1, text[-3000:])
        with open(files[0], encoding="utf-8") as f:
            t = json.load(f)
        self.assertEqual((t["kind"], t["issue"], t["dry_run"], t["gpu"], t["warmup_steps"], t["timed_steps"]),
                         ("gpu-throughput", 34, True, "cpu-dry-run", 5, 20))
        self.assertIn("stand-in", t["host"]["nvidia_smi_source"])
        for key in ("torch", "transformers", "peft", "trl", "python"):
            self.assertTrue(t["host"].get(key), key)
        self.assertEqual(t["fast_path"]["overlay"], {"speed": "auto", "data.packing": True})
        self.assertEqual([a["anchor"] for a in t["anchors"]], ["dry-unsloth-recipe-shape", "dry-llamafactory-recipe-shape"][:len(t["anchors"])])
        measured = 0
        for a in t["anchors"]:
            self.assertEqual(a["steps"], 25)
            self.assertEqual([c["variant"] for c in a["cases"]], ["builtin-default", "builtin-fast", "trl-sft", "unsloth"], a)
            for c in a["cases"]:
                if c["status"] in ("not-run", "cut-at-deadline"):
                    self.assertTrue(c.get("why") or c.get("log_tail"), c)
                    continue
                self.assertEqual(c["status"], "ok", json.dumps(c)[-2000:])
                measured += 1
                self.assertEqual(c["timed_steps"], 20, (a["anchor"], c["variant"]))
                self.assertGreater(c["timed_tokens_per_second"], 0)
            self.assertEqual(a["cases"][-1]["status"], "not-run")  # Unsloth: CUDA only
            self.assertEqual(set(a["verdict"]["checks"]), {"fast_vs_unsloth_tokens", "fast_vs_unsloth_memory", "fast_vs_hf_baseline_tokens"})
            self.assertIsNone(a["verdict"]["checks"]["fast_vs_unsloth_tokens"]["pass"], "no Unsloth figure, no claim")
        self.assertGreaterEqual(measured, 1, text[-3000:])
        self.assertEqual(t["anchors"][0]["cases"][0]["status"], "ok")
        for a in t["anchors"]:
            fast = a["cases"][1]
            if fast["status"] == "ok":
                self.assertEqual(fast["spec_overlay"], {"speed": "auto", "data.packing": True})
        self.assertNotEqual(t["pass"], True, "a dry run without Unsloth cannot pass the moonshot")
        # The README generator reads what the driver wrote.
        g = subprocess.run(["node", "--import", "tsx", "scripts/gpu-anchor-table.ts", "--include-dry-run", files[0]], cwd=REPO,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        self.assertEqual(g.returncode, 0, g.stdout)
        self.assertIn("cpu-dry-run (CPU dry run)", g.stdout)


if __name__ == "__main__":
    unittest.main()
