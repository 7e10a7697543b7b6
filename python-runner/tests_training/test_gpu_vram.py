"""Issue 14 on the CPU: `bash scripts/smoke-gpu.sh vram --cpu-dry-run` measures cases through the real runner on a
two-layer shape and the plain-Trainer baseline; every record names every setting and holds every figure, a resumed
call skips what the file holds, and the TypeScript table (scripts/gpu-vram-table.ts) reads the file. The case plan
and the chunks are checked without training.
"""

import glob
import json
import os
import shutil
import sys
import tempfile
import unittest
from typing import Any, Dict

from tests_training.gpu_scripts import REPO, SETTINGS, SKIP, Figures, harness, positive, run

import vram_measure  # noqa: E402  (bench/gpu, put on sys.path by gpu_scripts)


@unittest.skipIf(SKIP is not None, "GPU scripts: %s" % SKIP)
class VramDryRun(Figures):
    ARGS = ["--methods", "lora-bf16", "--seq", "64", "--batch", "2", "--gc", "on,off", "--steps", "5"]

    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.mkdtemp(prefix="rft-vram-dry-")
        cls.base = ["bash", "scripts/smoke-gpu.sh", "vram", "--cpu-dry-run", "--work", os.path.join(cls.tmp, "w"),
                    "--out-dir", os.path.join(cls.tmp, "out")] + cls.ARGS
        cls.rc, cls.out = run(cls.base + ["--baseline"], {"RFT_GPU_PYTHON": sys.executable})
        files = glob.glob(os.path.join(cls.tmp, "out", "vram-cpu-dry-run-*.json"))
        cls.path = files[0] if len(files) == 1 else None

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def doc(self) -> Dict[str, Any]:
        self.assertEqual(self.rc, 0, self.out[-6000:])
        self.assertIsNotNone(self.path, self.out[-3000:])
        with open(self.path, encoding="utf-8") as f:
            return json.load(f)

    def test_each_case_is_one_record_with_every_setting_named_and_every_figure(self):
        doc = self.doc()
        self.assertEqual((doc["kind"], doc["dry_run"], doc["gpu"]), ("gpu-vram", True, "cpu-dry-run"))
        self.assertEqual([r["case"] for r in doc["cases"]], ["tiny-llama/lora-bf16/seq64/b2/gc-on", "tiny-llama/lora-bf16/seq64/b2/gc-off"])
        for rec in doc["cases"]:
            with self.subTest(case=rec["case"]):
                self.assertEqual([k for k in SETTINGS if k not in rec], [])
                self.assertEqual((rec["seq_len"], rec["batch"], rec["steps"], rec["lora_r"], rec["quant_type"]), (64, 2, 5, 16, None))
                self.assertEqual(rec["gradient_checkpointing"], rec["case"].endswith("gc-on"))
                self.assert_run_figures(rec, 5, 2 * 64)

    def test_the_baseline_compares_a_plain_trainer_with_the_runner_on_the_same_case(self):
        b = self.doc()["baseline"]
        self.assertEqual((b["method"], b["seq_len"], b["batch"], b["steps"]), ("lora-bf16", 64, 2, 6))
        self.assertEqual(len(b["pairs"]), 1)
        for key in ("runner_tokens_per_second", "plain_trainer_tokens_per_second"):
            self.assertTrue(positive(b[key]), b)
        self.assertAlmostEqual(b["ratio"], b["runner_tokens_per_second"] / b["plain_trainer_tokens_per_second"], places=3)
        pair = b["pairs"][0]
        self.assertAlmostEqual(pair["plain_tokens_per_second"], 6 * 2 * 64 / pair["plain_train_runtime_s"], delta=0.5)

    def test_a_resumed_call_skips_what_the_file_holds(self):
        before = self.doc()
        rc, out = run(self.base + ["--resume"], {"RFT_GPU_PYTHON": sys.executable})
        self.assertEqual(rc, 0, out[-3000:])
        self.assertIn("vram: 0 cases to run (2 already in", out)
        with open(self.path, encoding="utf-8") as f:
            after = json.load(f)
        self.assertEqual(after["cases"], before["cases"])
        self.assertEqual(len(after["dates"]), 2)

    def test_the_typescript_table_reads_what_the_harness_wrote(self):
        self.doc()
        tsx = os.path.join(REPO, "node_modules", "tsx")
        if shutil.which("node") is None or not os.path.isdir(tsx):
            self.skipTest("node or node_modules/tsx missing (npm ci): the table script cannot run")
        rc, out = run(["node", "--import", "tsx", "scripts/gpu-vram-table.ts", "--include-dry-run", self.path], {})
        self.assertEqual(rc, 0, out)
        rows = [l for l in out.splitlines() if l.startswith("| cpu-dry-run")]
        self.assertEqual(len(rows), 2, out)
        self.assertTrue(all("not measured" in r for r in rows), out)
        rc, out = run(["node", "--import", "tsx", "scripts/gpu-vram-table.ts", self.path], {})
        self.assertEqual(rc, 2, "a dry run was read as a measurement: " + out)


class VramPlan(unittest.TestCase):
    def test_cases_go_from_the_smallest_footprint_up_and_an_oom_stands_for_the_larger_ones(self):
        cases = vram_measure.plan_cases(["m"], ["full"], [2048, 512], [4, 1], [False, True])
        self.assertEqual([c["case"] for c in cases][:4], ["m/full/seq512/b1/gc-on", "m/full/seq512/b1/gc-off", "m/full/seq512/b4/gc-on", "m/full/seq512/b4/gc-off"])
        self.assertEqual(len(cases), 8)
        oom = dict(cases[2], status="oom")  # seq 512, batch 4, checkpointing on
        implied = [c["case"] for c in cases if vram_measure.implied_oom(c, [oom])]
        self.assertEqual(implied, ["m/full/seq512/b4/gc-on", "m/full/seq512/b4/gc-off", "m/full/seq2048/b4/gc-on", "m/full/seq2048/b4/gc-off"])
        self.assertIsNone(vram_measure.implied_oom(cases[1], [dict(cases[0], status="oom", method="qlora")]), "another method's OOM implies nothing")

    def test_every_chunk_is_one_model_and_method_and_together_they_cover_the_matrix(self):
        self.assertEqual(len(vram_measure.CHUNKS), 15)
        self.assertEqual(set(vram_measure.CHUNKS), {(m, meth) for m in vram_measure.MODELS for meth in harness.METHODS})
        for m in vram_measure.MODELS:
            self.assertTrue(os.path.isfile(os.path.join(harness.CONFIGS, m + ".json")), m)


if __name__ == "__main__":
    unittest.main()
